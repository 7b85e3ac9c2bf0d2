#!/usr/bin/env bash
# One lent-GPU session in one command: build, run the GPU suite, run the
# benchmark, keep logs and CSVs under $OUT, and print a short table last.
#   bash tools/device_run.sh [kbench run arguments...]
# With no arguments the benchmark is the default sweep of every op.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/kbench-out}
mkdir -p "$out"
export PATH="/usr/local/cuda/bin:$PATH"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv >"$out/gpu.txt" 2>&1
if ! { meson setup build-dev -Dgpu_arch=90 && ninja -C build-dev; } >"$out/build.log" 2>&1; then
    tail -40 "$out/build.log"
    exit 1
fi

build-dev/tests/test_gpu >"$out/test_gpu.log" 2>&1
gpu_rc=$?
# KBENCH_TIMEOUT (seconds) bounds the sweep; the CSV keeps every row finished by then.
timeout "${KBENCH_TIMEOUT:-0}" build-dev/harness/kbench run "$@" --csv "$out/bench.csv" >"$out/bench.log" 2>&1
bench_rc=$?

echo "== GPU suite (rc=$gpu_rc): $(grep -c ' PASS ' "$out/test_gpu.log") PASS rows"
grep -E 'FAIL|CHECK failed|checks failed' "$out/test_gpu.log" | head -20
echo "== benchmark (rc=$bench_rc): $(tail -1 "$out/bench.log")"
grep -E 'FAIL|SKIP' "$out/bench.log" | head -20
cat "$out/gpu.txt"
# Short table: every timed PASS row at the headline shapes, columns by name.
awk -F, '/^#/ { next }
    !hdr { for (i = 1; i <= NF; i++) c[$i] = i; hdr = 1; next }
    $c["status"] == "PASS" && $c["median_ms"] != "" &&
    $c["shape"] ~ /^(4096x4096x4096|8192x8192x8192|268435456|16384x4096|65536x768|2x16x4096x4096x128c?|4x16x4096x4096x64)$/ {
        printf "%-13s %-16s %-5s %-20s %10.4f ms %10.0f GFLOP/s %7.0f GB/s %6s x %5s %%ceil\n",
            $c["op"], $c["variant"], $c["dtype"], $c["shape"], $c["median_ms"], $c["gflop_s"],
            $c["gb_s"], $c["speedup_x"], $c["pct_of_ceiling"] }' "$out/bench.csv"
exit $((gpu_rc != 0 || bench_rc != 0))
