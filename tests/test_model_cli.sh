#!/usr/bin/env bash
# `kbench model` without a GPU: bad input gets exit 2 and one line naming the
# problem; --cpu-only runs the C reference and writes its output as .npy,
# which reads back as input; seeds, the causal mask and text inputs change
# the output as they should; with no GPU the GPU path says so and exits 1.
source "$(dirname "$(realpath "$0")")/shell_test.sh" "$1"

expect() { expect_line "$1" "$2" model "${@:3}"; } # expect CODE PATTERN ARGS...

run_cpu() { # run_cpu OUT.npy ARGS...: a --cpu-only run that must succeed
    local out=$1
    shift
    "$kbench" model "$@" --cpu-only --out "$out" >stdout 2>stderr || fail "kbench model $* --cpu-only: $(cat stderr)"
}

small=(--d-model 16 --heads 2 --d-ff 24 --layers 2)
expect 2 "needs a mode"
expect 2 "unknown model 'gpt'" gpt
expect 2 "unknown option '--frob'" seq2seq --frob
expect 2 "no attention variant 'nope' (see kbench list)" seq2seq --attention nope
expect 2 "attention 'flash_mma' stores bf16; the model runs in fp32" encoder --attention flash_mma
expect 2 "no add_layernorm variant 'welford'" decoder --add-norm welford
expect 2 "no layernorm variant 'fused'" seq2seq --norm fused
expect 2 "--norm picks the final norms' variant, which only seq2seq has" encoder --norm warp
expect 2 "--attention needs a value" seq2seq --attention
expect 2 "attention flash_3xtf32 at the model's shape: D must be a multiple of 8" encoder --heads 128 --attention flash_3xtf32
expect 2 "--batch needs an integer" seq2seq --batch 0
expect 2 "--heads needs an integer" seq2seq --heads x
expect 2 "not a multiple of --heads 4" seq2seq --d-model 10 --heads 4
expect 2 "unknown --gemm 'bf16'" seq2seq --gemm bf16
expect 2 "encoder reads no target" encoder --tgt-len 5
expect 2 "needs both --src and --tgt" seq2seq --src "a b"
expect 2 "needs both --src-npy and --tgt-npy" decoder --src-npy x.npy
expect 2 "not both" seq2seq --src a --tgt b --src-npy x.npy --tgt-npy y.npy
expect 2 "use it with seq2seq" encoder --weights w.safetensors
expect 2 "drop --d-model" seq2seq --weights w.safetensors --d-model 8
expect 2 "applies to the decoder" encoder --no-causal
expect 2 "drop --batch" seq2seq --src a --tgt b --batch 2
expect 2 "over 2^30 tokens" seq2seq --batch 65536 --src-len 65536
expect 2 "missing.safetensors: cannot open" seq2seq --weights missing.safetensors
head -c 100 /dev/urandom >junk.safetensors
expect 2 "junk.safetensors" seq2seq --weights junk.safetensors
expect 2 "missing.npy: cannot open" seq2seq --src-npy missing.npy --tgt-npy missing.npy
expect 2 "holds no tokens" encoder --src "   " "${small[@]}"

# Hostile command lines: sizes that overflow or exceed the host, values that
# would wrap or are not numbers, empty lists, control characters.  Each gets
# exit 2 and one line before any work.
expect 2 "make over 2^40 weights" encoder --cpu-only --batch 1 --src-len 1 --d-model 1898672 --d-ff 107388880 \
    --layers 32768
expect 2 "--d-model 1073741824, --d-ff 1 and --layers 1 make over 2^40 weights" encoder --cpu-only --batch 1 \
    --src-len 1 --d-model 1073741824 --heads 1 --d-ff 1
expect 2 "--d-ff defaults to 4 x --d-model" encoder --cpu-only --d-model 1073741824 --heads 1
expect 2 "GiB of host memory; this host has" encoder --cpu-only --batch 1 --src-len 1 --d-model 131072 --d-ff 131072 \
    --layers 8
expect 2 "at width 2048 (--d-model, --d-ff) are over 2^40 activations" encoder --cpu-only --batch 1024 \
    --src-len 1048576 --d-model 64 --d-ff 2048
expect 2 "--seed needs an integer from 0 to 2^64-1, got '-1'" seq2seq --seed -1
# The stop rule's flags, refused as kbench run refuses them.
expect 2 "--max-time needs seconds in (0, 3600\], got 'nan'" seq2seq --max-time nan
expect 2 "--max-time needs seconds" seq2seq --max-time inf
expect 2 "--max-noise needs a percentage from 0.01 to 100, got '0'" seq2seq --max-noise 0
expect 2 "--max-noise needs a percentage from 0.01 to 100, got '101'" encoder --max-noise 101
expect 2 "--min-samples needs an integer from 3 to 2000, got '2'" encoder --min-samples 2
expect 2 "--min-samples needs an integer from 3 to 2000, got '2.5'" decoder --min-samples 2.5
expect 2 "--min-samples needs a value" encoder --min-samples
# The number grammar of every command: digits only for integers, and the
# refusal quotes the value and states the range.
for bad in ' 8' $'\n8' +8 1e3 3.0; do
    expect 2 "--heads needs an integer from 1 to 1073741824, got '" encoder --heads "$bad"
    expect 2 "--seed needs an integer from 0 to 2^64-1, got '" encoder --seed "$bad"
    expect 2 "--device needs an integer from 0 to 1024, got '" encoder --device "$bad"
    expect 2 "--min-samples needs an integer from 3 to 2000, got '" encoder --min-samples "$bad"
done
expect 2 "--max-time needs seconds in (0, 3600\], got '0'" encoder --max-time 0
expect 2 "--max-time needs seconds in (0, 3600\], got '0x1p-3'" encoder --max-time 0x1p-3
expect 2 "--gemm names 'fp32' twice" seq2seq --gemm fp32,3xtf32,fp32
expect 2 "--gemm needs at least one of fp32, 3xtf32" seq2seq --gemm ,
expect 2 "--gemm needs at least one of fp32, 3xtf32" seq2seq --gemm fp32,
expect 2 "unknown model 'gpt.x0a.x1b\[2J'" $'gpt\n\e[2J'
expect 2 "unknown option '--x.x0ay'" seq2seq $'--x\ny'

# Outputs are checked before the reference runs: --out, --csv, --out-dir,
# --append (which must be an existing kbench CSV).
echo "not,a,kbench,csv" >junk.csv
tiny=(--batch 1 --src-len 2 "${small[@]}")
expect 2 "--out 'no/such/out.npy' cannot be written" encoder --cpu-only --out no/such/out.npy "${tiny[@]}"
expect 2 "--out: cannot write .: not a regular file" encoder --cpu-only --out . "${tiny[@]}"
expect 2 "--csv 'no/such/r.csv' cannot be written" encoder --csv no/such/r.csv "${tiny[@]}"
expect 2 "--out-dir 'junk.csv' is not a directory" encoder --out-dir junk.csv "${tiny[@]}"
expect 2 "--append 'missing.csv' does not exist" encoder --append missing.csv "${tiny[@]}"
expect 2 "--append: cannot write /dev/zero: not a regular file" encoder --append /dev/zero "${tiny[@]}"
expect 2 "junk.csv is not a kbench CSV" encoder --append junk.csv "${tiny[@]}"
expect 2 "--cpu-only writes no CSV" encoder --cpu-only --csv r.csv "${tiny[@]}"
[[ -e r.csv || -e no ]] && fail "a refused output was written"

# The reference's output reads back as input: an encoder's (B, Ts, d) output
# is a valid source for seq2seq, and the shapes come from the files.
run_cpu enc.npy encoder --batch 3 --src-len 5 "${small[@]}"
run_cpu dec.npy decoder --batch 3 --src-len 5 --tgt-len 4 "${small[@]}"
grep -q "(3, 5, 16)" enc.npy || fail "encoder output is not (3, 5, 16)"
grep -q "(3, 4, 16)" dec.npy || fail "decoder output is not (3, 4, 16)"
run_cpu s2s.npy seq2seq --src-npy enc.npy --tgt-npy dec.npy "${small[@]}"
grep -q "(3, 4, 16)" s2s.npy || fail "seq2seq output is not (3, 4, 16)"
expect 2 "expected float32 (B, T, 8)" seq2seq --src-npy enc.npy --tgt-npy dec.npy --d-model 8 --heads 2
# NaN or Inf in an input is refused naming the file, not run to a NaN output.
cp enc.npy nan.npy
printf '\x00\x00\xc0\x7f' | dd of=nan.npy bs=1 seek=$(($(stat -c %s nan.npy) - 4)) conv=notrunc 2>/dev/null
expect 2 "nan.npy: holds NaN or Inf (element 239)" seq2seq --src-npy nan.npy --tgt-npy dec.npy "${small[@]}" --cpu-only

# Same seed, same output; another seed or the mask off, another output.
run_cpu a.npy seq2seq --batch 2 --src-len 5 --tgt-len 4 "${small[@]}"
run_cpu b.npy seq2seq --batch 2 --src-len 5 --tgt-len 4 "${small[@]}"
run_cpu c.npy seq2seq --batch 2 --src-len 5 --tgt-len 4 "${small[@]}" --seed 2
run_cpu d.npy seq2seq --batch 2 --src-len 5 --tgt-len 4 "${small[@]}" --no-causal
cmp -s a.npy b.npy || fail "the same seed gave different outputs"
cmp -s a.npy c.npy && fail "another seed gave the same output"
cmp -s a.npy d.npy && fail "--no-causal gave the causal output"
# Other kernels by name are accepted; --cpu-only runs none of them, so the
# output is the same and no `kernels:` line is printed.
run_cpu k.npy seq2seq --batch 2 --src-len 5 --tgt-len 4 "${small[@]}" --attention cublas --add-norm unfused --norm warp
cmp -s a.npy k.npy || fail "--cpu-only with other kernels gave another output"
grep -q "^kernels:" stdout && fail "--cpu-only printed the GPU's kernels: $(cat stdout)"

# Text goes through the tokenizer: one sequence, a token each word.
run_cpu t.npy seq2seq --src "the cat sat on the mat" --tgt "a dog" "${small[@]}"
grep -q "(1, 2, 16)" t.npy || fail "text output is not (1, 2, 16)"
grep -q "B=1 Ts=6 Tt=2" stdout || fail "text input did not give B=1 Ts=6 Tt=2: $(cat stdout)"

# The stop rule's flags parse (and --cpu-only, which times nothing, runs).
run_cpu rule.npy encoder --batch 1 --src-len 3 "${small[@]}" --max-time 3 --max-noise 2.5 --min-samples 30

# On a GPU the rows follow the stop rule's flags: with any noise accepted
# and time to spare, every row stops at --min-samples, and the CSV says so.
if nvidia-smi -L >/dev/null 2>&1; then
    "$kbench" model encoder --batch 1 --src-len 3 "${small[@]}" --min-samples 30 --max-noise 100 --max-time 60 \
        --csv rule.csv >stdout 2>stderr || fail "kbench model with the stop rule's flags: $(cat stderr)"
    [[ "$(csv_column rule.csv samples | sort -u)" == 30 ]] ||
        fail "the rows did not stop at --min-samples 30: $(csv_column rule.csv samples | tr '\n' ' ')"
    grep -q "^# stop_rule: median noise (sigma from the MAD) under 100% from 30 samples, or 60 s" rule.csv ||
        fail "the CSV's stop_rule: $(grep stop_rule rule.csv)"
fi

# Without a GPU the GPU path stops with one line and exit 1.
if ! nvidia-smi -L >/dev/null 2>&1; then
    expect 1 "no CUDA device found" encoder --batch 1 --src-len 3 "${small[@]}"
    expect 1 "no CUDA device found" encoder --batch 1 --src-len 3 "${small[@]}" --max-noise 2.5 --min-samples 30
fi
[[ $failures -eq 0 ]] && echo "all model CLI checks passed"
exit $((failures > 0))
