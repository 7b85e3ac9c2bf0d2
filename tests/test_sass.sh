#!/usr/bin/env bash
# The machine code of the tensor-core matmul rungs, read from the built
# binary with cuobjdump -sass (no GPU needed): every kernel of an mma.sync
# rung has HMMA instructions in each of its cubins, every kernel of a wgmma
# rung (kb_sm90a) has HGMMA (QGMMA: fp8) in its sm_90a cubin, and fewer waits on them
# (WARPGROUP.DEPBAR) than HGMMAs: where ptxas serializes a kernel's wgmmas
# (warnings C7518 / C7513) it waits after each one, which halved
# flash_wgmma's speed; none has local-memory
# traffic (LDL/STL: spills or a stack array); the kernels of a
# warp-specialized rung (setmaxnreg_rungs) also have USETMAXREG, the
# setmaxnreg that moves registers from producer to consumers; flash_wgmma
# keeps its softmax between the waits for S and P V, builds its key
# loop's wgmma descriptors on the uniform datapath and writes O in
# 16-byte stores; the ceilings' bf16 and e4m3 wgmma kernels issue HGMMA
# and QGMMA of their types.  A rung that
# silently fell back to a slower path, or an sm_90a build that lost its
# cubin, fails here.
# Exits 77 (skip) without cuobjdump or nvdisasm (which cuobjdump -sass
# runs), or when the build has neither sm_80+ cubins nor, for the wgmma
# rungs, sm_90a ones.
#   tests/test_sass.sh KBENCH SM90A 'op/variant ...'
# SM90A (true or false) and the list of Hopper-only variants come from
# meson.build (gpu_sm90a, kb_sm90a).
set -u
kbench=$(realpath "$1") sm90a=$2
read -r -a wgmma_rungs <<<"$3"
mma_rungs=(matmul/mma_sync matmul/mma_sync_swizzled)
setmaxnreg_rungs=(matmul/wgmma_warpspec matmul/wgmma_persistent matmul/wgmma_cluster matmul/wgmma_tma_store
                  matmul_fp8/wgmma_promoted attention/flash_wgmma)

# tool NAME: from PATH, the CUDA toolkit, or NVIDIA's pip wheels
# (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm; tools/deps.sh --cuobjdump).
tool() {
    command -v "$1" || ls "/usr/local/cuda/bin/$1" 2>/dev/null ||
        python3 -c "import glob, nvidia; print(*glob.glob(nvidia.__path__[0] + '/cu*/bin/$1')[:1])" 2>/dev/null
}
cuobjdump=$(tool cuobjdump) nvdisasm=$(tool nvdisasm)
if [[ -z $cuobjdump || -z $nvdisasm ]]; then
    echo "cuobjdump or nvdisasm is not installed (bash tools/deps.sh --cuobjdump); skipping"
    exit 77
fi
export PATH="$(dirname "$nvdisasm"):$PATH" # cuobjdump -sass finds nvdisasm on PATH

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
failures=0 checked=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
elfs=$("$cuobjdump" --list-elf "$kbench" | sed -n 's/^ELF file *[0-9]*: *//p')

# sass CUBIN: its disassembly, made once (a few seconds a cubin) and kept
# beside it for the checks that follow.
sass() {
    [[ -s $1.sass ]] || "$cuobjdump" -sass "$1" >"$1.sass"
    cat "$1.sass"
}

# per_kernel CUBIN: one line per kernel, "NAME HMMA HGMMA LOCAL SETMAXREG
# DEPBAR" with the count of each kind of instruction in it.
per_kernel() {
    sass "$1" | awk '
        /Function :/ { if (f != "") print f, h, g, l, r, d; f = $NF; h = g = l = r = d = 0; next }
        /[[:space:]]HMMA\./ { h++ }
        /[[:space:]](HGMMA|QGMMA)\./ { g++ }
        /[[:space:]](LDL|STL)[[:space:].]/ { l++ }
        /[[:space:]]USETMAXREG[[:space:].]/ { r++ }
        /[[:space:]]WARPGROUP\.DEPBAR/ { d++ }
        END { if (f != "") print f, h, g, l, r, d }'
}

# check CUBIN WANT [SETMAXREG]: every kernel in CUBIN (extracted from
# kbench) has WANT (HMMA or HGMMA; the latter with fewer DEPBARs), no
# LDL/STL and, given a third argument, USETMAXREG.
check() {
    local cubin=$1 want=$2 setmaxreg=${3:-} col name h g l r d n=0
    "$cuobjdump" -xelf "$cubin" "$kbench" >/dev/null || { fail "cannot extract $cubin"; return; }
    [[ $want == HMMA ]] && col=2 || col=3
    while read -r name h g l r d; do
        n=$((n + 1))
        local count
        [[ $col == 2 ]] && count=$h || count=$g
        [[ $count -gt 0 ]] || fail "$cubin: $name has no $want"
        [[ $col == 2 || $d -lt $g ]] ||
            fail "$cubin: $name waits $d times on its $g HGMMAs (ptxas serialized them)"
        [[ $l -eq 0 ]] || fail "$cubin: $name has $l LDL/STL (local memory)"
        [[ -z $setmaxreg || $r -gt 0 ]] || fail "$cubin: $name has no USETMAXREG (setmaxnreg)"
    done < <(per_kernel "$cubin")
    [[ $n -gt 0 ]] || fail "$cubin: no kernels"
    checked=$((checked + 1))
    echo "$cubin: $n kernel(s) with $want${setmaxreg:+ and USETMAXREG}, no local memory"
}

# softmax_under_pv CUBIN: flash_wgmma's kernels for head dims 128 and 256
# compute a tile's exponentials (MUFU.EX2) between the wait for its S
# (WARPGROUP.DEPBAR.LE gsb0, 0x1) and the wait for the P V before it
# (0x0), so that the softmax runs under that P V; without the kernel's
# softmax_done arrival ptxas sinks them below the second wait (-8% at D = 256).
softmax_under_pv() {
    local name n
    while read -r name n; do
        [[ $n -ge 32 ]] || fail "$1: $name has $n exponentials between its waits for S and P V (32 or more wanted)"
    done < <(sass "$1" | awk '
        /Function :/ { if (f != "") print f, most; f = ($NF ~ /ILi(128|256)E/) ? $NF : ""; most = 0; inwin = 0; next }
        f == "" { next }
        /WARPGROUP\.DEPBAR\.LE gsb0, 0x1/ { inwin = 1; n = 0; next }
        /WARPGROUP\.DEPBAR\.LE gsb0, 0x0/ { if (inwin && n > most) most = n; inwin = 0; next }
        inwin && /MUFU\.EX2/ { n++ }
        END { if (f != "") print f, most }')
}

# uniform_descriptors CUBIN: in each flash_wgmma kernel, the key loop's
# batch (WARPGROUP.ARRIVE to the wait for S, WARPGROUP.DEPBAR.LE gsb0,
# 0x1) moves fewer than two registers to the uniform datapath (R2UR) an
# HGMMA: its wgmma descriptors are built there.  Code that ptxas cannot
# prove warp-uniform around the loop (a lane spinning on a flag, a branch
# on the lane) moves them to the vector datapath, 44 R2UR for 16 HGMMAs at
# D = 128 (the batch's issue stretched: -3 to -7% in an A/B).
uniform_descriptors() {
    local name r g
    while read -r name r g; do
        [[ $g -gt 0 && $r -lt $((2 * g)) ]] ||
            fail "$1: $name moves $r registers to uniform ones for its $g HGMMAs (descriptors off the uniform datapath)"
    done < <(sass "$1" | awk '
        function flush() { if (f != "") print f, worst_r, worst_g }
        /Function :/ { flush(); f = $NF; worst_r = worst_g = 0; seen = inwin = 0; next }
        /WARPGROUP\.ARRIVE/ { inwin = 1; r = g = 0; next }
        /WARPGROUP\.DEPBAR\.LE gsb0, 0x1/ { # keep the batch with the most R2UR beyond two an HGMMA
            if (inwin && (!seen || r - 2 * g > worst_r - 2 * worst_g)) { worst_r = r; worst_g = g; seen = 1 }
            inwin = 0; next }
        /WARPGROUP\.DEPBAR/ { inwin = 0; next }
        inwin && /[[:space:]]R2UR[[:space:]]/ { r++ }
        inwin && /[[:space:]]HGMMA\./ { g++ }
        END { flush() }')
}

# wide_stores CUBIN: each flash_wgmma kernel writes O in 16-byte stores
# (STG.E.128), and has at most one 4-byte STG (the split tiles' flag).
# Written as a uint4, the stores went out as four 4-byte ones each (NVVM
# did not know the alignment), and in the accumulators' layout as 64
# 4-byte stores a thread: either way the store of O took a tile's worth of
# time (-4.6% at 2x16x4096x4096x128, -8.7% at 16 key tiles a tile).
wide_stores() {
    local name w n
    while read -r name w n; do
        [[ $w -gt 0 && $n -le 1 ]] ||
            fail "$1: $name has $w 16-byte and $n 4-byte global stores (O wanted in 16-byte ones)"
    done < <(sass "$1" | awk '
        /Function :/ { if (f != "") print f, w, n; f = $NF; w = n = 0; next }
        /[[:space:]]STG\.E\.128[[:space:]]/ { w++ }
        /[[:space:]]STG\.E[[:space:]]/ { n++ }
        END { if (f != "") print f, w, n }')
}

# ceiling_mmas CUBIN: the tensor ceilings' wgmma kernels (harness/
# ceiling_kernels.cu) issue the MMAs they are counted by: the bf16 peak
# HGMMA on bf16, the e4m3 one QGMMA on e4m3 (fp8's k32 form, twice the
# FLOPs an instruction, as kb_wgmma_fp8_flops counts), and neither touches
# local memory.  A ceiling kernel whose MMAs changed type or fell away
# would set every fp8 or bf16 row's roofline against the wrong rate.
ceiling_mmas() {
    local name b q l n=0
    "$cuobjdump" -xelf "$1" "$kbench" >/dev/null || { fail "cannot extract $1"; return; }
    while read -r name b q l; do
        n=$((n + 1))
        case $name in
        *ILb0E*) [[ $b -gt 0 && $q -eq 0 ]] || fail "$1: $name has $b bf16 HGMMAs and $q e4m3 QGMMAs (bf16 wanted)" ;;
        *) [[ $q -gt 0 && $b -eq 0 ]] || fail "$1: $name has $b bf16 HGMMAs and $q e4m3 QGMMAs (e4m3 wanted)" ;;
        esac
        [[ $l -eq 0 ]] || fail "$1: $name has $l LDL/STL (local memory)"
    done < <(sass "$1" | awk '
        /Function :/ { if (f ~ /wgmma_peak_kernel/) print f, b, q, l; f = $NF; b = q = l = 0; next }
        /[[:space:]]HGMMA\.[^ ]*\.BF16/ { b++ }
        /[[:space:]]QGMMA\.[^ ]*\.E4M3\.E4M3/ { q++ }
        /[[:space:]](LDL|STL)[[:space:].]/ { l++ }
        END { if (f ~ /wgmma_peak_kernel/) print f, b, q, l }')
    [[ $n -eq 2 ]] || fail "$1: $n wgmma peak kernels, not the bf16 and e4m3 ones"
    checked=$((checked + 1))
    echo "$1: the bf16 and e4m3 peak kernels with their MMAs, no local memory"
}

if grep -qx "ceiling_kernels.sm_90a.cubin" <<<"$elfs"; then
    ceiling_mmas ceiling_kernels.sm_90a.cubin
elif [[ $sm90a == true ]]; then
    fail "the build has sm_90a, but $kbench has no ceiling_kernels.sm_90a.cubin"
fi
for rung in "${mma_rungs[@]}"; do
    v=${rung#*/}
    cubins=$(grep -E "^$v\.sm_(8[0-9]|9[0-9]a?|[1-9][0-9][0-9]a?)\.cubin$" <<<"$elfs")
    if [[ -z $cubins ]]; then
        grep -q "^$v\.sm_" <<<"$elfs" || fail "$rung: not in $kbench"
        continue
    fi
    for c in $cubins; do check "$c" HMMA; done
done
for rung in "${wgmma_rungs[@]}"; do
    v=${rung#*/}
    if grep -qx "$v.sm_90a.cubin" <<<"$elfs"; then
        ws=
        for r in "${setmaxnreg_rungs[@]}"; do [[ $r == "$rung" ]] && ws=USETMAXREG; done
        check "$v.sm_90a.cubin" HGMMA $ws
        if [[ $rung == attention/flash_wgmma ]]; then
            softmax_under_pv "$v.sm_90a.cubin"
            uniform_descriptors "$v.sm_90a.cubin"
            wide_stores "$v.sm_90a.cubin"
        fi
    elif [[ $sm90a == true ]]; then
        fail "$rung: the build has sm_90a, but $kbench has no $v.sm_90a.cubin"
    else
        echo "$rung: no sm_90a in this build, not checked"
    fi
done
if [[ $failures -eq 0 && $checked -eq 0 ]]; then
    echo "no sm_80+ or sm_90a cubins of the tensor-core rungs to check; skipping"
    exit 77
fi
exit $((failures > 0))
