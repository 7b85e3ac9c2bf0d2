#!/usr/bin/env bash
# Render a kbench CSV as plots, with awk and gnuplot:
#
#   bash plots/render.sh [--optional] [--out-dir DIR] [FILE.csv]
#   bash plots/render.sh [--optional] [--out-dir DIR] --overlay BASE.csv NEW.csv
#
# Without FILE.csv it draws every GPU kind's runs under results/ (a folder
# each): those with the columns of its newest run, merged oldest first by the `# date:` in
# their metadata so that each row (op, variant, dtype, shape) comes from the
# newest run that measured it (tools/merge_csv.sh --newest); that is how the
# committed plots are made.  The plots go to plots/<gpu>/, named after the
# CSV's `# gpu:` line, each as PNG and SVG:
#   speed-OP-DTYPE-FAMILY  GFLOP/s (GB/s when the family's largest row is
#                   memory-bound, by its bound column) for one shape family
#                   (the CSV's family column): a line per variant over the
#                   family's axis field, each ending in its name and speedup
#                   over the baseline, or points by shape for a family
#                   without one (tile-hostile shapes); every ceiling of the
#                   rows' maths drawn.  layout.awk places the labels.  A CSV
#                   without the family column gives speed-OP-DTYPE, all
#                   shapes over problem size
#   speedup-OP-DTYPE  each variant's speedup over that dtype's baseline,
#                   from the rows of that dtype only
#   roofline        every (op, variant) under the GPU's ceilings
#   stages          the model's stages (`kbench model stages` rows): prefill
#                   and decode time per stage
# With --overlay it draws two runs on one speed plot per (op, dtype) found in
# both, to plots/<gpu of NEW>/ only:
#   overlay-OP-DTYPE[-FAMILY]  each variant's speed in NEW (solid) and BASE
#                     (dashed), one colour per variant
# Only timed PASS rows are plotted.  Each plot is written under a temporary
# name and renamed, so an interrupted run leaves no half-written file.  It
# replaces the plots it draws and removes none.
#
# Exit codes: 0 plots written (or nothing to plot); 1 gnuplot failed;
# 2 bad input; 3 gnuplot is not installed.  With --optional a missing
# gnuplot exits 0 instead, so a benchmark run does not fail over its plots.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
source "$root/tools/lib.sh"

die() { # die CODE MESSAGE
    echo "kbench: $2" >&2
    exit "$1"
}

optional=0 overlay=0 csvs=() out_override=
while (($#)); do
    case $1 in
    --optional) optional=1 ;;
    --overlay) overlay=1 ;;
    --out-dir)
        [[ $# -ge 2 ]] || die 2 "render.sh: --out-dir needs a folder"
        out_override=$2
        shift
        ;;
    -*) die 2 "render.sh: unknown option '$1'" ;;
    *) csvs+=("$1") ;;
    esac
    shift
done
if ((overlay)); then
    [[ ${#csvs[@]} -eq 2 ]] || die 2 "render.sh --overlay takes two CSV files: BASE.csv NEW.csv"
else
    [[ ${#csvs[@]} -le 1 ]] || die 2 "render.sh takes one CSV file"
fi
if [[ ${#csvs[@]} -eq 0 ]]; then
    runs=$(bash "$root/tools/list_runs.sh" "$root/results" 2>/dev/null)
    [[ -n $runs ]] || die 2 "no CSV under $root/results; pass one: bash plots/render.sh FILE.csv"
fi
for csv in "${csvs[@]}"; do
    [[ -f $csv && -r $csv ]] || die 2 "cannot read $csv"
done

if ! command -v gnuplot >/dev/null; then
    echo "kbench: no plots: gnuplot is missing (apt-get install gnuplot-nox); then run: bash plots/render.sh$( ((overlay)) && echo " --overlay") ${csvs[*]}"
    exit $((optional ? 0 : 3))
fi

data=$(mktemp -d)
outdir=
trap 'rm -rf "$data"; [[ -n $outdir ]] && rm -f "$outdir"/.tmp.$$.*' EXIT

# Each GPU's runs (see the top), merged into one CSV and drawn by a call of
# this script; exits with the first failure's code.
if [[ ${#csvs[@]} -eq 0 ]]; then
    # By the run's folder, results/<gpu>/, one kind of machine each: one
    # H200 and two H200s are named alike in their `# gpu:` lines.
    declare -A columns parts
    while IFS=$'\t' read -r _ _ csv; do # newest first
        kind=" $(dirname "$csv")"
        header=$(grep -m 1 -v '^#' "$csv")
        [[ -n ${columns[$kind]+set} ]] || columns[$kind]=$header
        [[ $header != "${columns[$kind]}" ]] || parts[$kind]=$csv$'\n'${parts[$kind]:-}
    done < <(tac <<<"$runs")
    n=0 rc=0
    for gpu in "${!parts[@]}"; do
        mapfile -t run <<<"${parts[$gpu]%$'\n'}"
        merged=$data/$((++n)).csv
        bash "$root/tools/merge_csv.sh" --newest "$merged" "${run[@]}" || die 2 "cannot merge the runs in$gpu"
        # The titles name the newest run's file (the merged one is a temporary).
        newest=$(for f in "${run[@]}"; do
            printf '%s\t%s\n' "$(sed -n 's/^# date: //p' "$f" | head -n 1)" "$(basename "$f")"
        done | sort | tail -n 1 | cut -f 2)
        ((${#run[@]} > 1)) && newest+=" and $((${#run[@]} - 1)) older"
        KB_PLOT_SOURCE=$newest bash "$0" ${out_override:+--out-dir "$out_override"} "$merged"
        code=$?
        ((rc)) || rc=$code
    done
    exit $rc
fi

# split_run DIR CSV [BY_SIZE]: split.awk's files for one CSV into DIR (see
# split.awk), each speed line sorted by its x.
split_run() {
    local f
    mkdir -p "$1" && : >"$1/meta" && : >"$1/groups" || die 2 "cannot write to $1"
    awk -v out="$1" -v src="$2" -v by_size="${3:-0}" -f "$here/split.awk" "$2" || exit 2
    for f in "$1"/speed.*.dat; do
        [[ ! -e $f ]] || sort -g -k1,1 -o "$f" "$f"
    done
}

meta() { # meta DIR KEY: the value of a `# KEY: value` line, or nothing
    awk -F'\t' -v k="$2" '$1 == k { print $2; exit }' "$1/meta"
}

# A string literal for gnuplot -e: single-quoted, quotes doubled.
gp_str() {
    printf "'%s'" "${1//\'/\'\'}"
}

# gp_lines LINE...: a gnuplot string expression of the lines joined by newlines.
gp_lines() {
    local line expr=
    for line in "$@"; do
        expr+=${expr:+.\"\\n\".}$(gp_str "$line")
    done
    printf '%s' "$expr"
}

# use_outdir GPU [DEVICES]: plots go to plots/<gpu slug>/ (<gpu slug>-x<N>
# for a run over N GPUs, DEVICES being its `# devices:` list), or to --out-dir.
use_outdir() {
    local slug n
    if [[ -n $out_override ]]; then
        outdir=$out_override
        mkdir -p "$outdir" || die 2 "cannot create $outdir"
        return
    fi
    slug=$(kb_gpu_slug "$1")
    n=$(awk -F, '{ print NF }' <<<"${2:-}")
    ((n > 1)) && slug=$slug-x$n
    outdir=$here/$slug
    mkdir -p "$outdir" || die 2 "cannot create $outdir"
}

written=()

# render NAME SCRIPT ARGS: run one gnuplot script, then publish its two files.
# ARGS are gnuplot assignments, one or more a line.
render() {
    local name=$1 script=$2 args=${3//$'\n'/;} tmp=$outdir/.tmp.$$.$1
    gnuplot -e "$args; out=$(gp_str "$tmp")" "$here/$script" ||
        die 1 "gnuplot failed on $name"
    { mv -f "$tmp.png" "$outdir/$name.png" && mv -f "$tmp.svg" "$outdir/$name.svg"; } ||
        die 1 "cannot write $outdir/$name"
    written+=("$name")
}

variants_of() { # variants_of DIR OP DTYPE FAMILY: the variants with a speed line, in CSV order
    awk -v o="$2" -v d="$3" -v f="$4" '$1 == o && $2 == d && $3 == f { print $4 }' "$1/groups"
}

# A plot's name: the family joins it unless the CSV had no family column.
plot_name() { # plot_name KIND OP DTYPE FAMILY
    [[ $4 == _ ]] && echo "$1-$2-$3" || echo "$1-$2-$3-$4"
}

# The axis labels of a speed plot, as gnuplot assignments; X is the
# family's axis field, or "-" for the problem size.
speed_axes() { # speed_axes UNIT X
    local size
    size=$([[ $1 == GB/s ]] && echo "bytes moved" || echo FLOP)
    if [[ $2 == - ]]; then
        echo "xlabel=$(gp_str "problem size ($size per run)"); ylabel=$(gp_str "$1")"
    else
        echo "xlabel=$(gp_str "$2 (shape field)"); ylabel=$(gp_str "$1")"
    fi
}

# What a speed plot's family is called in its title.
family_words() { # family_words FAMILY X
    [[ $1 == _ ]] && return
    [[ $2 == - ]] && echo ", $1 shapes" || echo ", $1 over $2"
}

# A measured ceiling when the run has it, else the datasheet figure:
# "VALUE LABEL" (VALUE 0: unknown).
ceiling_of() { # ceiling_of KIND NAME
    local value
    value=$(meta "$data/run" "ceiling_$1")
    if [[ -n $value ]]; then
        echo "$value $2 ceiling (measured)"
    else
        value=$(meta "$data/run" "datasheet_$1")
        echo "${value:-0} $2 ceiling (datasheet)"
    fi
}

# The ceilings that bound a speed plot, one "VALUE LABEL" line each: the
# memory ceiling for GB/s, else one per math among the rows (fp32 FMA,
# tf32 tensor at half the bf16 tensor ceiling, bf16 tensor), so each row
# sits under its own.  None when every variant's rows span GPUs, which no
# one GPU's ceiling bounds (a plot with one-GPU rows beside them keeps it,
# and names the others' GPUs).
plot_ceilings() { # plot_ceilings UNIT DTYPE OP VARIANT...
    local math value label unit=$1 dtype=$2 op=$3 v one=0
    shift 3
    for v; do
        awk -v o="$op" -v d="$dtype" -v v="$v" '$1 == o && $2 == d && $3 == v { found = 1 } END { exit !found }' \
            "$data/run/across" 2>/dev/null || one=1
    done
    ((one)) || return 0
    set -- "$unit" "$dtype" "$op"
    if [[ $1 == GB/s ]]; then
        ceiling_of mem_gb_s memory
        return
    fi
    while read -r math; do
        case $math in
        f32) ceiling_of fp32_gflop_s "fp32 FMA" ;;
        bf16) ceiling_of tc_gflop_s "bf16 tensor" ;;
        tf32 | 3xtf32)
            # tf32 at half the bf16 tensor rate; 3xtf32, three tf32
            # products per fp32 one, at a sixth (ceilings.md).
            read -r value label < <(ceiling_of tc_gflop_s "bf16 tensor")
            if [[ $math == tf32 ]]; then
                echo "$(awk -v v="$value" 'BEGIN { print v / 2 }') tf32 tensor ceiling (half the bf16 one)"
            else
                echo "$(awk -v v="$value" 'BEGIN { print v / 6 }') 3xtf32 ceiling (a sixth of the bf16 one)"
            fi
            ;;
        esac
    done < <(awk -v o="$3" -v d="$2" '$1 == o && $2 == d { print $3 }' "$data/run/maths" | sort -u)
}

# speed_plot OP DTYPE FAMILY UNIT X: one family's speed plot.  Lines over
# the axis field X; points by shape for a family without one (X "-"); lines
# over problem size for a CSV without families (FAMILY "_").  layout.awk
# places what gnuplot cannot: the labels at the lines' ends, the ceilings'.
speed_plot() {
    local op=$1 dtype=$2 family=$3 unit=$4 x=$5 variants libraries= v kind files=() fields xlabel
    local stem=$data/run/speed.$1.$2.$3
    mapfile -t variants < <(variants_of "$data/run" "$op" "$dtype" "$family")
    for v in "${variants[@]}"; do
        [[ $v =~ ^(cublas|cudnn|torch|nccl) ]] && libraries+=" $v"
        files+=("$stem.$v.dat")
    done
    fields=$(cat "$data/run/fields.$op.$dtype.$family" 2>/dev/null)
    if [[ $family == _ ]]; then
        kind=size
        xlabel="problem size ($([[ $unit == GB/s ]] && echo "bytes moved" || echo FLOP) per run)"
    elif [[ $x == - ]]; then
        kind=shapes
        xlabel="shape${fields:+ ($fields)}, smallest to largest by work"
    else
        kind=axis
        xlabel="$x${fields:+, of shape $fields}"
    fi
    plot_ceilings "$unit" "$dtype" "$op" "${variants[@]}" | sort -g -u | head -n 4 >"$stem.ceilings"
    awk -v mode=speed -v kind="$kind" -v unit="$unit" -v variants="${variants[*]}" -v libraries="$libraries" \
        -v across="$(awk -v o="$op" -v d="$dtype" '$1 == o && $2 == d { printf "%s:%s ", $3, $4 }' "$data/run/across" 2>/dev/null)" \
        -v base="$(awk -v o="$op" -v d="$dtype" '$1 == o && $2 == d { print $3 }' "$data/run/baselines" 2>/dev/null)" \
        -v shapes="$data/run/shapes.$op.$dtype.$family" -v ceilings="$stem.ceilings" \
        -f "$here/layout.awk" "${files[@]}" >"$stem.layout" || die 1 "layout.awk failed on $op $dtype $family"
    render "$(plot_name speed "$op" "$dtype" "$family")" speed.gp "prefix=$(gp_str "$stem.")
        layout=$(gp_str "$stem.layout"); points=$([[ $kind == shapes ]] && echo 1 || echo 0)
        variants=$(gp_str "${variants[*]}"); libraries=$(gp_str "$libraries")
        plot_title=$(gp_lines "$op $dtype$(family_words "$family" "$x"): $unit" "$origin")
        xlabel=$(gp_str "$xlabel"); ylabel=$(gp_str "$unit")"
}

# speedup_plot OP DTYPE: the variants of one dtype over that dtype's baseline
# (split.awk picks it); none when the dtype has no baseline.
speedup_plot() {
    local op=$1 dtype=$2 shape baseline info=$data/run/speedup.$1.$2
    [[ -s $info.dat ]] || return 0
    read -r shape baseline <"$info.info"
    render "speedup-$op-$dtype" speedup.gp "data=$(gp_str "$info.dat")
        baseline=$(gp_str "$baseline")
        plot_title=$(gp_lines "$op $dtype: speedup over $baseline at $shape" "$origin")"
}

# "MEM FP32 TC" in GB/s and GFLOP/s, 0 when unknown: measured ceilings from
# the metadata when the run recorded them, else datasheet figures from the
# clocks (HBM moves data on both clock edges; an SM has 128 FP32 lanes, each
# an FMA of 2 FLOP).  Always numbers, since they go into gnuplot unquoted.
ceilings() {
    awk -F'\t' '{ m[$1] = $2 }
        END {
            mem = 2 * m["mem_clock_mhz"] * 1e6 * m["mem_bus_width_bits"] / 8 / 1e9
            fp32 = m["sm_count"] * 128 * 2 * m["sm_clock_mhz"] * 1e6 / 1e9
            if ("ceiling_mem_gb_s" in m) mem = m["ceiling_mem_gb_s"]
            if ("ceiling_fp32_gflop_s" in m) fp32 = m["ceiling_fp32_gflop_s"]
            print mem + 0, fp32 + 0, m["ceiling_tc_gflop_s"] + 0
        }' "$data/run/meta"
}

roofline_plot() {
    local ops mem fp32 tc xmin xmax ymin ymax src
    mapfile -t ops <"$data/run/ops"
    read -r mem fp32 tc <<<"$(ceilings)"
    src=$([[ -n $(meta "$data/run" ceiling_mem_gb_s) ]] && echo measured || echo datasheet)
    # Room around the points and the ridge points, and above the highest
    # ceiling for its label.
    read -r xmin xmax ymin ymax < <(cat "$data"/run/roofline.*.dat | awk -v m="$mem" -v p="$fp32" -v t="$tc" '
        NR == 1 { xlo = xhi = $1; ylo = yhi = $2 }
        { xlo = $1 < xlo ? $1 : xlo; xhi = $1 > xhi ? $1 : xhi }
        { ylo = $2 < ylo ? $2 : ylo; yhi = $2 > yhi ? $2 : yhi }
        END {
            peak = t > p ? t : p
            if (m > 0 && peak > 0) {
                r = peak / m
                xlo = r < xlo ? r : xlo; xhi = r > xhi ? r : xhi; yhi = peak > yhi ? peak : yhi
            }
            print xlo / 4, xhi * 4, ylo / 3, yhi * 2.5
        }')
    awk -v mode=roofline -v ops="${ops[*]}" -v mem="$mem" -v fp32="$fp32" -v tc="$tc" -v ceiling_src="$src" -v xmin="$xmin" -v xmax="$xmax" -v ymin="$ymin" -v ymax="$ymax" \
        -f "$here/layout.awk" "$data"/run/roofline.*.dat "$data"/run/roofline.*.best >"$data/run/roofline.layout" ||
        die 1 "layout.awk failed on the roofline"
    render roofline roofline.gp "ops=$(gp_str "${ops[*]}"); prefix=$(gp_str "$data/run/roofline.")
        layout=$(gp_str "$data/run/roofline.layout")
        mem=$mem; fp32=$fp32; tc=$tc; xmin=$xmin; xmax=$xmax; ymin=$ymin; ymax=$ymax
        plot_title=$(gp_str "Roofline: $origin")"
}

# The stage chart, when the run has `kbench model stages` rows: per stage
# that passed, prefill ms and decode ms per token, tagged with its dtype
# and logits error.
stages_plot() { # stages_plot CSV
    local dat=$data/run/stages.dat
    awk -F, '/^#/ { next }
        !cols { for (i = 1; i <= NF; ++i) c[$i] = i; cols = 1; next }
        ($(c["op"]) == "stage-prefill" || $(c["op"]) == "stage-decode") && $(c["status"]) == "PASS" {
            v = $(c["variant"])
            if (!(v in tag)) order[n++] = v
            e = $(c["rel_l2_err"])  # empty in runs from before the stage rows recorded it
            tag[v] = $(c["dtype"]) (e == "" ? ", check PASS" : ", rel. L2 " sprintf("%.1e", e))
            if ($(c["op"]) == "stage-prefill") pre[v] = $(c["median_ms"]); else dec[v] = $(c["median_ms"])
            shape = $(c["shape"])
        }
        END {
            for (i = 0; i < n; ++i)
                if ((order[i] in pre) && (order[i] in dec)) printf "%s %s %s \"%s\"\n", order[i], pre[order[i]], dec[order[i]], tag[order[i]]
            print shape > "/dev/stderr"
        }' "$1" >"$dat" 2>"$dat.shape" || die 2 "cannot read the stage rows of $1"
    [[ -s $dat ]] || return 0
    render stages stages.gp "data=$(gp_str "$dat")
        plot_title=$(gp_lines "The model stage by stage at $(cat "$dat.shape"), batch 1" "$origin")"
}

# One run's plots: speed, speedup and roofline.
render_run() { # render_run CSV
    local op dtype unit date ngpus
    split_run "$data/run" "$1"
    if [[ ! -s $data/run/groups ]]; then
        echo "kbench: $1 has no timed PASS rows; nothing to plot"
        exit 0
    fi
    gpu=$(meta "$data/run" gpu)
    date=$(meta "$data/run" date)
    origin="${gpu:-unknown GPU}, ${KB_PLOT_SOURCE:-$(basename "$1")} (commit $(meta "$data/run" git_commit), ${date%%T*})"
    ngpus=$(awk -F, '{ print NF }' <<<"$(meta "$data/run" devices)")
    ((ngpus > 1)) && origin="$ngpus x $origin"
    use_outdir "$gpu" "$(meta "$data/run" devices)"
    while read -r op dtype family unit x; do
        speed_plot "$op" "$dtype" "$family" "$unit" "$x"
    done < <(awk '!seen[$1, $2, $3]++ { print $1, $2, $3, $5, $6 }' "$data/run/groups")
    while read -r op dtype; do
        speedup_plot "$op" "$dtype"
    done < <(awk '!seen[$1, $2]++ { print $1, $2 }' "$data/run/groups")
    roofline_plot
    stages_plot "$1"
}

# "commit C, YYYY-MM-DD HH:MM" for a run's title line, to the minute: two runs
# compared are often from one day, even from one commit.
run_label() { # run_label DIR
    local commit date stamp
    commit=$(meta "$1" git_commit) date=$(meta "$1" date)
    stamp=${date/T/ }
    stamp=${stamp:0:16}
    [[ $date != *Z ]] || stamp+=" UTC"
    printf 'commit %s, %s' "${commit:-unknown}" "${stamp:-unknown date}"
}

# overlay_plot OP DTYPE FAMILY UNIT X: the speed lines of both runs on one
# plot, NEW solid and BASE dashed, a variant in one colour in both.
overlay_plot() {
    local op=$1 dtype=$2 family=$3 unit=$4 x=$5 new base v n=0 colours='' base_colours='' heading
    local -A colour
    mapfile -t new < <(variants_of "$data/new" "$op" "$dtype" "$family")
    mapfile -t base < <(variants_of "$data/base" "$op" "$dtype" "$family")
    for v in "${new[@]}" "${base[@]}"; do
        [[ -n ${colour[$v]:-} ]] || colour[$v]=$((++n))
    done
    for v in "${new[@]}"; do colours+=" ${colour[$v]}"; done
    for v in "${base[@]}"; do base_colours+=" ${colour[$v]}"; done
    if [[ $new_gpu == "$base_gpu" ]]; then
        heading=$(gp_lines "$op $dtype$(family_words "$family" "$x"): $unit on ${new_gpu:-unknown GPU}" \
            "new (solid): $new_run;  base (dashed): $base_run")
    else
        heading=$(gp_lines "$op $dtype$(family_words "$family" "$x"): $unit. Different GPUs: timings are not comparable" \
            "new (solid): ${new_gpu:-unknown GPU}, $new_run" \
            "base (dashed): ${base_gpu:-unknown GPU}, $base_run")
    fi
    render "$(plot_name overlay "$op" "$dtype" "$family")" speed.gp "prefix=$(gp_str "$data/new/speed.$op.$dtype.$family.")
        points=$([[ $x == - && $family != _ ]] && echo 1 || echo 0)
        variants=$(gp_str "${new[*]}"); colours=$(gp_str "$colours")
        base_prefix=$(gp_str "$data/base/speed.$op.$dtype.$family.")
        base_variants=$(gp_str "${base[*]}"); base_colours=$(gp_str "$base_colours")
        new_label=$(gp_str "new $(meta "$data/new" git_commit)")
        base_label=$(gp_str "base $(meta "$data/base" git_commit)")
        plot_title=$heading
        $(speed_axes "$unit" "$x")"
}

# Overlays of two runs, for each (op, dtype) both have.
render_overlay() { # render_overlay BASE NEW
    local op dtype unit
    split_run "$data/base" "$1" 1
    split_run "$data/new" "$2" 1
    new_gpu=$(meta "$data/new" gpu) base_gpu=$(meta "$data/base" gpu)
    new_run=$(run_label "$data/new") base_run=$(run_label "$data/base")
    use_outdir "$new_gpu" "$(meta "$data/new" devices)"
    while read -r op dtype family unit x; do
        overlay_plot "$op" "$dtype" "$family" "$unit" "$x"
    done < <(awk 'FNR == NR { base[$1, $2, $3] = 1; next }
            ($1, $2, $3) in base && !seen[$1, $2, $3]++ { print $1, $2, $3, $5, $6 }' "$data/base/groups" "$data/new/groups")
    if [[ ${#written[@]} -eq 0 ]]; then
        echo "kbench: $1 and $2 share no (op, dtype) with timed PASS rows; nothing to plot"
        exit 0
    fi
}

if ((overlay)); then
    render_overlay "${csvs[@]}"
else
    render_run "${csvs[0]}"
fi
echo "kbench: ${#written[@]} plots (PNG and SVG) in $outdir"
