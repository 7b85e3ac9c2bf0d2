/* Every op kbench knows, and lookups by name. */
#include <string.h>
#include "harness/harness.h"
#include "kernels/add_layernorm.h"
#include "kernels/add_relu.h"
#include "kernels/attention.h"
#include "kernels/copy.h"
#include "kernels/embed.h"
#include "kernels/ffn.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/posenc.h"
#include "kernels/rmsnorm.h"
#include "kernels/softmax.h"

/* copy comes first: its best figure is the memory ceiling for later rows. */
const kb_op *const kb_ops[] = {
    &kb_op_copy, &kb_op_matmul, &kb_op_softmax, &kb_op_layernorm, &kb_op_add_layernorm, &kb_op_rmsnorm,
    &kb_op_attention, &kb_op_posenc, &kb_op_embed, &kb_op_add_relu, &kb_op_ffn,
    NULL,
};

/* --op takes each op at most once (cli.c), so this makes kb_options.ops
 * long enough for any --op list. */
_Static_assert(sizeof kb_ops / sizeof *kb_ops - 1 <= sizeof ((kb_options *)0)->ops / sizeof *((kb_options *)0)->ops,
               "kb_options.ops must hold every op");

const kb_op *kb_find_op(const char *name)
{
    for (int i = 0; kb_ops[i]; ++i)
        if (strcmp(kb_ops[i]->name, name) == 0)
            return kb_ops[i];
    return NULL;
}

const kb_variant *kb_find_variant(const kb_op *op, const char *name)
{
    for (int i = 0; op->variants[i]; ++i)
        if (strcmp(op->variants[i]->name, name) == 0)
            return op->variants[i];
    return NULL;
}

static const char *const dtype_names[] = {[KB_F32] = "f32", [KB_BF16] = "bf16", [KB_I32] = "i32"};
static const char *const math_names[] = {
    [KB_MATH_F32] = "f32", [KB_MATH_TF32] = "tf32", [KB_MATH_BF16] = "bf16", [KB_MATH_3XTF32] = "3xtf32"};

const char *kb_dtype_name(kb_dtype t) { return dtype_names[t]; }
const char *kb_math_name(kb_math m) { return math_names[m]; }
size_t kb_dtype_size(kb_dtype t) { return t == KB_BF16 ? 2 : 4; }

int kb_parse_dtype(const char *s, kb_dtype *out)
{
    for (int t = KB_F32; t <= KB_BF16; ++t) /* variants store f32 or bf16 */
        if (strcmp(s, dtype_names[t]) == 0) {
            *out = (kb_dtype)t;
            return 0;
        }
    return -1;
}

const char *kb_status_name(kb_status s)
{
    return s == KB_PASS ? "PASS" : s == KB_FAIL ? "FAIL" : "SKIP";
}
