#!/usr/bin/env bash
# The CPU tests under AddressSanitizer and UndefinedBehaviorSanitizer, then
# every fuzz target for a while: `bash tools/hostile.sh [SECONDS]` (30 by
# default; docs/hostile-input.md says how to fuzz for longer).  clang builds
# the C files and hosts nvcc in build-hostile/, one arch only, since nothing
# runs on a GPU there; the sanitizers slow the tests, so their time limits
# are four times the usual.  tools/test.sh runs this after the main suite.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.local/bin:/usr/local/cuda/bin:$PATH"
seconds=${1:-30}
bash tools/deps.sh --hostile || exit 1
dir=build-hostile
opts=(-Dfuzz=true -Dfuzz_seconds="$seconds" -Dgpu_arch=90 -Db_sanitize=address,undefined -Db_lundef=false
      -Dcuda_args=-ccbin=clang -Dcuda_link_args=-ccbin=clang)
if [[ ! -f $dir/build.ninja ]]; then
    CC=clang meson setup "$dir" "${opts[@]}" >"$dir-setup.log" 2>&1 || { cat "$dir-setup.log"; exit 1; }
else
    meson configure "$dir" -Dfuzz_seconds="$seconds" >"$dir-setup.log" 2>&1 || { cat "$dir-setup.log"; exit 1; }
fi
# clang as nvcc's host compiler warns at length about CUDA's own headers:
# the log keeps that, the console shows it only on failure.
echo "hostile: building $dir (log: $dir/build.log)"
ninja -C "$dir" >"$dir/build.log" 2>&1 || { tail -40 "$dir/build.log"; exit 1; }
# Leaks fail a test: LeakSanitizer is on by default, but an ASAN_OPTIONS
# from the environment (a CI image's, say) could turn it off, and meson
# passes one that is set as it is.  Ours come last, so they win; meson's
# own defaults (halt and abort on the first error) are kept.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1:halt_on_error=1:abort_on_error=1:print_summary=1
meson test -C "$dir" --suite cpu --suite fuzz --print-errorlogs --num-processes 2 --timeout-multiplier 4 | tee "$dir/test-output.txt"
exit "${PIPESTATUS[0]}"
