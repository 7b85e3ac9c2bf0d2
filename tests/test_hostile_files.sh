#!/usr/bin/env bash
# Hostile files, not hostile bytes: every input flag refuses a FIFO at once
# (exit 2, one line) rather than waiting for a writer; a sparse 2 GB
# safetensors file with a bad header is refused in seconds without being
# read; a --tgt-npy that is read and then refused is freed (under the
# sanitizer build a leak turns exit 2 into a failure); the writers write
# through a symbolic link into the file it names and refuse a file of
# several hard links, leaving the link and the file as they were.  No GPU.
#   tests/test_hostile_files.sh KBENCH SOURCE_ROOT
source "$(dirname "$(realpath "$0")")/shell_test.sh" "$1"
src=$(realpath "$2")

# refused PATTERN ARGS...: kbench ARGS exits 2 with one stderr line matching
# PATTERN, within $limit seconds: opening a FIFO that nothing writes blocks
# for ever, so the timeout's 124 is what the old code gave.
limit=30
refused() {
    local pattern=$1
    shift
    timeout "$limit" "$kbench" "$@" >stdout 2>stderr
    local rc=$?
    [[ $rc -eq 2 && $(wc -l <stderr) -eq 1 ]] && grep -q -- "$pattern" stderr ||
        fail "kbench $* -> rc=$rc (want 2; 124 is a hang), stderr: $(cat stderr)"
}

small=(--d-model 16 --heads 2 --d-ff 24 --layers 2)
"$kbench" model encoder --cpu-only "${small[@]}" --out src.npy >/dev/null 2>&1 || fail "encoder --out src.npy"
"$kbench" model generate --cpu-only --d-model 32 --layers 1 --heads 2 --kv-heads 1 --d-ff 48 --vocab 97 \
    --save ckpt >/dev/null 2>&1 || fail "generate --save ckpt"
mkfifo fifo
mkdir cfg-fifo st-fifo
mkfifo cfg-fifo/config.json st-fifo/model.safetensors
cp ckpt/config.json st-fifo/

# A FIFO for each input flag.
refused "fifo: not a regular file" model generate --cpu-only --gguf fifo
refused "fifo: not a regular file" model tokenize --gguf fifo --text hi
refused "fifo: not a regular file" model seq2seq --cpu-only --weights fifo
refused "cfg-fifo/config.json: not a regular file" model generate --cpu-only --weights cfg-fifo
refused "st-fifo/model.safetensors: not a regular file" model generate --cpu-only --weights st-fifo
refused "fifo: not a regular file" model seq2seq --cpu-only "${small[@]}" --src-npy fifo --tgt-npy src.npy
refused "fifo: not a regular file" model seq2seq --cpu-only "${small[@]}" --src-npy src.npy --tgt-npy fifo
refused "fifo: not a regular file" model seq2seq --cpu-only "${small[@]}" --src "a b" --tgt "c" --vocab fifo
# The readers that refused a FIFO already, kept so.
refused "cannot read fifo: not a regular file" compare fifo fifo
refused "--append: cannot write fifo: not a regular file" model encoder --append fifo "${small[@]}"

# A target that is read whole and then refused (a model width of 32, not
# 16): freed, or LeakSanitizer fails the sanitizer build's exit code.
"$kbench" model encoder --cpu-only --d-model 32 --heads 2 --d-ff 24 --layers 1 --out wide.npy >/dev/null 2>&1 ||
    fail "encoder --out wide.npy"
refused "wide.npy: expected float32 (B, T, 16)" model seq2seq --cpu-only "${small[@]}" --src-npy src.npy \
    --tgt-npy wide.npy

# 2 GB that are all a hole but a header whose JSON is not JSON: reading the
# file before its header cost 2 GB of memory and half a minute; the header
# alone decides, in well under the limit.
{ printf '\x10\0\0\0\0\0\0\0'; printf 'not a header....'; } >sparse.safetensors
truncate -s 2G sparse.safetensors
limit=10 refused "sparse.safetensors: malformed header JSON at byte 8" model seq2seq --cpu-only --weights sparse.safetensors
if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -f %M -o rss "$kbench" model seq2seq --cpu-only --weights sparse.safetensors >/dev/null 2>&1
    (($(tail -1 rss) < 512 * 1024)) || fail "the sparse file's refusal peaked at $(tail -1 rss) KiB of memory"
fi

# derive: a run whose rows have raw timings only, so that derive changes it.
cat >run.csv <<'CSV'
# gpu: test
# ceiling_mem_gb_s: 3000.0
# ceiling_fp32_gflop_s: 60000.0
# ceiling_tc_gflop_s: 800000.0
# baseline_matmul: cublas
op,variant,dtype,math,shape,flops,bytes,median_ms,rel_stdev_pct,gflop_s,gb_s,speedup_x,pct_of_ceiling,pct_of_peak,bound,status,reason,mj_per_launch,gflop_per_j,gb_per_j
matmul,cublas,f32,f32,1024x1024x1024,2147483648,12582912,0.050000,0.5,,,,,,,PASS,,,,
matmul,torch,f32,f32,1024x1024x1024,2147483648,12582912,0.100000,0.5,,,,,,,PASS,,2.0,,
CSV
cp run.csv direct.csv
"$kbench" derive direct.csv || fail "derive direct.csv"
cmp -s run.csv direct.csv && fail "derive left its run as it was: the checks below prove nothing"
mkdir runs
cp run.csv runs/real.csv
ln -s runs/real.csv link.csv
"$kbench" derive link.csv || fail "derive link.csv"
[[ -L link.csv ]] || fail "derive replaced the symbolic link link.csv with a file"
cmp -s direct.csv runs/real.csv || fail "derive through a link did not rewrite the file it names"
ls runs/real.csv.tmp.* link.csv.tmp.* >/dev/null 2>&1 && fail "derive left a temporary file"
cp run.csv hard.csv
ln hard.csv hard2.csv
refused "cannot write hard.csv: it has 2 hard links" derive hard.csv
cmp -s run.csv hard.csv && [[ $(stat -c %h hard.csv) -eq 2 ]] || fail "derive touched a file of two hard links"
ln -s nowhere.csv dangling.csv
refused "cannot read dangling.csv" derive dangling.csv
[[ -L dangling.csv && ! -e nowhere.csv ]] || fail "derive wrote through a link to no file"

# report --readme, through a link from another folder and into a hard link.
cp "$src"/results/h200/*.csv h200.csv
printf 'intro\n<!-- report:begin -->\nold\n<!-- report:end -->\n' >readme.md
cp readme.md docs-readme.md
ln -s ../docs-readme.md runs/README.md
if "$kbench" report h200.csv --readme readme.md >/dev/null 2>&1; then
    "$kbench" report h200.csv --readme runs/README.md || fail "report --readme through a link"
    [[ -L runs/README.md ]] || fail "report --readme replaced the symbolic link with a file"
    cmp -s readme.md docs-readme.md || fail "report --readme through a link did not rewrite the file it names"
    printf 'intro\n<!-- report:begin -->\nold\n<!-- report:end -->\n' >hard.md
    ln hard.md hard2.md
    refused "cannot write hard.md: it has 2 hard links" report h200.csv --readme hard.md
    grep -q '^old$' hard.md || fail "report --readme touched a file of two hard links"
else
    fail "report h200.csv --readme readme.md: no table to write"
fi

# The CSV writers, checked before any work: a hard link and a link to
# nothing are refused (no GPU: a link to a file passes the check, exit 1).
refused "cannot write hard.csv: it has 2 hard links" run --op copy --sizes 1 --csv hard.csv
ln -s no/such.csv dangling-out.csv
refused "cannot write dangling-out.csv: a symbolic link to no file" run --op copy --sizes 1 --csv dangling-out.csv
cp run.csv out-real.csv
ln -s out-real.csv out-link.csv
CUDA_VISIBLE_DEVICES= timeout "$limit" "$kbench" run --op copy --sizes 1 --csv out-link.csv >/dev/null 2>&1
[[ -L out-link.csv ]] && cmp -s run.csv out-real.csv || fail "run --csv's check touched the link or its file"
# model's outputs, checked before its work the same way.
refused "--out: cannot write hard.csv: it has 2 hard links" model encoder --cpu-only "${small[@]}" --out hard.csv
refused "--csv: cannot write dangling-out.csv: a symbolic link to no file" model encoder "${small[@]}" \
    --csv dangling-out.csv

[[ $failures -eq 0 ]] && echo "all hostile-file checks passed"
exit $((failures > 0))
