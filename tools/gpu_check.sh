#!/usr/bin/env bash
# Everything that checks the kernels on this machine's GPU, in one command:
# the GPU suite (every variant, and planted broken ones, on regular and
# tile-hostile shapes), the transformer's GPU tests, then compute-sanitizer
# memcheck and racecheck over every variant at the test shapes.
#   bash tools/gpu_check.sh [LOG_DIR] [BUILD_DIR]   (default: a temporary folder, build/)
# Logs go to LOG_DIR; the summary is printed.  Exit 1 when any part failed.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/lib.sh
logs=${1:-$(mktemp -d)} build=${2:-build}
mkdir -p "$logs" || exit 1
ninja -C "$build" >"$logs/build.log" 2>&1 || { tail -40 "$logs/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv >"$logs/gpu.txt" 2>&1
rc=0
kb_step "GPU suite" "$build/tests/test_gpu" >"$logs/test_gpu.log" 2>&1 || rc=1
grep -E ' FAIL |CHECK failed|checks failed' "$logs/test_gpu.log" | head -20
echo "   $(grep -c ' PASS ' "$logs/test_gpu.log") PASS rows"
kb_step "model GPU tests" "$build/tests/test_model_gpu" >"$logs/test_model_gpu.log" 2>&1 || rc=1
grep -E 'CHECK failed' "$logs/test_model_gpu.log" | head -10
kb_step compute-sanitizer bash tools/sanitize.sh "$build/harness/kbench" >"$logs/sanitize.log" 2>&1 || rc=1
grep -E 'SUMMARY|exit' "$logs/sanitize.log" | head -10
cat "$logs/gpu.txt"
echo "logs: $logs"
exit $rc
