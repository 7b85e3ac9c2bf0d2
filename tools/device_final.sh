#!/usr/bin/env bash
# A whole lent-GPU check in one command, each step time-bounded so the
# whole fits one call: build, the GPU suite, a sweep of the named ops with
# ceilings, PyTorch peer rows for them, then compute-sanitizer.
#   OPS=attention,ffn SWEEP_S=240 SANITIZE_S=150 bash tools/device_final.sh
# Logs and the CSV go to $OUT; a short summary is printed last.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/kbench-out}
mkdir -p "$out"
export PATH="/usr/local/cuda/bin:$PATH"
ops=${OPS:-copy,matmul,softmax,layernorm,add_layernorm,rmsnorm,attention,posenc,embed,add_relu,ffn}

if ! { meson setup build-dev -Dgpu_arch=90 && ninja -C build-dev; } >"$out/build.log" 2>&1; then
    tail -40 "$out/build.log"
    exit 1
fi
timeout "${SUITE_S:-240}" build-dev/tests/test_gpu >"$out/test_gpu.log" 2>&1
suite=$?
timeout "${SWEEP_S:-240}" build-dev/harness/kbench run --ceilings --op "$ops" --dtype f32,bf16 \
    --csv "$out/bench.csv" >"$out/bench.log" 2>&1
sweep=$?
[[ -f $out/bench.csv ]] && timeout "${PEERS_S:-90}" python3 peers/torch_peers.py "$out/bench.csv" \
    --ops "$ops" --max-time 0.3 >"$out/torch.log" 2>&1
timeout "${SANITIZE_S:-150}" bash tools/sanitize.sh build-dev/harness/kbench >"$out/sanitize.log" 2>&1
sanitize=$?

echo "== GPU suite: exit $suite, $(grep -c ' PASS ' "$out/test_gpu.log") PASS rows"
grep -E ' FAIL |CHECK failed|checks failed' "$out/test_gpu.log" | head -20
echo "== sweep of $ops: exit $sweep; $(grep -E '^[0-9]+ rows' "$out/bench.log" || tail -1 "$out/bench.log")"
grep -E ' FAIL ' "$out/bench.log" | head -10
echo "== peers: $(tail -1 "$out/torch.log" 2>/dev/null)"
echo "== sanitize: exit $sanitize"
grep -E 'SUMMARY|exit' "$out/sanitize.log" | head -10
