#!/usr/bin/env bash
# `ninja -C build sanitize`: compute-sanitizer memcheck and racecheck over
# every variant at each op's small test shapes (correctness only, no timing).
#   tools/sanitize.sh KBENCH
set -uo pipefail
kbench=$1
if ! command -v compute-sanitizer >/dev/null; then
    echo "kbench: compute-sanitizer not found (it ships with the CUDA toolkit)" >&2
    exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rc=0
for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool"
    compute-sanitizer --tool "$tool" --error-exitcode 99 \
        "$kbench" run --check --test-sizes --out-dir "$out" >"$out/$tool.log" 2>&1
    status=$?
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|FAIL" "$out/$tool.log" | tail -5
    [[ $status -eq 0 ]] || { echo "$tool: exit $status"; tail -30 "$out/$tool.log"; rc=1; }
done
exit $rc
