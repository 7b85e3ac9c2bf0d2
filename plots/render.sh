#!/usr/bin/env bash
# Render a kbench CSV as plots, with awk and gnuplot:
#
#   bash plots/render.sh [--optional] [FILE.csv]
#
# FILE.csv defaults to the newest results/**/*.csv.  The plots go to
# plots/<gpu>/, named after the CSV's `# gpu:` line, each as PNG and SVG:
#   speed-OP-DTYPE  GFLOP/s (GB/s for memory-bound ops) against problem size
#   speedup-OP      each variant's speedup over the library baseline
#   roofline        every (op, variant) under the GPU's ceilings
# Only timed PASS rows are plotted.  Each plot is written under a temporary
# name and renamed, so an interrupted run leaves no half-written file.
#
# Exit codes: 0 plots written (or nothing to plot); 1 gnuplot failed;
# 2 bad input; 3 gnuplot is not installed.  With --optional a missing
# gnuplot exits 0 instead, so a benchmark run does not fail over its plots.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

die() { # die CODE MESSAGE
    echo "kbench: $2" >&2
    exit "$1"
}

optional=0 csv=
for arg in "$@"; do
    case $arg in
    --optional) optional=1 ;;
    -*) die 2 "render.sh: unknown option '$arg'" ;;
    *) [[ -z $csv ]] || die 2 "render.sh takes one CSV file"; csv=$arg ;;
    esac
done
if [[ -z $csv ]]; then
    csv=$(find "$root/results" -type f -name '*.csv' -printf '%T@ %p\n' 2>/dev/null |
        sort -n | tail -n 1 | cut -d' ' -f2-)
    [[ -n $csv ]] || die 2 "no CSV under $root/results; pass one: bash plots/render.sh FILE.csv"
fi
[[ -f $csv && -r $csv ]] || die 2 "cannot read $csv"

if ! command -v gnuplot >/dev/null; then
    echo "kbench: no plots: gnuplot is missing (apt-get install gnuplot-nox); then run: bash plots/render.sh $csv"
    exit $((optional ? 0 : 3))
fi

data=$(mktemp -d)
outdir=
trap 'rm -rf "$data"; [[ -n $outdir ]] && rm -f "$outdir"/.tmp.$$.*' EXIT
: >"$data/meta"
awk -v out="$data" -v src="$csv" -f "$here/split.awk" "$csv" || exit 2
if [[ ! -s $data/groups ]]; then
    echo "kbench: $csv has no timed PASS rows; nothing to plot"
    exit 0
fi

meta() { # meta KEY: the value of a `# KEY: value` line, or nothing
    awk -F'\t' -v k="$1" '$1 == k { print $2; exit }' "$data/meta"
}

# A string literal for gnuplot -e: single-quoted, quotes doubled.
gp_str() {
    printf "'%s'" "${1//\'/\'\'}"
}

gpu=$(meta gpu)
slug=$(printf '%s' "${gpu:-unknown gpu}" | tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
outdir=$here/$slug
mkdir -p "$outdir" || die 2 "cannot create $outdir"
date=$(meta date)
origin="${gpu:-unknown GPU}, commit $(meta git_commit), ${date%%T*}"
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

# Plots left from an earlier CSV would mix two runs in one folder.
remove_stale() {
    local f name
    for f in "$outdir"/speed*.{png,svg} "$outdir"/roofline.{png,svg}; do
        name=$(basename "${f%.*}")
        [[ ! -e $f || " ${written[*]} " == *" $name "* ]] || rm -f "$f"
    done
}

speed_plot() { # speed_plot OP DTYPE UNIT
    local op=$1 dtype=$2 unit=$3 variants libraries v size
    mapfile -t variants < <(awk -v o="$op" -v d="$dtype" '$1 == o && $2 == d { print $3 }' "$data/groups")
    for v in "${variants[@]}"; do
        sort -g -k1,1 -o "$data/speed.$op.$dtype.$v.dat" "$data/speed.$op.$dtype.$v.dat"
        [[ $v =~ ^(cublas|cudnn|torch) ]] && libraries+=" $v"
    done
    size=$([[ $unit == GB/s ]] && echo "bytes moved" || echo FLOP)
    render "speed-$op-$dtype" speed.gp "prefix=$(gp_str "$data/speed.$op.$dtype.")
        variants=$(gp_str "${variants[*]}"); libraries=$(gp_str "${libraries:-}")
        plot_title=$(gp_str "$op $dtype: $unit by size on $origin")
        xlabel=$(gp_str "problem size ($size per run)"); ylabel=$(gp_str "$unit")"
}

speedup_plot() { # speedup_plot OP
    local op=$1 shape baseline
    [[ -s $data/speedup.$op.dat ]] || return 0
    read -r shape baseline <"$data/speedup.$op.info"
    render "speedup-$op" speedup.gp "data=$(gp_str "$data/speedup.$op.dat")
        baseline=$(gp_str "$baseline")
        plot_title=$(gp_str "$op speedup over $baseline at $shape on $origin")"
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
        }' "$data/meta"
}

roofline_plot() {
    local ops mem fp32 tc xmin xmax ymin ymax
    mapfile -t ops <"$data/ops"
    read -r mem fp32 tc <<<"$(ceilings)"
    # Room around the points and the ridge points, and above the highest
    # ceiling for the key.
    read -r xmin xmax ymin ymax < <(cat "$data"/roofline.*.dat | awk -v m="$mem" -v p="$fp32" -v t="$tc" '
        NR == 1 { xlo = xhi = $1; ylo = yhi = $2 }
        { xlo = $1 < xlo ? $1 : xlo; xhi = $1 > xhi ? $1 : xhi }
        { ylo = $2 < ylo ? $2 : ylo; yhi = $2 > yhi ? $2 : yhi }
        END {
            peak = t > p ? t : p
            if (m > 0 && peak > 0) {
                r = peak / m
                xlo = r < xlo ? r : xlo; xhi = r > xhi ? r : xhi; yhi = peak > yhi ? peak : yhi
            }
            print xlo / 4, xhi * 4, ylo / 3, yhi * 6
        }')
    render roofline roofline.gp "ops=$(gp_str "${ops[*]}"); prefix=$(gp_str "$data/roofline.")
        mem=$mem; fp32=$fp32; tc=$tc; xmin=$xmin; xmax=$xmax; ymin=$ymin; ymax=$ymax
        plot_title=$(gp_str "Roofline: $origin")"
}

while read -r op dtype unit; do
    speed_plot "$op" "$dtype" "$unit"
done < <(awk '!seen[$1, $2]++ { print $1, $2, $4 }' "$data/groups")
while read -r op; do
    speedup_plot "$op"
done <"$data/ops"
roofline_plot
remove_stale
echo "kbench: ${#written[@]} plots (PNG and SVG) in $outdir"
