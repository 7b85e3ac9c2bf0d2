#!/usr/bin/env bash
# The default build with no GPU present (gpu_arch=auto's fallback) holds
# machine code for sm_80, sm_86, sm_89 and sm_90 of every CUDA file, and
# PTX of compute_90 only (the newest arch, for newer GPUs to JIT); sm_90a in
# place of sm_90 when a variant has Hopper-only code (kb_sm90a in
# meson.build).  Read from the binary by cuobjdump.
# Exits 77 (skip) without cuobjdump or when gpu_arch was not the fallback.
#   tests/test_arch.sh KBENCH FALLBACK SM90A
# FALLBACK and SM90A (true or false) come from meson.build: whether auto fell
# back, and whether kb_sm90a names a variant.
set -u
kbench=$1 fallback=$2 sm90a=$3
if [[ $fallback != true ]]; then
    echo "gpu_arch is not auto's fallback here (it names archs, or found a GPU); skipping"
    exit 77
fi
# cuobjdump comes with the CUDA toolkit, or from pip (nvidia-cuda-cuobjdump).
cuobjdump=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null ||
    python3 -c 'import glob, nvidia; print(*glob.glob(nvidia.__path__[0] + "/cu*/bin/cuobjdump"))' 2>/dev/null)
if [[ -z $cuobjdump ]]; then
    echo "cuobjdump is not installed (pip install nvidia-cuda-cuobjdump); skipping"
    exit 77
fi
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# files EXT ARCH: the sorted source names of the ELF or PTX files for ARCH
# ("ELF file 3: welford.sm_90.cubin" -> welford).
files() {
    "$cuobjdump" "--list-$1" "$kbench" | sed -n "s/^[A-Z]* file *[0-9]*: \(.*\)\.$2\.[a-z]*$/\1/p" | sort
}
hopper=sm_90
[[ $sm90a == true ]] && hopper=sm_90a
archs=(sm_80 sm_86 sm_89 $hopper)
want=$(files elf $hopper)
[[ $(wc -l <<<"$want") -ge 10 ]] || fail "only $(wc -l <<<"$want") $hopper cubins: $want"
other=sm_90a
[[ $hopper == sm_90a ]] && other=sm_90
[[ -z $(files elf $other) ]] || fail "$other cubins beside the $hopper ones: $(files elf $other | tr '\n' ' ')"
for a in "${archs[@]}"; do
    missing=$(comm -23 <(echo "$want") <(files elf "$a") | uniq | tr '\n' ' ')
    [[ -z $missing && $(files elf "$a") == "$want" ]] || fail "no $a cubin, or too many, for: ${missing:-(extra ones)}"
done
[[ $(files ptx sm_90) == "$want" ]] || fail "not every CUDA file has compute_90 PTX"
others=$("$cuobjdump" --list-ptx "$kbench" | grep -v '\.sm_90\.ptx$')
[[ -z $others ]] || fail "PTX of other archs than the newest: $others"

[[ $failures -eq 0 ]] && echo "cubins for ${archs[*]} and compute_90 PTX in every CUDA file"
exit $((failures > 0))
