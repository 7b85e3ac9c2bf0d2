#!/usr/bin/env bash
# kbench compare: verdicts, exit codes and bad input, on small hand-written
# CSVs.  No GPU is needed.
source "$(dirname "$(realpath "$0")")/shell_test.sh" "$1"

header=op,variant,dtype,math,shape_fields,shape,d1,d2,d3,d4,d5,d6,flops,bytes,median_ms,min_ms,max_ms,rel_stdev_pct,samples,gflop_s,gb_s,speedup_x,max_abs_err,rel_l2_err,tol_at_max_err,rows_checked,rows_total,l2,status,reason

# csv FILE GPU ROW...: each ROW is "VARIANT SHAPE MEDIAN_MS NOISE_PCT STATUS";
# MEDIAN_MS and NOISE_PCT are '-' for rows without timing.
csv() {
    local file=$1 gpu=$2 row v s m n st
    shift 2
    {
        printf '# gpu: %s\n# git_commit: abc123\n%s\n' "$gpu" "$header"
        for row in "$@"; do
            read -r v s m n st <<<"$row"
            [[ $m == - ]] && m= && n=
            printf 'matmul,%s,f32,f32,MxNxK,%s,8,8,8,,,,1024,768,%s,%s,%s,%s,5,,,,,,,,,cold,%s,\n' \
                "$v" "$s" "$m" "$m" "$m" "$n" "$st"
        done
    } >"$file"
}

# compare CODE BASE NEW [ARGS...]: run it, check the exit code; output in out.
compare() {
    local code=$1
    shift
    expect_rc "$code" compare "$@"
}

expect_out() { # expect_out PATTERN: the last compare printed a line matching it
    grep -q -- "$1" out || fail "no line matching '$1' in: $(cat out)"
}

# bad_input PATTERN ARGS...: exit 2 and exactly one stderr line matching.
bad_input() {
    local pattern=$1
    shift
    compare 2 "$@"
    [[ $(wc -l <err) -eq 1 ]] && grep -q -- "$pattern" err ||
        fail "compare $*: want one stderr line matching '$pattern', got: $(cat err)"
}

gpu="NVIDIA H100 80GB HBM3"
base_rows=("naive 64x64x64 1.000 0.5 PASS" "tiled 64x64x64 0.500 0.5 PASS"
           "broken 64x64x64 - - FAIL" "huge 64x64x64 - - SKIP")
csv base.csv "$gpu" "${base_rows[@]}"

# Identical files: every timed row SAME, both-FAIL and both-SKIP rows keep
# their status and get no verdict.
compare 0 base.csv base.csv
expect_out "summary: 0 FASTER, 0 SLOWER, 2 SAME, 0 FAIL, 0 only in one file"
expect_out "^matmul naive .* SAME$"
grep -q "broken .* FAIL  *FAIL  *- *$" out || fail "both-FAIL row: $(cat out)"
grep -q "huge .* SKIP  *SKIP  *- *$" out || fail "both-SKIP row: $(cat out)"

# A 20% slowdown with low noise.
csv slow.csv "$gpu" "naive 64x64x64 1.200 0.5 PASS" "${base_rows[@]:1}"
compare 1 base.csv slow.csv
expect_out "^matmul naive .* 1.200  SLOWER$"

# The same 20% inside 30% noise is no verdict of change.
csv noisy.csv "$gpu" "naive 64x64x64 1.200 30 PASS" "${base_rows[@]:1}"
compare 0 base.csv noisy.csv
expect_out "^matmul naive .* SAME$"

# A 20% slowdown below a 25% threshold.
compare 0 base.csv slow.csv --threshold 25
expect_out "^matmul naive .* SAME$"

# A speedup.
csv fast.csv "$gpu" "${base_rows[0]}" "tiled 64x64x64 0.250 0.5 PASS" "${base_rows[@]:2}"
compare 0 base.csv fast.csv
expect_out "^matmul tiled .* FASTER$"
expect_out "summary: 1 FASTER, 0 SLOWER, 1 SAME,"

# A variant that passed and now fails.
csv broke.csv "$gpu" "naive 64x64x64 - - FAIL" "${base_rows[@]:1}"
compare 1 base.csv broke.csv
expect_out "^matmul naive .* FAIL$"
expect_out "summary: 0 FASTER, 0 SLOWER, 1 SAME, 1 FAIL,"

# A row only in NEW is listed, and changes nothing in the exit code.
csv more.csv "$gpu" "${base_rows[@]}" "wgmma 64x64x64 0.100 0.5 PASS"
compare 0 base.csv more.csv
expect_out "^only in new: matmul wgmma "
expect_out ", 1 only in one file$"

# Different GPUs are announced.
csv other.csv "NVIDIA A100-SXM4-40GB" "${base_rows[@]}"
compare 0 base.csv other.csv
expect_out "different GPUs"

# Columns are found by name, not position.
awk -F, -v OFS=, '/^#/ { print; next } { t = $1; $1 = $2; $2 = t; print }' base.csv >swapped.csv
compare 0 base.csv swapped.csv
expect_out "summary: 0 FASTER, 0 SLOWER, 2 SAME, 0 FAIL, 0 only in one file"

# Bad input: exit 2, one line on stderr.
printf 'hello, world\nnot a csv\n' >notes.txt
bad_input "notes.txt is not a kbench CSV" base.csv notes.txt
: >empty.csv
bad_input "empty.csv is not a kbench CSV (no header line)" empty.csv base.csv
sed 's/,median_ms,/,med,/' base.csv >renamed.csv
bad_input "no 'median_ms' column" base.csv renamed.csv
bad_input "cannot read missing.csv" base.csv missing.csv
bad_input "usage: kbench compare" base.csv
bad_input "usage: kbench compare" base.csv base.csv base.csv
bad_input "--threshold needs a percentage" base.csv base.csv --threshold
bad_input "--threshold needs a percentage" base.csv base.csv --threshold -1
bad_input "--threshold needs a percentage" base.csv base.csv --threshold 5x
# The refusal states the range enforced, and its top is inside it.
bad_input "--threshold needs a percentage from 0 to 1000000, got '1e7'" base.csv base.csv --threshold 1e7
bad_input "--threshold needs a percentage from 0 to 1000000, got '+5'" base.csv base.csv --threshold +5
compare 0 base.csv base.csv --threshold 1e6
# A CSV that a spreadsheet saved with a UTF-8 byte-order mark is the same CSV.
{ printf '\xef\xbb\xbf'; cat base.csv; } >bom.csv
compare 0 base.csv bom.csv
compare 0 bom.csv base.csv
bad_input "unknown option '--fast'" base.csv base.csv --fast

# Timing cells are finite decimals above zero (a spread may be zero); the
# error names the file, line and column.
for bad in nan -1 0 0x10 inf 1e999 -0 1e-999; do
    csv bad.csv "$gpu" "naive 64x64x64 $bad 0.5 PASS"
    bad_input "bad.csv:4: median_ms (column 15) is '$bad', not a finite decimal above 0" base.csv bad.csv
done
csv bad.csv "$gpu" "naive 64x64x64 1.0 -1 PASS"
bad_input "bad.csv:4: rel_stdev_pct (column 18) is '-1', not a finite decimal >= 0" base.csv bad.csv
csv bad.csv "$gpu" "naive 64x64x64 1.0 nan PASS"
bad_input "bad.csv:4: rel_stdev_pct (column 18) is 'nan'" bad.csv base.csv
csv calm.csv "$gpu" "naive 64x64x64 1.000 0 PASS" "${base_rows[@]:1}"
compare 0 base.csv calm.csv
sed '4s/,1.000,1.000,/,1.000,-2,/' base.csv >bad.csv
bad_input "bad.csv:4: min_ms (column 16) is '-2'" base.csv bad.csv

# A NUL byte no longer ends the file early and silently.
{ cat base.csv; printf 'matmul,x\0y\n'; } >nul.csv
bad_input "nul.csv:8: a NUL byte at column 9" base.csv nul.csv

# Files that are not regular, or too large, are refused before reading
# (/dev/zero once ran until memory ran out; a FIFO waits for a writer).
mkfifo fifo.csv
for f in /dev/zero fifo.csv .; do
    timeout 5 "$kbench" compare base.csv "$f" >out 2>err
    rc=$?
    [[ $rc -eq 2 && $(wc -l <err) -eq 1 ]] && grep -q "cannot read $f: not a regular file" err ||
        fail "compare base.csv $f -> rc=$rc: $(cat err)"
done
truncate -s 257M big.csv
bad_input "cannot read big.csv: larger than 256 MiB" base.csv big.csv

# A row of more than 256 fields says so.
{ cat base.csv; printf 'x%.0s,' {1..300}; echo; } >wide.csv
bad_input "wide.csv:8: more than 256 fields, the header has 30" base.csv wide.csv

# Untrusted text stays on one line: paths, fields and metadata are escaped,
# and key cells with control characters are refused.
bad_input "cannot read mis[\\]x0asing.csv" base.csv $'mis\nsing.csv'
csv bad.csv "$gpu" $'na\eive 64x64x64 1.0 0.5 PASS'
bad_input "bad.csv:4: variant (column 2) holds control character 0x1b" base.csv bad.csv
sed '4s/,PASS,/,PA\x1bSS,/' base.csv >bad.csv
bad_input "bad.csv:4: unknown status 'PA[\\]x1bSS'" base.csv bad.csv
csv esc.csv $'\e[31mred\rGPU' "${base_rows[@]}"
compare 0 base.csv esc.csv
expect_out "gpu [\\]x1b\[31mred[\\]x0dGPU, commit"
LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f]' out && fail "control characters in the report: $(cat -v out)"
bad_input "--threshold needs a percentage" base.csv base.csv --threshold 0x10
bad_input "--threshold needs a percentage" base.csv base.csv --threshold nan

# CRLF line ends still read.
sed 's/$/\r/' base.csv >crlf.csv
compare 0 base.csv crlf.csv
expect_out "summary: 0 FASTER, 0 SLOWER, 2 SAME, 0 FAIL, 0 only in one file"

# Matching by key: duplicate keys pair up in file order; l2 joins the key
# only when both files have the column.
csv dup.csv "$gpu" "naive 64x64x64 1.000 0.5 PASS" "naive 64x64x64 2.000 0.5 PASS"
csv dup2.csv "$gpu" "naive 64x64x64 1.000 0.5 PASS" "naive 64x64x64 2.000 0.5 PASS"
compare 0 dup.csv dup2.csv
expect_out "summary: 0 FASTER, 0 SLOWER, 2 SAME, 0 FAIL, 0 only in one file"
awk -F, -v OFS=, '/^#/ { print; next } { $28 = $28 == "l2" ? "l2" : "hot"; print }' base.csv >hot.csv
compare 0 base.csv hot.csv
expect_out ", 8 only in one file$"
cut -d, -f1-27,29- base.csv >nol2.csv
compare 0 hot.csv nol2.csv
expect_out "summary: 0 FASTER, 0 SLOWER, 2 SAME, 0 FAIL, 0 only in one file"

# Clocks: rows whose clock_mhz differ by more than 3% are listed under one
# warning line; a file without the column, or an empty cell, says nothing.
with_clocks() { # with_clocks IN OUT MHZ...: one clock per row, in order
    local in=$1 out=$2 IFS=:
    shift 2
    awk -F, -v OFS=, -v clocks="$*" 'BEGIN { split(clocks, c, ":") }
        /^#/ { print; next } !h++ { print $0, "clock_mhz"; next } { print $0, c[++n] }' "$in" >"$out"
}
with_clocks base.csv clk1.csv 1980 1980 "" ""
with_clocks base.csv clk2.csv 1900 1930 "" ""
compare 0 clk1.csv clk1.csv
grep -q warning out && fail "warning for equal clocks: $(cat out)"
compare 0 clk1.csv clk2.csv
expect_out "^warning: 1 row ran at SM clocks more than 3% apart"
expect_out "^  matmul naive .*  1980 MHz -> 1900 MHz$"
grep -q "^  matmul tiled" out && fail "tiled's 2.5% listed: $(cat out)"
compare 0 base.csv clk2.csv
grep -q warning out && fail "warning without base clocks: $(cat out)"
with_clocks base.csv clk3.csv "" 1500 "" ""
compare 0 clk3.csv clk2.csv
expect_out "^warning: 1 row ran"
expect_out "^  matmul tiled .*  1500 MHz -> 1930 MHz$"
with_clocks base.csv bad.csv 1980 fast "" ""
bad_input "bad.csv:5: clock_mhz (column 31) is 'fast', not a finite decimal >= 0" clk1.csv bad.csv

# The GPU joins the key: a --replicate run has each row once per GPU, and a
# file without the devices column (or an empty cell) is GPU 0's.
{ printf '# gpu: %s\nop,variant,dtype,shape,median_ms,rel_stdev_pct,status,devices\n' "$gpu"
  printf 'matmul,naive,f32,64x64x64,1.000,0.5,PASS,0\nmatmul,naive,f32,64x64x64,2.000,0.5,PASS,1\n'
  printf 'matmul,tiled,f32,64x64x64,0.500,0.5,PASS,\nmatmul,tp,f32,64x64x64,0.300,0.5,PASS,0+1\n'; } >gpus.csv
compare 0 base.csv gpus.csv
expect_out "summary: 0 FASTER, 0 SLOWER, 2 SAME, 0 FAIL, 4 only in one file"
expect_out "^op  *variant  *dtype  *shape  *gpu  *base_ms"
expect_out "^matmul naive  *f32   64x64x64 0  *1.0000  *1.0000 .* SAME$"
expect_out "^only in new: matmul naive  *f32   64x64x64 1  *PASS$"
expect_out "^only in new: matmul tp  *f32   64x64x64 0+1  *PASS$"
compare 0 gpus.csv gpus.csv
expect_out "summary: 0 FASTER, 0 SLOWER, 4 SAME, 0 FAIL, 0 only in one file"
# Runs on GPU 0 alone show no gpu column, as before --devices.
compare 0 base.csv base.csv
grep -q " gpu  *base_ms" out && fail "a gpu column without other GPUs: $(cat out)"

# --help: the usage on stdout, exit 0.
compare 0 --help
expect_out "^usage: kbench compare BASE.csv NEW.csv"
compare 0 base.csv -h
expect_out "^usage: kbench compare"

# Scale: 40k x 40k rows match in linear time.  NEW lists the rows in
# reverse, so quadratic matching scans half the file per row (27 s).
big_csv() { # big_csv FILE MS FIRST STEP: 40000 distinct shapes, each MS long
    { printf '# gpu: %s\n%s\n' "$gpu" "$header"
      awk -v ms="$2" -v first="$3" -v step="$4" 'BEGIN { for (k = 0; k < 40000; ++k) { i = first + step * k
          printf "matmul,naive,f32,f32,MxNxK,64x64x%d,64,64,%d,,,,1,1,%s,%s,%s,0.5,5,,,,,,,,,cold,PASS,\n", i, i, ms, ms, ms } }'
    } >"$1"
}
big_csv scale1.csv 1.000 1 1
big_csv scale2.csv 1.001 40000 -1
start=$(date +%s%N)
timeout 20 "$kbench" compare scale1.csv scale2.csv >out 2>err
rc=$? ms=$((($(date +%s%N) - start) / 1000000))
[[ $rc -eq 0 ]] && grep -q "summary: 0 FASTER, 0 SLOWER, 40000 SAME, 0 FAIL, 0 only" out ||
    fail "40k-row compare -> rc=$rc: $(tail -1 out) $(cat err)"
((ms < 5000)) || fail "40k-row compare took $ms ms (quadratic matching?)"

[[ $failures -eq 0 ]] && echo "all compare checks passed"
exit $((failures > 0))
