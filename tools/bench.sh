#!/usr/bin/env bash
# Install what is missing, configure, build, and run the default benchmark
# sweep: `bash tools/bench.sh`.  Extra arguments go to meson setup, or to
# meson setup --reconfigure when build/ exists (e.g. -Dgpu_arch=86).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh --plots
export PATH="$HOME/.local/bin:/usr/local/cuda/bin:$PATH"
if [[ ! -f build/build.ninja ]]; then
    meson setup build "$@"
elif (($#)); then
    meson setup --reconfigure build "$@"
fi
ninja -C build
ninja -C build bench
