#!/usr/bin/env bash
# Install what is missing, configure, build, and run the default benchmark
# sweep: `bash tools/bench.sh`.  Extra arguments go to meson setup
# (e.g. -Dgpu_arch=90,90a).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh --plots
export PATH="$HOME/.local/bin:/usr/local/cuda/bin:$PATH"
[[ -f build/build.ninja ]] || meson setup build "$@"
ninja -C build
ninja -C build bench
