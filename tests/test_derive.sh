#!/usr/bin/env bash
# kbench derive: a run's derived columns computed again from its raw ones,
# by the sweep's own functions.  Peer rows with raw timings only get their
# GFLOP/s, GB/s, speedup over their dtype's baseline, roofline percentages
# and bound; the committed reference run's own rows come out as the sweep
# wrote them (to the rounding of the median in the file); bad input exits 2
# with one line and leaves the file alone.  No GPU.
#   tests/test_derive.sh KBENCH SOURCE_ROOT
source "$(dirname "$(realpath "$0")")/shell_test.sh" "$1"
src=$(realpath "$2")

cell() { # cell FILE VARIANT DTYPE COLUMN: that row's cell
    awk -F, -v v="$2" -v d="$3" -v c="$4" '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) k[$i] = i; next }
        $k["variant"] == v && $k["dtype"] == d { print $k[c]; exit }' "$1"
}

# Ceilings: 3000 GB/s, 60000 GFLOP/s fp32, 800000 bf16.  The torch rows carry
# raw timings only, as the peer scripts now write them.
cat >run.csv <<'CSV'
# gpu: test
# ceiling_mem_gb_s: 3000.0
# ceiling_fp32_gflop_s: 60000.0
# ceiling_tc_gflop_s: 800000.0
# datasheet_mem_gb_s: 3350.0
# datasheet_fp32_gflop_s: 67000.0
# datasheet_tc_gflop_s: 1000000.0
# baseline_matmul: cublas
# baseline_bf16_matmul: cublas
op,variant,dtype,math,shape,flops,bytes,median_ms,rel_stdev_pct,gflop_s,gb_s,speedup_x,pct_of_ceiling,pct_of_peak,bound,status,reason,mj_per_launch,gflop_per_j,gb_per_j
matmul,cublas,f32,f32,1024x1024x1024,2147483648,12582912,0.050000,0.5,,,,,,,PASS,,,,
matmul,cublas,bf16,bf16,1024x1024x1024,2147483648,6291456,0.005000,0.5,,,,,,,PASS,,,,
matmul,torch,f32,f32,1024x1024x1024,2147483648,12582912,0.100000,0.5,,,,,,,PASS,,2.0,,
matmul,torch,bf16,bf16,1024x1024x1024,2147483648,6291456,0.010000,0.5,,,,,,,PASS,,,,
matmul,broken,f32,f32,1024x1024x1024,2147483648,12582912,,,,,,,,,FAIL,"wrong, by far",,,
CSV
expect_rc 0 derive run.csv
[[ -s out || -s err ]] && fail "derive printed: $(cat out err)"
[[ $(cell run.csv torch f32 gflop_s) == 21474.836 ]] || fail "f32 torch gflop_s $(cell run.csv torch f32 gflop_s)"
[[ $(cell run.csv torch f32 gb_s) == 125.829 ]] || fail "f32 torch gb_s $(cell run.csv torch f32 gb_s)"
# Against its own dtype's baseline: cublas for f32, cublas for bf16.
[[ $(cell run.csv torch f32 speedup_x) == 0.5000 ]] || fail "f32 torch speedup $(cell run.csv torch f32 speedup_x)"
[[ $(cell run.csv torch bf16 speedup_x) == 0.5000 ]] || fail "bf16 torch speedup $(cell run.csv torch bf16 speedup_x)"
# 21.5 TFLOP/s of fp32 on a 60 TFLOP/s ceiling (intensity 171 is above the
# fp32 ridge of 20): compute-bound at 35.8%; bf16 214.7 of 800: 26.8%.
[[ $(cell run.csv torch f32 bound),$(cell run.csv torch f32 pct_of_peak) == compute,35.8 ]] ||
    fail "f32 torch roofline $(cell run.csv torch f32 bound),$(cell run.csv torch f32 pct_of_peak)"
[[ $(cell run.csv torch bf16 pct_of_peak) == 26.8 ]] || fail "bf16 torch pct_of_peak $(cell run.csv torch bf16 pct_of_peak)"
[[ $(cell run.csv torch f32 pct_of_ceiling) == 4.2 ]] || fail "f32 torch pct_of_ceiling $(cell run.csv torch f32 pct_of_ceiling)"
# 2 mJ a launch of 2.147 GFLOP: 1073.742 GFLOP/J.
[[ $(cell run.csv torch f32 gflop_per_j) == 1073.742 ]] || fail "gflop_per_j $(cell run.csv torch f32 gflop_per_j)"
# The baseline is its own baseline; a FAIL row keeps its empty cells and its quoted reason.
[[ $(cell run.csv cublas f32 speedup_x) == 1.0000 ]] || fail "baseline speedup $(cell run.csv cublas f32 speedup_x)"
grep -q '^matmul,broken,f32,f32,1024x1024x1024,2147483648,12582912,,,,,,,,,FAIL,"wrong, by far",,,$' run.csv ||
    fail "FAIL row changed: $(grep broken run.csv)"
[[ $(grep -c '^# ' run.csv) == 9 ]] || fail "metadata lost: $(head -10 run.csv)"
cp run.csv once.csv
expect_rc 0 derive run.csv
cmp -s run.csv once.csv || fail "a second derive changed the file: $(diff once.csv run.csv)"

# The reference run's own rows: every derived cell as the sweep wrote it, to
# the rounding of the median (6 decimals in the file); derive may fill cells
# a writer left empty (the model's rows have no roofline figures).
ref=$(ls "$src"/results/*/*.csv 2>/dev/null | head -1)
if [[ -n $ref ]]; then
    cp "$ref" ref.csv
    expect_rc 0 derive ref.csv
    awk -F, 'FNR == 1 { file++ } /^#/ { next }
        file == 1 { if (!h1++) { for (i = 1; i <= NF; i++) k[$i] = i } else orig[++n] = $0; next }
        !h2++ { next }
        { split(orig[++m], a, ",") }
        a[k["variant"]] == "torch" { next }
        { split("gflop_s gb_s speedup_x pct_of_ceiling pct_of_peak gflop_per_j gb_per_j", names, " ")
          for (j in names) { c = k[names[j]]; x = a[c]; y = $c
              if (x != "" && (y == "" || x - y > 1e-4 * x + 0.1 || y - x > 1e-4 * x + 0.1))
                  { print "row " m ": " names[j] " " x " -> " y; bad++ } }
          if (a[k["bound"]] != "" && a[k["bound"]] != $k["bound"]) { print "row " m ": bound " a[k["bound"]] " -> " $k["bound"]; bad++ } }
        END { exit bad > 0 }' "$ref" ref.csv >diffs || fail "derive disagrees with the sweep: $(head -5 diffs)"
fi

# Bad input: one line, exit 2, the file untouched.
cp run.csv before.csv
expect_rc 2 derive
expect_rc 2 derive run.csv other.csv
expect_rc 2 derive missing.csv
grep -q "missing.csv" err || fail "missing file: $(cat err)"
sed 's/^op,variant,dtype,math,shape,flops,/op,variant,dtype,math,shape,work,/' run.csv >noflops.csv
expect_rc 2 derive noflops.csv
grep -q "no 'flops' column" err && [[ $(wc -l <err) == 1 ]] || fail "no flops column: $(cat err)"
sed 's/^matmul,torch,f32,f32,/matmul,torch,f32,f64,/' run.csv >badmath.csv
expect_rc 2 derive badmath.csv
grep -q "unknown math" err || fail "bad math: $(cat err)"
# A CR inside a line would not read back the same (fuzz_csv found it).
sed 's/^# gpu: test$/# gpu: te\rst/' run.csv >cr.csv
expect_rc 2 derive cr.csv
grep -q "control character" err || fail "CR in metadata: $(cat err)"
# CRs before the header's end: a read strips one, so each derive ate one
# more (fuzz_csv found it, with the header the file's last line).
sed '/^op,variant,/s/$/\r\r/' run.csv >crs.csv
cp crs.csv crs-before.csv
expect_rc 2 derive crs.csv
grep -q "header's column 20 holds a control character" err && [[ $(wc -l <err) == 1 ]] ||
    fail "CRs in the header: $(cat err)"
cmp -s crs.csv crs-before.csv || fail "a refused derive changed its file"
cmp -s run.csv before.csv || fail "a failed derive changed another file"
expect_rc 0 derive --help
grep -q "usage: kbench derive" out || fail "--help: $(cat out)"
ls ./*.tmp.* >/dev/null 2>&1 && fail "temporary file left behind"

# The access mix: with read and write ceilings in the header, a softmax row
# (half its bytes written) sits under the copy's 3000 GB/s, and a
# memory-bound matmul of a narrow output (4096x8x4096: 0.2% written) under
# the read ceiling's 3600, so the 3300 GB/s it moved is under 100%.
cat >mix.csv <<'CSV'
# gpu: test
# ceiling_mem_gb_s: 3000.0
# ceiling_read_gb_s: 3600.0
# ceiling_write_gb_s: 2800.0
# ceiling_fp32_gflop_s: 60000.0
# datasheet_mem_gb_s: 3350.0
# datasheet_fp32_gflop_s: 67000.0
op,variant,dtype,math,shape,flops,bytes,median_ms,rel_stdev_pct,gflop_s,gb_s,speedup_x,pct_of_ceiling,pct_of_peak,bound,status,reason,mj_per_launch,gflop_per_j,gb_per_j
softmax,torch,f32,f32,4096x4096,83886080,134217728,0.044739,0.5,,,,,,,PASS,,,,
matmul,torch,f32,f32,4096x8x4096,268435456,134479872,0.040751,0.5,,,,,,,PASS,,,,
CSV
expect_rc 0 derive mix.csv
[[ $(awk -F, '$1 == "softmax" { print $14 }' mix.csv) == 100.0 ]] || fail "softmax's pct_of_peak: $(grep ^softmax mix.csv)"
mm_pct=$(awk -F, '$1 == "matmul" { print $14 }' mix.csv) mm_ceil=$(awk -F, '$1 == "matmul" { print $13 }' mix.csv)
awk -v p="$mm_pct" -v c="$mm_ceil" 'BEGIN { exit !(p > 91 && p < 92 && c > 109) }' ||
    fail "the narrow matmul's pct_of_peak $mm_pct (want 91.7, under the read ceiling), pct_of_ceiling $mm_ceil"

[[ $failures -eq 0 ]] && echo "derive passed"
exit $((failures > 0))
