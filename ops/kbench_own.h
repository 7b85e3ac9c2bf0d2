/* The one macro a kernel of one's own needs, for `kbench run --kernel
 * FILE.cu` (docs/own-kernel.md): the file includes its op's contract
 * (ops/<op>.h: the argument struct and what every variant must honour),
 * defines its launch (and optionally setup, teardown and unsupported) as
 * an in-tree variant does, and ends with
 *
 *     KB_OWN_VARIANT("softmax", {.name = "mine", .summary = "...",
 *                                .dtype = KB_F32, .math = KB_MATH_F32,
 *                                .launch = launch})
 *
 * naming the op and listing the variant's forms (one per dtype, all of
 * one name).  kbench compiles the file into a shared object, finds these
 * two symbols in it, and runs the variant beside its own. */
#ifndef KBENCH_OWN_H
#define KBENCH_OWN_H

#include "kbench.h"

#define KB_OWN_VARIANT(op_name, ...)                                                                   \
    extern "C" const char kb_own_op[] = op_name;                                                       \
    extern "C" const kb_variant kb_own_variants[] = {__VA_ARGS__, KB_VARIANT_END};

#endif
