#!/usr/bin/env bash
# Install what kbench needs and this machine lacks: meson and ninja to build,
# with --plots gnuplot to draw, with --cuobjdump the tool that lists a
# binary's cubins, and with --hostile clang's sanitizers and libFuzzer.  The CUDA toolkit (nvcc, cuBLAS) must
# already be installed.  Safe to run again: it only installs what is missing.
set -euo pipefail
want=" $* "   # flags, each matched as ' --flag '
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
# clang with its sanitizer runtimes and libFuzzer, for tools/hostile.sh.
has_libfuzzer() {
    command -v clang >/dev/null &&
        echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' |
        clang -x c - -fsanitize=fuzzer,address,undefined -o /dev/null 2>/dev/null
}
if [[ $want == *' --hostile '* ]] && ! has_libfuzzer; then
    echo "deps: installing clang and its sanitizer runtimes"
    apt_install clang libclang-rt-dev || true
    has_libfuzzer || { echo "deps: clang with libFuzzer is needed for tools/hostile.sh" >&2; exit 1; }
fi
if [[ $want == *' --plots '* ]] && ! command -v gnuplot >/dev/null; then
    echo "deps: installing gnuplot"
    apt_install gnuplot-nox || echo "deps: gnuplot unavailable; plots will be skipped" >&2
fi
# cuobjdump, for the test that reads the built cubins (tests/test_arch.sh):
# NVIDIA's pip wheel, where the toolkit came without it.
if [[ $want == *' --cuobjdump '* ]] && ! command -v cuobjdump >/dev/null &&
   [[ ! -x /usr/local/cuda/bin/cuobjdump ]] &&
   ! python3 -c 'import glob, nvidia, sys; sys.exit(not glob.glob(nvidia.__path__[0] + "/cu*/bin/cuobjdump"))' 2>/dev/null; then
    echo "deps: installing cuobjdump"
    pip_install nvidia-cuda-cuobjdump || echo "deps: cuobjdump unavailable; the arch test will be skipped" >&2
fi
# pip --user puts scripts here; make them visible to the caller's next command.
export PATH="$HOME/.local/bin:$PATH"
command -v meson >/dev/null && command -v ninja >/dev/null
