#!/usr/bin/env bash
# `kbench model generate` without a GPU: bad input gets exit 2 and one line
# naming the problem before any work (a model the GPU path cannot run
# included), no GPU exit 1; --cpu-only generates greedily with the
# C reference; the same seed gives the same ids; a seeded model saved with
# --save loads back with --weights and generates the same ids and logits.
source "$(dirname "$(realpath "$0")")/shell_test.sh" "$1"

expect() { expect_line "$1" "$2" model generate "${@:3}"; } # expect CODE PATTERN ARGS...

gen() { # gen ARGS...: a --cpu-only run that must succeed
    "$kbench" model generate --cpu-only "$@" >stdout 2>stderr || fail "kbench model generate $*: $(cat stderr)"
}

ids() { grep '^generated ids:' stdout; }

small=(--d-model 32 --layers 2 --heads 4 --kv-heads 2 --d-ff 48 --vocab 97)
expect 2 "the GPU path needs head_dim a multiple of 16 up to 128" "${small[@]}"
expect 2 "the GPU path needs d_model, d_ff and heads x head_dim multiples of 8" --d-model 64 --heads 4 --d-ff 60
expect 2 "--append is for the GPU run: drop --cpu-only" --cpu-only --append x.csv
expect 2 "--no-ceilings is for the GPU run: drop --cpu-only" --cpu-only --no-ceilings
expect 2 "cannot read missing.csv" --append missing.csv
echo "op,variant" >other.csv
expect 2 "other.csv is not a kbench CSV" --append other.csv
CUDA_VISIBLE_DEVICES= expect 1 "no CUDA device found" --d-model 64 --heads 4 --kv-heads 2 --d-ff 64 --vocab 97 --layers 1
# The stop rule's flags: refused as kbench run refuses them, and only for
# the GPU run, which they parse for (no GPU: exit 1, not 2).
expect 2 "--max-noise needs a percentage from 0.01 to 100, got '0'" --max-noise 0
expect 2 "--min-samples needs an integer from 3 to 2000, got '1'" --min-samples 1
expect 2 "--max-time needs seconds in (0, 3600\], got '-1'" --max-time -1
expect 2 "--max-time needs a value" --max-time
expect 2 "--max-time, --max-noise and --min-samples time the GPU run: drop --cpu-only" --cpu-only --min-samples 30
CUDA_VISIBLE_DEVICES= expect 1 "no CUDA device found" --d-model 64 --heads 4 --kv-heads 2 --d-ff 64 --vocab 97 \
    --layers 1 --max-time 3 --max-noise 2.5 --min-samples 30
expect 2 "unknown option '--frob' for kbench model generate" --cpu-only --frob
expect 2 "--d-model 10 is not a multiple of --heads 4" --cpu-only --d-model 10 --heads 4
expect 2 "--heads 8 is not a multiple of --kv-heads 3" --cpu-only --heads 8 --kv-heads 3
expect 2 "--heads 2 is not a multiple of --kv-heads 4" --cpu-only --heads 2 --kv-heads 4
expect 2 "--d-model / --heads = 3 is odd" --cpu-only --d-model 12 --heads 4
expect 2 "--prompt-ids needs token ids from 0 to 2^31-1, comma-separated, got '1,,2'" --cpu-only --prompt-ids 1,,2
expect 2 "--prompt-ids needs token ids" --cpu-only --prompt-ids 1,x
expect 2 "--prompt-ids needs token ids" --cpu-only --prompt-ids -1
expect 2 "--prompt-ids needs token ids" --cpu-only --prompt-ids 1,
expect 2 "--prompt-ids needs token ids" --cpu-only --prompt-ids 99999999999
expect 2 "--prompt-ids: id 97 is outside the vocabulary of 97" --cpu-only "${small[@]}" --prompt-ids 1,97
expect 2 "not both" --cpu-only --prompt-ids 1 --prompt-len 3
expect 2 "--tokens needs an integer from 1 to 1048576, got '0'" --cpu-only --tokens 0
expect 2 "--prompt-len needs an integer" --cpu-only --prompt-len 1e3
expect 2 "--seed needs an integer from 0 to 2^64-1, got '-1'" --cpu-only --seed -1
# The number grammar every command shares: no space, newline, sign, exponent or point in an integer.
for bad in ' 8' $'\n8' +8 1e3 3.0; do
    expect 2 "--tokens needs an integer from 1 to 1048576, got '" --cpu-only --tokens "$bad"
    expect 2 "--seed needs an integer from 0 to 2^64-1, got '" --cpu-only --seed "$bad"
    expect 2 "--prompt-ids needs token ids from 0 to 2^31-1, comma-separated, got '" --cpu-only --prompt-ids "1,$bad"
done
expect 2 "--max-time needs seconds in (0, 3600\], got '1e-999'" --max-time 1e-999
expect 2 "--layers needs a value" --cpu-only --layers
expect 2 "the checkpoint sets the model: drop --d-model" --cpu-only --weights w --d-model 8
expect 2 "--save-dtype applies to --save" --cpu-only --save-dtype bf16
expect 2 "unknown --save-dtype 'f8'" --cpu-only --save d --save-dtype f8
expect 2 "missing/config.json: cannot open" --cpu-only --weights missing
expect 2 "--logits-out 'no/such/l.npy' cannot be written" --cpu-only --logits-out no/such/l.npy
expect 2 "--logits-out '.' is not a regular file" --cpu-only --logits-out .
echo x >afile
expect 2 "--save 'afile' is not a directory" --cpu-only --save afile
expect 2 "--save 'no/such/dir' cannot be written" --cpu-only --save no/such/dir
expect 2 "make over 2^40 weights" --cpu-only --d-model 1048576 --heads 4096 --d-ff 1048576 --layers 65536
expect 2 "GiB of host memory; this host has" --cpu-only --d-model 131072 --heads 1024 --d-ff 131072 --layers 8 \
    --vocab 2
expect 2 "unknown option '--x.x0ay'" --cpu-only $'--x\ny'
"$kbench" model gpt >/dev/null 2>stderr
grep -q "expected encoder, decoder, seq2seq or generate" stderr || fail "kbench model gpt: $(cat stderr)"
[[ -e no || -e d ]] && fail "a refused output was written"
"$kbench" model generate --help >stdout || fail "generate --help"
grep -q -- "--prompt-ids" stdout || fail "generate --help does not show --prompt-ids"

# Seeded runs: the same seed the same ids; another seed others; the timing line.
gen "${small[@]}" --prompt-len 5 --tokens 6
a=$(ids)
grep -q "prefill .* ms (5 tokens), decode .* ms/token over 5 steps, .* tokens/s" stdout ||
    fail "no timing line: $(cat stdout)"
[[ $(echo "$a" | tr ',' '\n' | wc -l) -eq 6 ]] || fail "not 6 generated ids: $a"
gen "${small[@]}" --prompt-len 5 --tokens 6
[[ "$(ids)" == "$a" ]] || fail "the same seed gave other ids: $(ids) vs $a"
gen "${small[@]}" --prompt-len 5 --tokens 6 --seed 2
[[ "$(ids)" != "$a" ]] || fail "another seed gave the same ids"
gen "${small[@]}" --prompt-ids 3,1,4 --tokens 1
grep -q "prompt ids: 3,1,4" stdout || fail "the prompt is not echoed: $(cat stdout)"
grep -q "no decode steps" stdout || fail "--tokens 1 should run no decode step: $(cat stdout)"

# Save, load back: the same ids and logits; bf16 loads and runs too.
gen "${small[@]}" --tied --prompt-ids 5,6,7,8 --tokens 7 --save ckpt --logits-out a.npy
a=$(ids)
[[ -s ckpt/config.json && -s ckpt/model.safetensors ]] || fail "--save wrote no checkpoint"
grep -q '"tie_word_embeddings": true' ckpt/config.json || fail "config.json is not tied: $(cat ckpt/config.json)"
grep -q "(7, 97)" a.npy || fail "a.npy is not (7, 97)"
gen --weights ckpt --prompt-ids 5,6,7,8 --tokens 7 --logits-out b.npy
[[ "$(ids)" == "$a" ]] || fail "the checkpoint generated $(ids), the seeded model $a"
cmp -s a.npy b.npy || fail "the checkpoint's logits differ from the seeded model's"
gen --weights ckpt --prompt-ids 5,6,7,8 --tokens 3 --save ckpt16 --save-dtype bf16
grep -q '"torch_dtype": "bfloat16"' ckpt16/config.json || fail "bf16 config.json: $(cat ckpt16/config.json)"
gen --weights ckpt16 --prompt-ids 5,6,7,8 --tokens 3
expect 2 "--prompt-ids: id 100 is outside the vocabulary of 97" --cpu-only --weights ckpt --prompt-ids 100
# A damaged checkpoint: one line, exit 2, before any work.
sed -i 's/"num_hidden_layers": 2/"num_hidden_layers": 3/' ckpt/config.json
expect 2 "no tensor named 'model.layers.2.input_layernorm.weight'" --cpu-only --weights ckpt
sed -i 's/"num_hidden_layers": 3/"num_hidden_layers": 1/' ckpt/config.json
expect 2 "tensor 'model.layers.1.input_layernorm.weight' is not part of a tied LlamaForCausalLM with 1 layers" \
    --cpu-only --weights ckpt
sed -i 's/"rope_scaling": null/"rope_scaling": {"rope_type": "llama3", "factor": 8.0}/' ckpt/config.json
expect 2 'rope_type "llama3" has no "low_freq_factor"' --cpu-only --weights ckpt
# Llama 3.1's frequency scaling, complete, runs: at an original context of
# 4 every pair's wavelength is past 4 / 1, so every frequency is an
# eighth and the logits past position 0 move.
sed -i 's/"num_hidden_layers": 1/"num_hidden_layers": 2/; s/"rope_scaling": {[^}]*}/"rope_scaling": {"rope_type": '\
'"llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, '\
'"original_max_position_embeddings": 4}/' ckpt/config.json
gen --weights ckpt --prompt-ids 5,6,7,8 --tokens 7 --logits-out c.npy
cmp -s a.npy c.npy && fail "rope_scaling llama3 changed no logit"
# On a GPU the rows follow the stop rule's flags: with any noise accepted and
# time to spare, the prefill and both decode rows stop at --min-samples.
if nvidia-smi -L >/dev/null 2>&1; then
    "$kbench" run --op copy --sizes 4096 --check --csv rule.csv >/dev/null 2>&1 || fail "no CSV to append to"
    "$kbench" model generate --d-model 64 --heads 4 --kv-heads 2 --d-ff 64 --vocab 97 --layers 1 --tokens 4 \
        --no-ceilings --append rule.csv --min-samples 30 --max-noise 100 --max-time 60 >stdout 2>stderr ||
        fail "kbench model generate with the stop rule's flags: $(cat stderr)"
    [[ "$(csv_column rule.csv samples | tail -3 | sort -u)" == 30 ]] ||
        fail "the rows did not stop at --min-samples 30: $(csv_column rule.csv samples | tr '\n' ' ')"
fi

[[ $failures -eq 0 ]] && echo "all generate CLI checks passed"
exit $((failures > 0))
