#!/usr/bin/env bash
# Install what is missing, configure, build and run the whole test suite:
# `bash tools/test.sh`.  Without a GPU the GPU suite is skipped (exit 77).
# Ends with the line `N passed, N failed, N skipped`.  Extra arguments go to
# meson setup, or to meson setup --reconfigure when build/ exists.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.local/bin:/usr/local/cuda/bin:$PATH"
bash tools/deps.sh --plots || exit 1
if [[ ! -f build/build.ninja ]]; then
    meson setup build "$@" >build-setup.log 2>&1 || { cat build-setup.log; exit 1; }
elif (($#)); then
    meson setup --reconfigure build "$@" >build-setup.log 2>&1 || { cat build-setup.log; exit 1; }
fi
ninja -C build || exit 1
meson test -C build --print-errorlogs --num-processes 2 | tee build/test-output.txt
rc=${PIPESTATUS[0]}
count() { awk -v k="$1" '$1 == k {print $2; exit}' build/test-output.txt; }
ok=$(count Ok:) fail=$(count Fail:) skip=$(count Skipped:) timeout=$(count Timeout:)
echo "${ok:-0} passed, $(( ${fail:-0} + ${timeout:-0} )) failed, ${skip:-0} skipped"
exit "$rc"
