#!/usr/bin/env bash
# `kbench run --kernel FILE.cu`: each file in examples/ compiles, loads and
# passes the contract's checks (on a machine without a GPU the run then
# stops at the GPU, exit 1; with one, every row at the test sizes passes
# and the verdict says so, a planted NaN on the masked row fails, and so
# do a kernel that changes its input and one that works on its first call
# alone);
# every broken file is refused in one line with exit 2 before any GPU
# work: a compile error (nvcc's first), no variant or two, an unknown op,
# another --op, a name kbench's own variant has, a dtype the op's contract
# lacks, no launch, a missing file.
#   tests/test_own_kernel.sh KBENCH SOURCE_ROOT
src=$(realpath "$2") # before shell_test.sh moves to its working folder
source "$(dirname "$0")/shell_test.sh"
example=$src/examples/softmax_online.cu
has_gpu=0
nvidia-smi -L >/dev/null 2>&1 && has_gpu=1

for f in "$src"/examples/*.cu; do
    "$kbench" run --kernel "$f" --test-sizes --csv "$work/own.csv" >out 2>err
    rc=$?
    if ((has_gpu)); then
        [[ $rc -eq 0 ]] && grep -q "correct: yes" out || fail "$f on the GPU: rc=$rc $(tail -5 out) $(cat err)"
    else
        [[ $rc -eq 1 ]] && grep -q "no CUDA device" err || fail "$f: rc=$rc (want 1, no GPU): $(cat out err)"
        grep -q "^own kernel .*(fnv1a64 [0-9a-f]\{16\})" out || fail "$f: no plan line: $(cat out)"
    fi
done

# refused PATTERN FILE [ARGS...]: the file is refused in one line.
refused() {
    local pattern=$1 file=$2
    shift 2
    expect_line 2 "$pattern" run --kernel "$file" "$@"
}

sed 's/return;$/return/' "$example" >bad.cu
refused "bad.cu does not compile: .*bad.cu([0-9]*): error" bad.cu
printf '#include "ops/softmax.h"\n/* KB_OWN_VARIANT("softmax", {}) in a comment does not count */\n' >none.cu
refused "none.cu defines no variant" none.cu
{ cat "$example"; grep -A1 '^KB_OWN_VARIANT' "$example"; } >twice.cu
refused "twice.cu calls KB_OWN_VARIANT 2 times" twice.cu
sed 's/"softmax", {/"sofmax", {/' "$example" >unknown.cu
refused "for op 'sofmax', which kbench does not have" unknown.cu
refused "softmax_online.cu's variant is for softmax, not --op matmul" "$example" --op matmul
refused "give one --op at most" "$example" --op softmax,matmul
sed 's/"online_warp"/"warp"/' "$example" >clash.cu
refused "named 'warp', as kbench's own softmax warp is" clash.cu
sed 's/KB_F32, .math = KB_MATH_F32/KB_E4M3, .math = KB_MATH_FP8/' "$example" >dtype.cu
refused "softmax has no e4m3 forms in kbench" dtype.cu
sed 's/, .launch = launch})/})/' "$example" >nolaunch.cu
refused "variant 'online_warp' has no launch" nolaunch.cu
sed 's/.launch = launch})/.launch = launch}, {.name = "other", .dtype = KB_F16, .launch = launch})/' "$example" >two.cu
refused "defines variants 'online_warp' and 'other'" two.cu
refused "missing.cu" missing.cu
refused "unknown variant 'nosuch'" "$example" --variant nosuch

if ((has_gpu)); then # a softmax that forgets the fully masked row: NaN there, and a FAIL that says so
    sed 's/m == -INFINITY ? 0.0f : 1.0f \/ s/1.0f \/ s/; s/m == -INFINITY ? 0.0f : expf/expf/' "$example" >nan.cu
    "$kbench" run --kernel nan.cu --test-sizes --csv nan.csv >out 2>err
    [[ $? -eq 1 ]] && grep -q "correct: NO" out || fail "a NaN on the masked row was not caught: $(tail -5 out)"
    grep -q "hint: softmax's contract: .*row 2 is entirely -inf" out || fail "no hint at the masked row: $(tail -5 out)"
    # One that sets the low bit of its last row's inputs after its work (its
    # outputs stay within a unit in the last place): the guard names x.
    sed -e 's|^static const char \*launch|__global__ void low_bits(int R, int C, unsigned *x) { for (int j = threadIdx.x; j < C; j += 32) x[(size_t)(R - 1) * C + j] \|= 1u; }\n\nstatic const char *launch|' \
        -e 's|    KB_LAUNCHED();|    low_bits<<<1, 32, 0, stream>>>(a->R, a->C, (unsigned *)a->x);\n    KB_LAUNCHED();|' "$example" >mutate.cu
    "$kbench" run --kernel mutate.cu --test-sizes --csv mutate.csv >out 2>err
    [[ $? -eq 1 ]] && grep -q "it changed its input x" out || fail "an input changed was not caught: $(tail -5 out)"
    # One that works on its first call alone, its timed calls leaving that
    # result in place: the launch on outputs poisoned again after timing fails.
    sed -e 's|^static const char \*launch|static const char *setup(const void *args, void **ctx) { (void)args; *ctx = calloc(1, sizeof(int)); return NULL; }\nstatic void teardown(void *ctx) { free(ctx); }\n\nstatic const char *launch|' \
        -e 's|    (void)ctx;|    if ((*(int *)ctx)++)\n        return NULL; /* the cheat */|' \
        -e 's|\.launch = launch})|.setup = setup, .teardown = teardown, .launch = launch})|' \
        -e 's|#include <math.h>|#include <math.h>\n#include <stdlib.h>|' "$example" >once.cu
    "$kbench" run --kernel once.cu --test-sizes --csv once.csv >out 2>err
    [[ $? -eq 1 ]] && grep -q "after timing, on outputs poisoned again" out ||
        fail "a kernel that works once was not caught: $(tail -5 out)"
fi

[[ $failures -eq 0 ]] && echo "all own-kernel checks passed"
exit $((failures > 0))
