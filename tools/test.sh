#!/usr/bin/env bash
# Install what is missing, configure, build and run the whole test suite:
# `bash tools/test.sh`.  Without a GPU the GPU suite is skipped (exit 77).
# Then tools/hostile.sh: the CPU tests under the sanitizers, and the fuzz
# targets.  Ends with the line `N passed, N failed, N skipped` over both.
# Extra arguments go to meson setup, or to meson setup --reconfigure when
# build/ exists.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.local/bin:/usr/local/cuda/bin:$PATH"
bash tools/deps.sh --plots --cuobjdump || exit 1
if [[ ! -f build/build.ninja ]]; then
    meson setup build "$@" >build-setup.log 2>&1 || { cat build-setup.log; exit 1; }
elif (($#)); then
    meson setup --reconfigure build "$@" >build-setup.log 2>&1 || { cat build-setup.log; exit 1; }
fi
ninja -C build || exit 1
meson test -C build --print-errorlogs --num-processes 2 | tee build/test-output.txt
rc=${PIPESTATUS[0]}
# Then the CPU tests again under ASan and UBSan, and each fuzz target briefly;
# a hostile build that breaks counts as one failure.
rm -f build-hostile/test-output.txt
bash tools/hostile.sh || rc=1
outputs=(build/test-output.txt) broke=0
if [[ -f build-hostile/test-output.txt ]]; then outputs+=(build-hostile/test-output.txt); else broke=1; fi
count() { awk -v k="$1" '$1 == k {n += $2} END {print n + 0}' "${outputs[@]}"; }
ok=$(count Ok:) fail=$(count Fail:) skip=$(count Skipped:) timeout=$(count Timeout:)
echo "$ok passed, $((fail + timeout + broke)) failed, $skip skipped"
exit "$rc"
