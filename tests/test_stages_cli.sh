#!/usr/bin/env bash
# kbench model stages: every refusal is one line and exit 2 before any work
# (the GPU is never opened), help exits 0, and without a GPU it exits 1
# with one line.  No GPU needed.
#   bash tests/test_stages_cli.sh KBENCH
source "$(dirname "$(realpath "$0")")/shell_test.sh" "$1"

# refused PATTERN ARGS...: exit 2, exactly one stderr line matching, no stdout.
refused() { expect_line 2 "$1" model stages "${@:2}"; }

refused "unknown flag '--fast' for model stages" --fast
refused "--layers needs a value" --layers
refused "--layers needs an integer from 1 to 65536, got '0'" --layers 0
refused "--d-model needs an integer from 1 to 1073741824, got '5x'" --d-model 5x
refused "--prompt-len needs an integer from 1 to 1048576" --prompt-len 99999999
refused "--d-model 100 is not a multiple of --heads 3" --d-model 100 --heads 3
refused "--heads 9 is not a multiple of --kv-heads 2" --kv-heads 2
refused "--d-model / --heads = 9 is odd" --d-model 81 --heads 9
refused "over 2^40 weights" --d-model 1073741824 --heads 1 --kv-heads 1 --vocab 1073741824
refused "--seed needs an integer from 0 to 2^64-1, got '-1'" --seed -1
refused "--stages takes basic, paper, modern and fast, comma-separated; got 'basic,slow'" --stages basic,slow
refused "--stages takes basic" --stages basic,
refused "--stages names 'basic' twice" --stages basic,fast,basic
for bad in ' 8' $'\n8' +8 1e3 3.0; do
    refused "--layers needs an integer from 1 to 65536, got '" --layers "$bad"
    refused "--seed needs an integer from 0 to 2^64-1, got '" --seed "$bad"
    refused "--min-samples needs an integer from 3 to 2000, got '" --min-samples "$bad"
done
refused "cannot read missing.csv" --append missing.csv
echo "not a kbench csv" >bad.csv
refused "bad.csv" --append bad.csv
# The stop rule's flags, refused as kbench run refuses them.
refused "--max-noise needs a percentage from 0.01 to 100, got '0.001'" --max-noise 0.001
refused "--min-samples needs an integer from 3 to 2000, got 'x'" --min-samples x
refused "--max-time needs seconds in (0, 3600\], got '3601'" --max-time 3601
refused "--min-samples needs a value" --min-samples

expect_rc 0 model stages --help
grep -q "^usage: kbench model stages" out || fail "--help: $(cat out)"
tiny=(--layers 1 --d-model 64 --heads 4 --kv-heads 2 --d-ff 64 --vocab 97)
CUDA_VISIBLE_DEVICES= expect_line 1 "no CUDA device found" model stages "${tiny[@]}"
# Good stop-rule values parse: no GPU is the only complaint.
CUDA_VISIBLE_DEVICES= expect_line 1 "no CUDA device found" model stages "${tiny[@]}" --max-time 3 --max-noise 2.5 \
    --min-samples 30

# On a GPU the rows follow the stop rule's flags: with any noise accepted and
# time to spare, every stage row that ran stops at --min-samples.
if nvidia-smi -L >/dev/null 2>&1; then
    "$kbench" run --op copy --sizes 4096 --check --csv rule.csv >/dev/null 2>&1 || fail "no CSV to append to"
    "$kbench" model stages "${tiny[@]}" --prompt-len 8 --tokens 2 --no-ceilings --append rule.csv --min-samples 30 \
        --max-noise 100 --max-time 60 >out 2>err || fail "kbench model stages with the stop rule's flags: $(cat err)"
    [[ "$(csv_column rule.csv samples | tail -8 | grep . | sort -u)" == 30 ]] ||
        fail "the rows did not stop at --min-samples 30: $(csv_column rule.csv samples | tr '\n' ' ')"
fi

[[ $failures -eq 0 ]] && echo "all stages CLI checks passed"
exit $((failures > 0))
