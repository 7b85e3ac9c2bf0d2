#!/usr/bin/env bash
# Install what kbench needs and this machine lacks: meson and ninja to build,
# and (with --plots) gnuplot to draw.  The CUDA toolkit (nvcc, cuBLAS) must
# already be installed.  Safe to run again: it only installs what is missing.
set -euo pipefail
want_plots=${1:-}
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"

if ! command -v nvcc >/dev/null; then
    if [[ -x /usr/local/cuda/bin/nvcc ]]; then
        echo "deps: nvcc is in /usr/local/cuda/bin; add it to PATH" >&2
    else
        echo "deps: nvcc not found: install the CUDA toolkit first" >&2
    fi
    exit 1
fi

apt_install() {
    command -v apt-get >/dev/null || return 1
    $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

pip_install() {
    python3 -m pip install -q "$@" 2>/dev/null ||
        python3 -m pip install -q --user --break-system-packages "$@"
}

if ! command -v meson >/dev/null; then
    echo "deps: installing meson"
    pip_install 'meson>=1.0' || apt_install meson
fi
if ! command -v ninja >/dev/null; then
    echo "deps: installing ninja"
    apt_install ninja-build || pip_install ninja
fi
if [[ $want_plots == --plots ]] && ! command -v gnuplot >/dev/null; then
    echo "deps: installing gnuplot"
    apt_install gnuplot-nox || echo "deps: gnuplot unavailable; plots will be skipped" >&2
fi
# pip --user puts scripts here; make them visible to the caller's next command.
export PATH="$HOME/.local/bin:$PATH"
command -v meson >/dev/null && command -v ninja >/dev/null
