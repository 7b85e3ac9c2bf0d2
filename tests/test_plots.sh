#!/usr/bin/env bash
# plots/render.sh on a generated CSV with several ops, dtypes and variants,
# a FAIL and a SKIP variant among them: every plot is written as PNG and SVG,
# and the variants that never passed appear in none.  A speedup chart per
# (op, dtype), each over its own dtype's baseline, with none of the other
# dtype's rows (matmul's f32 and bf16 both have a torch row).  Then the overlay of two
# such runs (render.sh --overlay), also as tools/compare_newest.sh draws it,
# and without a file, the runs under results/ merged by their dates.  The
# unit of each (op, dtype) comes from the CSV's bound column.
# Takes the source root (default: this script's parent).  Exits 77 (skip)
# without gnuplot.
set -u
if ! command -v gnuplot >/dev/null; then
    echo "gnuplot is not installed (apt-get install gnuplot-nox); skipping the plot tests"
    exit 77
fi
src=$(realpath "${1:-$(dirname "$0")/..}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/plots" "$work/tools"
cp "$src"/plots/render.sh "$src"/plots/*.awk "$src"/plots/*.gp "$work/plots/" || exit 1
cp "$src"/tools/lib.sh "$work/tools/" || exit 1
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# A CSV as kbench writes it: speeds grow with size towards each variant's peak.
# sample_csv [FACTOR]: every speed times FACTOR (default 1).
sample_csv() {
    cat <<'EOF'
# gpu: NVIDIA H100 80GB HBM3
# sm_count: 132
# sm_clock_mhz: 1980
# mem_clock_mhz: 2619
# mem_bus_width_bits: 5120
# git_commit: 0123456789ab
# date: 2026-11-22T04:45:07Z
# baseline_matmul: cublas
# baseline_bf16_matmul: cublas
# baseline_softmax: cudnn
op,variant,dtype,math,shape_fields,shape,d1,d2,d3,d4,d5,d6,flops,bytes,median_ms,min_ms,max_ms,rel_stdev_pct,samples,gflop_s,gb_s,speedup_x,max_abs_err,rel_l2_err,tol_at_max_err,rows_checked,rows_total,l2,status,reason
EOF
    awk -v factor="${1:-1}" 'BEGIN {
        nmm = split("cublas:f32:50000 naive:f32:500 coalesced:f32:2500 blocktile_2d:f32:18000 " \
              "cublas_tf32:f32:250000 cublas:bf16:400000 wmma:bf16:180000 brokenvar:f32:FAIL " \
              "skippedvar:bf16:SKIP torch:f32:48000 torch:bf16:380000", mm, " ")
        split("256 512 1024 2048 4096", sizes, " ")
        for (s = 1; s <= 5; s++)
            for (v = 1; v <= nmm; v++)
                row("matmul", mm[v], "MxNxK", sizes[s] "x" sizes[s] "x" sizes[s], sizes[s], sizes[s], sizes[s])
        split("cudnn:f32:2800 naive:f32:700 warp:f32:2400", sm, " ")
        for (s = 3; s <= 5; s++)
            for (v = 1; v <= 3; v++)
                row("softmax", sm[v], "RxC", sizes[s] "x" sizes[s], sizes[s], sizes[s], "")
    }
    # A variant "name:dtype:peak" (peak in GFLOP/s or GB/s, or a status).
    # speedup_x is over the baseline of the dtype of the row, empty in the
    # bf16 torch rows, as the PyTorch peers leave it.
    function row(op, spec, fields, shape, a, b, c,    p, size, flops, bytes, speed, ms, sx) {
        split(spec, p, ":")
        size = p[2] == "bf16" ? 2 : 4
        flops = op == "matmul" ? 2 * a * b * c : 5 * a * b
        bytes = op == "matmul" ? size * (a * c + c * b + a * b) : 2 * size * a * b
        printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,,,,%.0f,%.0f,", op, p[1], p[2], p[2], fields, shape, a, b, c, flops, bytes
        if (p[3] == "FAIL" || p[3] == "SKIP") {
            printf ",,,,,,,,,,,,,cold,%s,%s\n", p[3], p[3] == "SKIP" ? "\"needs sm_100, have sm_90\"" : "max error 0.25"
            return
        }
        speed = factor * p[3] * (1 - 0.8 * 256 / a)
        ms = (op == "matmul" ? flops / speed : bytes / speed) * 1e-6
        if (p[1] ~ /^(cublas|cudnn)$/)
            base_ms[p[2]] = ms
        sx = p[1] == "torch" && p[2] == "bf16" ? "" : sprintf("%.4f", base_ms[p[2]] / ms)
        printf "%.6f,%.6f,%.6f,0.5,10,%.3f,%.3f,%s,1e-6,1e-7,1e-4,%s,%s,cold,PASS,\n", ms, ms, ms,
               flops / ms * 1e-6, bytes / ms * 1e-6, sx, a, a
    }'
}
sample_csv >"$work/sample.csv"

out=$work/plots/h100
bash "$work/plots/render.sh" "$work/sample.csv" >"$work/log" 2>&1 || fail "render.sh: $(cat "$work/log")"
for name in speed-matmul-f32 speed-matmul-bf16 speed-softmax-f32 speedup-matmul-f32 speedup-matmul-bf16 \
    speedup-softmax-f32 roofline; do
    for ext in png svg; do
        [[ -s $out/$name.$ext ]] || fail "$name.$ext missing or empty"
    done
done
[[ $(find "$out" -type f | wc -l) -eq 14 ]] || fail "expected 14 files, got: $(ls -A "$out")"
[[ -z $(find "$out" -name '*tmp*') ]] || fail "temporary files left: $(ls -A "$out")"
grep -q '>blocktile_2d<' "$out/speed-matmul-f32.svg" || fail "speed-matmul-f32.svg lacks blocktile_2d"
grep -qs '>cudnn = 1<' "$out/speedup-softmax-f32.svg" || fail "speedup-softmax-f32.svg lacks its baseline"
if grep -l -e brokenvar -e skippedvar "$out"/*.svg; then
    fail "a FAIL or SKIP variant was plotted"
fi

# has_bars SVG TEXT...: each TEXT (a bar's name or value label) is in SVG.
# no_bars SVG TEXT...: none is.
has_bars() {
    local svg=$1 text
    shift
    for text; do
        grep -qs -- ">$text<" "$svg" || fail "$(basename "$svg") lacks '$text'"
    done
}
no_bars() {
    local svg=$1 text
    shift
    for text; do
        ! grep -qs -- ">$text<" "$svg" || fail "$(basename "$svg") has '$text'"
    done
}
torch_bars() { # torch_bars SVG: how many bars are named torch (0: no file)
    local n=0
    [[ ! -f $1 ]] || n=$(grep -c '>torch<' "$1")
    echo "$n"
}

# The f32 chart: the f32 rows over cublas's f32 form, one torch bar (f32's,
# 0.96x), not the bf16 torch row over it (7.60x) nor any other bf16 row.
svg=$out/speedup-matmul-f32.svg
has_bars "$svg" 'cublas = 1' cublas_tf32 blocktile_2d torch 0.96x 5.00x
no_bars "$svg" wmma 7.60x 0.95x
[[ $(torch_bars "$svg") -eq 1 ]] || fail "speedup-matmul-f32.svg has $(torch_bars "$svg") torch bars, not 1"
# The bf16 chart: the bf16 rows over cublas's bf16 form; the torch row has no
# speedup_x, so it is that form's median over its own (0.95x).
svg=$out/speedup-matmul-bf16.svg
has_bars "$svg" 'cublas = 1' wmma torch 0.95x 0.45x
no_bars "$svg" cublas_tf32 naive 0.96x
[[ $(torch_bars "$svg") -eq 1 ]] || fail "speedup-matmul-bf16.svg has $(torch_bars "$svg") torch bars, not 1"
[[ ! -e $out/speedup-matmul.png && ! -e $out/speedup-softmax.png ]] ||
    fail "a speedup chart of all dtypes was drawn: $(ls -A "$out")"

# With no baseline line for bf16: the first bf16 library variant (cublas*,
# then cudnn*, then torch); with none, no bf16 chart.
sed '/^# baseline_bf16_matmul:/d; /^matmul,cublas,bf16,/d' "$work/sample.csv" >"$work/no-bf16-base.csv"
bash "$work/plots/render.sh" --out-dir "$work/fallback" "$work/no-bf16-base.csv" >"$work/log" 2>&1 ||
    fail "render.sh, no bf16 baseline: $(cat "$work/log")"
svg=$work/fallback/speedup-matmul-bf16.svg
if [[ -s $svg ]]; then
    has_bars "$svg" 'torch = 1' wmma 0.47x
else
    fail "no bf16 chart over torch: $(ls -A "$work/fallback")"
fi
sed -i '/^matmul,torch,bf16,/d' "$work/no-bf16-base.csv"
rm -rf "$work/fallback"
bash "$work/plots/render.sh" --out-dir "$work/fallback" "$work/no-bf16-base.csv" >"$work/log" 2>&1 ||
    fail "render.sh, no bf16 library variant: $(cat "$work/log")"
[[ -s $work/fallback/speedup-matmul-f32.svg && ! -e $work/fallback/speedup-matmul-bf16.svg ]] ||
    fail "with no bf16 library variant: $(ls -A "$work/fallback")"

# A missing gnuplot: one line naming the fix; exit 3, or 0 with --optional.
mkdir "$work/bin"
ln -s "$(command -v dirname)" "$work/bin/dirname"
for flag in "" --optional; do
    PATH=$work/bin "$BASH" "$work/plots/render.sh" $flag "$work/sample.csv" >"$work/log" 2>&1
    rc=$?
    want=$([[ -n $flag ]] && echo 0 || echo 3)
    if [[ $rc -ne $want || $(wc -l <"$work/log") -ne 1 ]] || ! grep -q "apt-get install gnuplot-nox" "$work/log"; then
        fail "no gnuplot, flag '$flag': rc=$rc (want $want): $(cat "$work/log")"
    fi
done
PATH=$work/bin "$BASH" "$work/plots/render.sh" --optional --overlay "$work/sample.csv" "$work/sample.csv" >"$work/log" 2>&1
rc=$?
if [[ $rc -ne 0 || $(wc -l <"$work/log") -ne 1 ]] || ! grep -q "render.sh --overlay " "$work/log"; then
    fail "no gnuplot, --optional --overlay: rc=$rc (want 0): $(cat "$work/log")"
fi

# Bad input: exit 2.
echo "not a csv" >"$work/notes.txt"
bash "$work/plots/render.sh" "$work/notes.txt" >"$work/log" 2>&1
[[ $? -eq 2 ]] && grep -q "not a kbench CSV" "$work/log" || fail "non-CSV input: $(cat "$work/log")"

# --overlay BASE NEW: BASE is slower, from another commit, lacks softmax and
# has a variant NEW lacks.  An overlay for each (op, dtype) of both runs only;
# the plots of NEW alone stay.
sample_csv 0.8 | sed 's/^# git_commit: .*/# git_commit: fedcba987654/; s/^# date: .*/# date: 2026-11-20T10:00:00Z/
    /^softmax,/d; s/^matmul,coalesced,/matmul,oldvar,/' >"$work/base.csv"
bash "$work/plots/render.sh" --overlay "$work/base.csv" "$work/sample.csv" >"$work/log" 2>&1 ||
    fail "render.sh --overlay: $(cat "$work/log")"
for name in overlay-matmul-f32 overlay-matmul-bf16; do
    for ext in png svg; do
        [[ -s $out/$name.$ext ]] || fail "$name.$ext missing or empty"
    done
done
[[ $(find "$out" -type f | wc -l) -eq 18 ]] || fail "expected 18 files, got: $(ls -A "$out")"
[[ -z $(find "$out" -name '*tmp*') ]] || fail "temporary files left: $(ls -A "$out")"
svg=$out/overlay-matmul-f32.svg
for text in '>blocktile_2d<' '>oldvar (base only)<' 0123456789ab fedcba987654 '2026-11-20 10:00 UTC'; do
    grep -q -- "$text" "$svg" || fail "overlay-matmul-f32.svg lacks '$text'"
done
! grep -q 'blocktile_2d (base only)' "$svg" || fail "a variant of both runs is labelled base only"
! grep -q 'Different GPUs' "$svg" || fail "overlay of one GPU says the GPUs differ"
if grep -l -e brokenvar -e skippedvar "$out"/overlay-*.svg; then
    fail "a FAIL or SKIP variant was plotted in an overlay"
fi

# Runs of two GPUs: the title says so.
sed 's/^# gpu: .*/# gpu: NVIDIA A100-SXM4-80GB/' "$work/base.csv" >"$work/base-a100.csv"
bash "$work/plots/render.sh" --overlay "$work/base-a100.csv" "$work/sample.csv" >"$work/log" 2>&1 ||
    fail "render.sh --overlay, two GPUs: $(cat "$work/log")"
grep -q 'Different GPUs' "$svg" && grep -q 'A100-SXM4-80GB' "$svg" ||
    fail "overlay of two GPUs does not say so"

# --overlay needs two files: exit 2.
bash "$work/plots/render.sh" --overlay "$work/sample.csv" >"$work/log" 2>&1
[[ $? -eq 2 ]] && grep -q "takes two CSV files" "$work/log" || fail "--overlay with one file: $(cat "$work/log")"

# compare_newest.sh: compare's exit code, then the overlay of the same two
# files.  A stand-in for kbench prints its arguments and exits 1 (SLOWER).
# The runs' order is their dates', not their files' times.
mkdir -p "$work/results"
cp "$src"/tools/{compare_newest,list_runs,merge_csv}.sh "$work/tools/" || exit 1
cp "$work/base.csv" "$work/results/run1.csv"
cp "$work/sample.csv" "$work/results/run2.csv"
touch -d '1 hour ago' "$work/results/run2.csv"
printf '#!/bin/sh\necho "$*"\nexit 1\n' >"$work/fake-kbench"
chmod +x "$work/fake-kbench"
rm -f "$out"/overlay-*
bash "$work/tools/compare_newest.sh" "$work/fake-kbench" "$work" >"$work/log" 2>&1
rc=$?
[[ $rc -eq 1 ]] || fail "compare_newest.sh exited $rc, not compare's 1: $(cat "$work/log")"
grep -q "^compare $work/results/run1.csv $work/results/run2.csv$" "$work/log" ||
    fail "compare_newest.sh did not compare run1 with run2: $(cat "$work/log")"
[[ -s $out/overlay-matmul-f32.png && -s $out/overlay-matmul-f32.svg ]] ||
    fail "compare_newest.sh drew no overlay: $(cat "$work/log")"


# Without a file: the runs merged oldest first by date, each row from the
# newest run that has it (base's oldvar stays, the title names the newest
# commit).  A run with other columns is left out, and no plot is removed.
sample_csv | sed 's/^# date: .*/# date: 2026-11-19T00:00:00Z/; s/^matmul,naive,/matmul,ancient,/
    /^op,/s/,reason$//' >"$work/results/run0.csv"
echo "not drawn by render.sh" >"$out/speed-gone-f32.png"
bash "$work/plots/render.sh" >"$work/log" 2>&1 || fail "render.sh without a file: $(cat "$work/log")"
svg=$out/speed-matmul-f32.svg
grep -q '>oldvar<' "$svg" && grep -q '>coalesced<' "$svg" || fail "the runs were not merged row by row"
grep -q 0123456789ab "$svg" && ! grep -q fedcba987654 "$svg" || fail "the title does not name the newest run"
! grep -q ancient "$svg" || fail "a run with other columns was merged"
[[ -f $out/speed-gone-f32.png ]] || fail "render.sh removed a plot it did not draw"
# A run of two GPUs of the same name, in a folder of its own, is drawn into
# plots/<gpu>-x2 and never merged into the one-GPU runs.
mkdir -p "$work/results/h100-x2"
sample_csv | sed 's/^# date: .*/# date: 2026-11-30T00:00:00Z\n# devices: 0,1/; s/^matmul,coalesced,/matmul,twogpu,/' \
    >"$work/results/h100-x2/run.csv"
bash "$work/plots/render.sh" >"$work/log" 2>&1 || fail "render.sh with a run of two GPUs: $(cat "$work/log")"
grep -q '>twogpu<' "$work/plots/h100-x2/speed-matmul-f32.svg" 2>/dev/null ||
    fail "the two-GPU run was not drawn into plots/h100-x2: $(cat "$work/log")"
! grep -q '>twogpu<' "$out/speed-matmul-f32.svg" && ! grep -q '>oldvar<' "$work/plots/h100-x2/speed-matmul-f32.svg" ||
    fail "the one-GPU and two-GPU runs were merged"
rm -rf "$work/results/h100-x2" "$work/plots/h100-x2"

# The unit of an (op, dtype) comes from the `bound` kbench wrote for its
# largest row, whatever the op: here a compute-bound softmax and a
# memory-bound matmul.  Without the column, from the row's intensity against
# the run's fp32 ridge point (60000 / 3000 = 20 FLOP/byte).
units() { # units CSV: "op dtype unit" per (op, dtype)
    rm -rf "$work/split" && mkdir "$work/split"
    awk -v out="$work/split" -v src="$1" -f "$work/plots/split.awk" "$1" || fail "split.awk on $1"
    awk '!seen[$1, $2]++ { print $1, $2, $5 }' "$work/split/groups"
}
cat >"$work/bound.csv" <<'CSV'
# ceiling_mem_gb_s: 3000
# ceiling_fp32_gflop_s: 60000
op,variant,dtype,shape,flops,bytes,median_ms,gflop_s,gb_s,speedup_x,bound,status
softmax,a,f32,8x8,100,10,0.001,100,10,,memory,PASS
softmax,a,f32,64x64,100000,1000,0.001,100000,1000,,compute,PASS
matmul,b,f32,64x64x64,500000,100000,0.001,500000,100000,,memory,PASS
matmul,b,f32,8x8x8,1000,10,0.001,1000,10,,compute,PASS
CSV
[[ $(units "$work/bound.csv" | tr '\n' ';') == "softmax f32 GFLOP/s;matmul f32 GB/s;" ]] ||
    fail "units from the bound column: $(units "$work/bound.csv")"
sed 's/,bound,status$/,status/; s/,\(memory\|compute\),PASS$/,PASS/' "$work/bound.csv" >"$work/nobound.csv"
[[ $(units "$work/nobound.csv" | tr '\n' ';') == "softmax f32 GFLOP/s;matmul f32 GB/s;" ]] ||
    fail "units from the intensity (100 and 5 FLOP/byte): $(units "$work/nobound.csv")"

# With the family and axis columns: one speed plot per family, placed at the
# axis field (the d column it names), and a family without an axis drawn as
# points, never joined into a line.  tf32 rows in an f32 plot get their own
# ceiling beside fp32's.
awk -F, 'BEGIN { OFS = "," }
    /^#/ { print; next }
    !header++ { print $0, "family", "axis"; next }
    $1 == "matmul" && $7 <= 512 { print $0, "hostile", ""; next }
    { print $0, "square", $1 == "matmul" ? "N" : "C" }' "$work/sample.csv" >"$work/family.csv"
sed -i 's/^matmul,cublas_tf32,f32,f32,/matmul,cublas_tf32,f32,tf32,/' "$work/family.csv"
printf '# ceiling_tc_gflop_s: 800000\n# ceiling_fp32_gflop_s: 60000\n' | cat - "$work/family.csv" >"$work/family2.csv"
out=$work/families
bash "$work/plots/render.sh" --out-dir "$out" "$work/family2.csv" >"$work/log" 2>&1 ||
    fail "render.sh with families: $(cat "$work/log")"
for name in speed-matmul-f32-square speed-matmul-f32-hostile speed-matmul-bf16-square speed-softmax-f32-square; do
    [[ -s $out/$name.png && -s $out/$name.svg ]] || fail "$name missing: $(ls -A "$out")"
done
[[ ! -e $out/speed-matmul-f32.png ]] || fail "a speed plot joined the families"
grep -q '>N, of shape MxNxK<' "$out/speed-matmul-f32-square.svg" || fail "the square plot is not over N"
grep -q '>tf32 tensor ceiling' "$out/speed-matmul-f32-square.svg" || fail "no tf32 ceiling beside fp32's"
grep -q '>fp32 FMA ceiling' "$out/speed-matmul-f32-square.svg" || fail "no fp32 ceiling"
mkdir -p "$work/split2" && : >"$work/split2/meta"
awk -v out="$work/split2" -v src=x -f "$work/plots/split.awk" "$work/family2.csv" || fail "split.awk with families"
[[ $(cut -d' ' -f1 "$work/split2/speed.matmul.f32.square.naive.dat" | sort -g | tr '\n' ' ') == "1024 2048 4096 " ]] ||
    fail "square points are not at N: $(cat "$work/split2/speed.matmul.f32.square.naive.dat")"
grep -q "^matmul f32 hostile naive GFLOP/s -$" "$work/split2/groups" || fail "hostile has an axis: $(cat "$work/split2/groups")"
# The speedup chart's baseline is the one the metadata names, whatever its name.
sed '/^# baseline_matmul:/s/cublas/coalesced/' "$work/family2.csv" >"$work/family3.csv"
bash "$work/plots/render.sh" --out-dir "$work/family3" "$work/family3.csv" >"$work/log" 2>&1 ||
    fail "render.sh, family3: $(cat "$work/log")"
grep -q 'speedup over coalesced' "$work/family3/speedup-matmul-f32.svg" ||
    fail "speedup-matmul-f32 is not over the metadata's baseline (coalesced)"

# gnuplot's SVG draws a line as a <path> in the variant's group, points as <use>.
hostile_group=$(sed -n '/<title>naive<\/title>/,/<title>coalesced<\/title>/p' "$out/speed-matmul-f32-hostile.svg")
[[ $hostile_group == *'<use'* && $hostile_group != *'<path'* ]] ||
    fail "the hostile family's points were joined into a line (or not drawn)"

# A family without an axis is placed by shape, smallest to largest by work,
# at the shape's index (not over 10 decades of problem size).
[[ $(tr '\n' ' ' <"$work/split2/shapes.matmul.f32.hostile") == "1 256x256x256 2 512x512x512 " ]] ||
    fail "hostile shapes not numbered by work: $(cat "$work/split2/shapes.matmul.f32.hostile")"
[[ $(cut -d' ' -f1 "$work/split2/speed.matmul.f32.hostile.naive.dat" | sort -g | tr '\n' ' ') == "1 2 " ]] ||
    fail "hostile points are not at their shape's index: $(cat "$work/split2/speed.matmul.f32.hostile.naive.dat")"
grep -q '>512x512x512<' "$out/speed-matmul-f32-hostile.svg" || fail "the hostile plot does not name its shapes"
# A line ends in its name and its speedup over the baseline at that shape;
# the axis has a tick at each measured value; the title names the file.
svg=$out/speed-matmul-f32-square.svg
for text in '>cublas = 1x<' '>cublas_tf32 5.00x<' '>naive 0.01x<' '>2048<' '>NVIDIA H100 80GB HBM3, family2.csv (commit 0123456789ab'; do
    grep -q -- "$text" "$svg" || fail "speed-matmul-f32-square.svg lacks '$text'"
done
# The roofline keeps PyTorch's f32 and bf16 rows apart (both are `torch`).
[[ $(grep -c ' torch ' "$work/split2/roofline.matmul.dat") -eq 2 ]] ||
    fail "roofline: torch f32 and bf16 merged: $(cat "$work/split2/roofline.matmul.dat")"
# A speed its three decimals round to 0.000 is plotted from flops / median.
cat >"$work/tiny.csv" <<'CSV'
op,variant,dtype,shape_fields,shape,d1,d2,d3,flops,bytes,median_ms,gflop_s,gb_s,speedup_x,bound,status,family,axis
matmul,a,f32,MxNxK,1x1x1,1,1,1,2,12,0.004,0.000,0.003,,compute,PASS,hostile,
CSV
rm -rf "$work/split3" && mkdir "$work/split3"
awk -v out="$work/split3" -v src=x -f "$work/plots/split.awk" "$work/tiny.csv" || fail "split.awk on tiny.csv"
[[ $(cat "$work/split3/speed.matmul.f32.hostile.a.dat" 2>/dev/null) == "1 0.0005" ]] ||
    fail "a tiny speed was rounded: $(cat "$work/split3/speed.matmul.f32.hostile.a.dat")"
# 3xtf32 rows get their own ceiling, a sixth of the bf16 one.
sed 's/^matmul,blocktile_2d,f32,f32,/matmul,blocktile_2d,f32,3xtf32,/' "$work/family2.csv" >"$work/family4.csv"
bash "$work/plots/render.sh" --out-dir "$work/family4" "$work/family4.csv" >"$work/log" 2>&1 ||
    fail "render.sh, family4: $(cat "$work/log")"
grep -q '>3xtf32 ceiling (a sixth of the bf16 one): 133 TFLOP/s<' "$work/family4/speed-matmul-f32-square.svg" ||
    fail "no 3xtf32 ceiling at a sixth of the bf16 one"
# Rows across GPUs: beside one-GPU rows the ceiling stays and the variant
# is named with its GPUs; an op run only across GPUs has no ceiling.
awk -F, 'BEGIN { OFS = "," }
    /^#/ { print; next }
    !header++ { print $0, "devices"; next }
    $1 == "matmul" && $2 == "wmma" { $2 = "tp"; print $0, "0+1"; next }
    $1 == "softmax" { print $0, "0+1"; next }
    { print $0, "0" }' "$work/family2.csv" >"$work/across.csv"
bash "$work/plots/render.sh" --out-dir "$work/across" "$work/across.csv" >"$work/log" 2>&1 ||
    fail "render.sh, across: $(cat "$work/log")"
grep -q '>tp (2 GPUs) ' "$work/across/speed-matmul-bf16-square.svg" || fail "a variant across GPUs is not named so"
grep -q '>bf16 tensor ceiling' "$work/across/speed-matmul-bf16-square.svg" || fail "one-GPU rows lost their ceiling"
! grep -q 'ceiling' "$work/across/speed-softmax-f32-square.svg" || fail "rows only across GPUs have a one-GPU ceiling"

# plots/loss.sh: two loss curves (kbench model train --loss-csv's columns)
# by step and by wall time, each a line with its held-out points, named
# after its file; a CSV of other columns is refused.
cp "$src"/plots/loss.sh "$work/plots/" || exit 1
for run in kbench peer; do
    { echo "# kbench model train: CPU reference (double)"; echo "step,loss,grad_norm,lr,tokens,wall_s,val_loss"
      for i in 1 2 3 4; do echo "$i,$((7 - i)).5,0.5,0.001,$((i * 256)),$i.5,$( ((i % 2 == 0)) && echo "$((7 - i)).9")"; done
    } >"$work/$run.csv"
done
bash "$work/plots/loss.sh" "$work/loss" "$work/kbench.csv" "$work/peer.csv" >"$work/log" 2>&1 ||
    fail "loss.sh: $(cat "$work/log")"
for axis in step time; do
    for ext in png svg; do [[ -s $work/loss-$axis.$ext ]] || fail "loss.sh wrote no loss-$axis.$ext"; done
    grep -q '>peer held-out<' "$work/loss-$axis.svg" || fail "loss-$axis.svg has no held-out points for peer"
done
grep -q '>wall time (s)<' "$work/loss-time.svg" || fail "loss-time.svg is not by wall time"
bash "$work/plots/loss.sh" "$work/bad" "$work/across.csv" >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "loss.sh took a CSV that is no loss curve"

[[ $failures -eq 0 ]] && echo "all plot checks passed"
exit $((failures > 0))
