#!/usr/bin/env bash
# One part of a full reference run on the lent GPU, sized to fit one
# 10-minute call: the GPU suites, a sweep of the named ops with ceilings,
# optionally the transformer's rows, then PyTorch peer rows for those ops.
#   BIN=.devbin OPS=copy,matmul,softmax SUITES=1 bash tools/device_full.sh
#   BIN=.devbin OPS=attention,ffn MODEL=1 bash tools/device_full.sh
#   BIN=.devbin SANITIZE=1 bash tools/device_full.sh
#   BIN=.devbin OPS=softmax,layernorm SIZES=512x65536,128x262144 VARIANTS=split_row,persistent_row \
#       VARIANTS_softmax=vectorized,persistent_row SANITIZE_VARIANTS=persistent_row bash tools/device_full.sh
# SIZES runs each op on those shapes only, with the copy ceiling, and
# VARIANTS_<op> (else VARIANTS, else all) picks that op's variants;
# SANITIZE_VARIANTS runs memcheck and racecheck on those variants of OPS
# at the test shapes first.
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
if [[ -n ${SANITIZE_VARIANTS:-} ]]; then
    for tool in memcheck racecheck; do
        timeout 240 compute-sanitizer --tool "$tool" --error-exitcode 99 "$bin/kbench" run --check --test-sizes \
            --op "$OPS" --variant "$SANITIZE_VARIANTS" --out-dir "$out/sanitize" >"$out/$tool.log" 2>&1
        echo "== $tool on $SANITIZE_VARIANTS: exit $?; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$tool.log" | tail -1)"
    done
fi
if [[ -n ${SIZES:-} ]]; then
    parts=()
    for op in ${OPS//,/ }; do
        per_op="VARIANTS_$op"
        timeout "${SWEEP_S:-400}" "$bin/kbench" run --ceilings --op "$op" --variant "${!per_op:-${VARIANTS:-*}}" --sizes "$SIZES" \
            --max-time "${ROW_S:-0.5}" --csv "$out/bench-$op.csv" >>"$out/bench.log" 2>&1
        echo "== $op at $SIZES: exit $?"
        parts+=("$out/bench-$op.csv")
    done
    bash tools/merge_csv.sh "$out/bench.csv" "${parts[@]}"
else
    timeout "${SWEEP_S:-400}" "$bin/kbench" run --ceilings --op "$OPS" --dtype f32,bf16 --max-time "${ROW_S:-0.5}" \
        --csv "$out/bench.csv" >"$out/bench.log" 2>&1
    echo "== sweep of $OPS: exit $?; $(grep -E '^[0-9]+ rows' "$out/bench.log" || tail -1 "$out/bench.log")"
fi
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
