#!/usr/bin/env bash
# The transformer's lent-GPU check in one command, each step time-bounded:
# the model's GPU tests, compute-sanitizer memcheck on a small forward, the
# model at the issue's target shapes (encoder layer, decoder layer, 6+6
# seq2seq; B=32, T=128, d=512, h=8, ff=2048) into one CSV, PyTorch parity
# and eager timings into the same CSV, then the whole GPU suite.
#   BIN=.devbin bash tools/device_model.sh    (prebuilt kbench, test_gpu, test_model_gpu)
#   bash tools/device_model.sh                (builds build-dev first)
# Logs and the CSV go to $OUT; a short summary is printed last.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/kbench-out}
mkdir -p "$out"
export PATH="/usr/local/cuda/bin:$PATH"
if [[ -n ${BIN:-} ]]; then
    kbench=$BIN/kbench test_gpu=$BIN/test_gpu test_model=$BIN/test_model_gpu
else
    if ! { meson setup build-dev -Dgpu_arch=90 && ninja -C build-dev; } >"$out/build.log" 2>&1; then
        tail -40 "$out/build.log"
        exit 1
    fi
    kbench=build-dev/harness/kbench test_gpu=build-dev/tests/test_gpu test_model=build-dev/tests/test_model_gpu
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv \
    >"$out/gpu.txt" 2>&1

timeout "${MODEL_TEST_S:-120}" "$test_model" >"$out/test_model_gpu.log" 2>&1
model_test=$?
timeout "${SANITIZE_S:-120}" compute-sanitizer --tool memcheck --error-exitcode 99 "$kbench" model seq2seq \
    --batch 2 --src-len 9 --tgt-len 7 --d-model 24 --heads 2 --layers 2 --max-time 0.01 \
    --csv /tmp/sanitize.csv >"$out/sanitize.log" 2>&1
sanitize=$?

work=$(mktemp -d)
shape=(--batch 32 --src-len 128 --d-model 512 --heads 8 --d-ff 2048)
timeout 120 "$kbench" model encoder "${shape[@]}" --layers 1 --csv "$work/enc.csv" >"$out/model.log" 2>&1
timeout 120 "$kbench" model decoder "${shape[@]}" --tgt-len 128 --layers 1 --csv "$work/dec.csv" >>"$out/model.log" 2>&1
timeout 200 "$kbench" model seq2seq "${shape[@]}" --tgt-len 128 --layers 6 --csv "$work/s2s.csv" >>"$out/model.log" 2>&1
bash tools/merge_csv.sh "$out/model.csv" "$work/enc.csv" "$work/dec.csv" "$work/s2s.csv"
PYTHONUNBUFFERED=1 timeout "${TORCH_S:-240}" python3 peers/torch_transformer.py --kbench "$kbench" \
    --work "$work" --csv "$out/model.csv" >"$out/torch.log" 2>&1
torch=$?

timeout "${SUITE_S:-240}" "$test_gpu" >"$out/test_gpu.log" 2>&1
suite=$?

echo "== model GPU tests: exit $model_test"; grep -E 'CHECK failed|error' "$out/test_model_gpu.log" | head
tail -3 "$out/test_model_gpu.log"
echo "== memcheck: exit $sanitize; $(grep -E 'ERROR SUMMARY' "$out/sanitize.log")"
echo "== GPU suite: exit $suite, $(grep -c ' PASS ' "$out/test_gpu.log") PASS rows"
grep -E ' FAIL |CHECK failed|checks failed' "$out/test_gpu.log" | head
echo "== torch parity and timing: exit $torch"; grep -E 'PASS|FAIL|ms' "$out/torch.log" | tail -12
cat "$out/gpu.txt"
echo "== model"; grep -vE '^wrote' "$out/model.log"
