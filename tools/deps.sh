#!/usr/bin/env bash
# Install what kbench needs and this machine lacks: meson and ninja to build,
# with --plots gnuplot to draw, with --cuobjdump the tools that list and
# disassemble a binary's cubins, and with --hostile clang's sanitizers and libFuzzer.  The CUDA toolkit (nvcc, cuBLAS) must
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
# cuobjdump and nvdisasm (cuobjdump -sass runs it), for the tests that read
# the built cubins (tests/test_arch.sh, tests/test_sass.sh): NVIDIA's pip
# wheels, where the toolkit came without them.  The tests look for them in
# the wheels' folder too, so it need not be on PATH.
has_cuda_tool() {
    command -v "$1" >/dev/null || [[ -x /usr/local/cuda/bin/$1 ]] ||
        python3 -c "import glob, nvidia, sys; sys.exit(not glob.glob(nvidia.__path__[0] + '/cu*/bin/$1'))" 2>/dev/null
}
if [[ $want == *' --cuobjdump '* ]]; then
    for tool in cuobjdump nvdisasm; do
        if ! has_cuda_tool $tool; then
            echo "deps: installing $tool"
            pip_install nvidia-cuda-$tool || echo "deps: $tool unavailable; the tests that read cubins will be skipped" >&2
        fi
    done
fi
# pip --user puts scripts here; make them visible to the caller's next command.
export PATH="$HOME/.local/bin:$PATH"
command -v meson >/dev/null && command -v ninja >/dev/null
