#!/usr/bin/env bash
# One part of a full reference run on the lent GPU, sized to fit one
# 10-minute call: the GPU suites, a sweep of the named ops with ceilings,
# optionally the transformer's rows, then PyTorch peer rows for those ops.
#   BIN=.devbin OPS=copy,matmul,softmax SUITES=1 bash tools/device_full.sh
#   BIN=.devbin OPS=attention,ffn MODEL=1 bash tools/device_full.sh
#   BIN=.devbin SANITIZE=1 bash tools/device_full.sh
# BIN holds prebuilt kbench, test_gpu and test_model_gpu.  The CSV and logs
# go to $OUT; the parts' CSVs are merged afterwards (tools/merge_csv.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/kbench-out}
bin=${BIN:-build-dev}
mkdir -p "$out"
export PATH="/usr/local/cuda/bin:$PATH"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv \
    >"$out/gpu.txt" 2>&1
if [[ ${SANITIZE:-0} == 1 ]]; then
    timeout "${SANITIZE_S:-560}" bash tools/sanitize.sh "$bin/kbench" >"$out/sanitize.log" 2>&1
    echo "== sanitize: exit $?"
    grep -E 'SUMMARY|exit|FAIL' "$out/sanitize.log" | head -20
    exit 0
fi
if [[ ${SUITES:-0} == 1 ]]; then
    timeout 240 "$bin/test_gpu" >"$out/test_gpu.log" 2>&1
    echo "== GPU suite: exit $?, $(grep -c ' PASS ' "$out/test_gpu.log") PASS rows"
    grep -E ' FAIL |CHECK failed|checks failed' "$out/test_gpu.log" | head
    timeout 120 "$bin/test_model_gpu" >"$out/test_model_gpu.log" 2>&1
    echo "== model GPU tests: exit $?"
fi
timeout "${SWEEP_S:-400}" "$bin/kbench" run --ceilings --op "$OPS" --dtype f32,bf16 --max-time "${ROW_S:-0.5}" \
    --csv "$out/bench.csv" >"$out/bench.log" 2>&1
echo "== sweep of $OPS: exit $?; $(grep -E '^[0-9]+ rows' "$out/bench.log" || tail -1 "$out/bench.log")"
grep -E ' FAIL ' "$out/bench.log" | head
if [[ ${MODEL:-0} == 1 && -f $out/bench.csv ]]; then
    shape=(--batch 32 --src-len 128 --d-model 512 --heads 8 --d-ff 2048)
    "$bin/kbench" model encoder "${shape[@]}" --layers 1 --append "$out/bench.csv" >"$out/model.log" 2>&1
    "$bin/kbench" model decoder "${shape[@]}" --tgt-len 128 --layers 1 --append "$out/bench.csv" >>"$out/model.log" 2>&1
    "$bin/kbench" model seq2seq "${shape[@]}" --tgt-len 128 --layers 6 --append "$out/bench.csv" >>"$out/model.log" 2>&1
    echo "== model rows: $(grep -c 'PASS$' "$out/model.log") checks passed"
    PYTHONUNBUFFERED=1 timeout 200 python3 peers/torch_transformer.py --kbench "$bin/kbench" --work "$(mktemp -d)" \
        --csv "$out/bench.csv" >"$out/torch_model.log" 2>&1
    echo "== torch model parity and timing: exit $?"
fi
[[ -f $out/bench.csv ]] && timeout "${PEERS_S:-120}" python3 peers/torch_peers.py "$out/bench.csv" \
    --ops "$OPS" --max-time 0.3 >"$out/torch.log" 2>&1
echo "== peers: $(tail -1 "$out/torch.log" 2>/dev/null)"
cat "$out/gpu.txt"
