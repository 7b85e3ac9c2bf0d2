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
# On a machine of several GPUs the collectives and tensor-parallel variants
# run across all of them: --devices forks worker processes, which the
# sanitizer must follow (--target-processes all).
devices=()
(($(nvidia-smi -L 2>/dev/null | grep -c '^GPU') > 1)) && devices=(--devices all)
# NCCL's own kernels fail under the sanitizer (its LL protocol's flag
# polling), so the collectives' pass covers kbench's own variants.
collectives=allreduce,allgather,reduce_scatter
others=$("$kbench" list | sed -n 's/^\([a-z_0-9]*\) (.*/\1/p' | grep -vxE "${collectives//,/|}" | paste -sd,)
passes=("--op $others")
((${#devices[@]})) && passes+=("--op $collectives --variant naive*,p2p*")
for tool in memcheck racecheck; do
    for pass in "${passes[@]}"; do
        echo "== compute-sanitizer --tool $tool: $pass"
        # shellcheck disable=SC2086 # $pass is a list of words, its glob quoted by set -f
        (set -f; compute-sanitizer --tool "$tool" --target-processes all --error-exitcode 99 \
            "$kbench" run --check --test-sizes $pass "${devices[@]}" --out-dir "$out") >"$out/$tool.log" 2>&1
        status=$?
        grep -E "ERROR SUMMARY|RACECHECK SUMMARY|FAIL" "$out/$tool.log" | tail -5
        [[ $status -eq 0 ]] || { echo "$tool: exit $status"; tail -30 "$out/$tool.log"; rc=1; }
    done
done
exit $rc
