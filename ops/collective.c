/* What the three collectives' contracts share (collective.h). */
#include "ops/collective.h"

int kb_collective_ranks(const kb_shape *s) { return s->ranks > 0 ? s->ranks : 1; }


void kb_collective_bind(const kb_shape *s, void *const *dev, void *args)
{
    kb_collective_args *a = args;
    int ranks = kb_collective_ranks(s);
    *a = (kb_collective_args){.n = s->d[0], .ranks = ranks};
    for (int r = 0; r < ranks; ++r) {
        a->in[r] = dev[r];
        a->out[r] = dev[ranks + r];
    }
}

kb_tensor kb_collective_tensor(const char *name, int ranks, int64_t row_len, kb_dtype t, kb_role role,
                               int64_t reduction_len)
{
    return kb_tensor_of(name, kb_mul_dims(ranks, row_len), t, role, ranks, row_len, reduction_len,
                        (double)row_len * ranks);
}
