/* Loading torch.nn.Transformer weights from safetensors: a seeded model is
 * written under PyTorch's names by a small writer here, loaded back, and
 * must give the same forward; damaged files are rejected naming the problem. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/transformer.h"
#include "tests/check.h"

/* Damage to write: leave one tensor out, misstate its shape, put a value
 * in it, or add a tensor of the given dims ("1" or "0, 8"). */
typedef struct {
    const char *skip, *reshape, *poison, *extra, *extra_dims;
    float value;
} damage;

typedef struct {
    char header[1 << 16];
    size_t hlen;
    float *data;
    uint64_t floats;
    damage d;
} st_writer;

static void collect(const char *name, int ndim, const int64_t *shape, const float *data, void *user)
{
    st_writer *w = user;
    if (w->d.skip && !strcmp(name, w->d.skip))
        return;
    uint64_t n = (uint64_t)shape[0] * (ndim == 2 ? (uint64_t)shape[1] : 1);
    char dims[64];
    if (w->d.extra_dims && !strcmp(name, w->d.extra))
        snprintf(dims, sizeof dims, "%s", w->d.extra_dims);
    else if (w->d.reshape && !strcmp(name, w->d.reshape))
        snprintf(dims, sizeof dims, "1, %llu", (unsigned long long)n);
    else if (ndim == 2)
        snprintf(dims, sizeof dims, "%lld, %lld", (long long)shape[0], (long long)shape[1]);
    else
        snprintf(dims, sizeof dims, "%lld", (long long)shape[0]);
    w->hlen += (size_t)snprintf(w->header + w->hlen, sizeof w->header - w->hlen,
                                "%s\"%s\": {\"dtype\": \"F32\", \"shape\": [%s], "
                                "\"data_offsets\": [%llu, %llu]}",
                                w->hlen > 1 ? ", " : "", name, dims, (unsigned long long)(w->floats * 4),
                                (unsigned long long)((w->floats + n) * 4));
    w->data = realloc(w->data, (size_t)(w->floats + n + 1) * sizeof(float));
    memcpy(w->data + w->floats, data, (size_t)n * sizeof(float));
    if (w->d.poison && !strcmp(name, w->d.poison))
        w->data[w->floats + n / 2] = w->d.value;
    w->floats += n;
}

static void write_model(const kb_tf_model *m, const char *path, damage d)
{
    static st_writer w;
    static const float one = 1;
    memset(&w, 0, sizeof w);
    w.d = d;
    w.header[w.hlen++] = '{';
    kb_tf_each_weight(m, collect, &w);
    if (d.extra)
        collect(d.extra, 1, (int64_t[]){d.extra_dims && d.extra_dims[0] == '0' ? 0 : 1}, &one, &w);
    w.header[w.hlen++] = '}';
    while (w.hlen % 8)
        w.header[w.hlen++] = ' ';
    FILE *f = fopen(path, "wb");
    uint64_t len = w.hlen;
    unsigned char le[8];
    for (int i = 0; i < 8; ++i)
        le[i] = (unsigned char)(len >> (8 * i));
    fwrite(le, 1, 8, f);
    fwrite(w.header, 1, w.hlen, f);
    fwrite(w.data, sizeof(float), (size_t)w.floats, f);
    fclose(f);
    free(w.data);
}

int main(void)
{
    char path[] = "/tmp/kbench-tf-XXXXXX", err[512];
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    kb_tf_config c = {8, 2, 16, 2, 1, 1e-5f, 1};
    kb_tf_model seeded, loaded;
    CHECK(kb_tf_init_random(&seeded, &c, 11) == 0);
    write_model(&seeded, path, (damage){0});

    CHECK(kb_tf_load(&loaded, path, 2, 1, err, sizeof err) == 0);
    CHECK(loaded.cfg.d_model == 8 && loaded.cfg.d_ff == 16 && loaded.cfg.enc_layers == 2 &&
          loaded.cfg.dec_layers == 1 && loaded.cfg.heads == 2);
    float src[3 * 8], tgt[2 * 8], a[2 * 8], b[2 * 8];
    for (int i = 0; i < 24; ++i)
        src[i] = tgt[i % 16] = (float)(i % 7) / 7 - 0.4f;
    kb_tf_reference(&seeded, 1, 3, 2, src, tgt, a);
    kb_tf_reference(&loaded, 1, 3, 2, src, tgt, b);
    CHECK(memcmp(a, b, sizeof a) == 0);
    kb_tf_free(&loaded);

    /* Heads the weights cannot hold; a missing tensor; a wrong shape. */
    CHECK(kb_tf_load(&loaded, path, 3, 1, err, sizeof err) != 0);
    CHECK(strstr(err, "3 heads do not divide d_model = 8") != NULL);
    write_model(&seeded, path, (damage){.skip = "decoder.norm.bias"});
    CHECK(kb_tf_load(&loaded, path, 2, 1, err, sizeof err) != 0);
    CHECK(strstr(err, "decoder.norm.bias") != NULL);
    write_model(&seeded, path, (damage){.reshape = "encoder.layers.1.linear2.weight"});
    CHECK(kb_tf_load(&loaded, path, 2, 1, err, sizeof err) != 0);
    CHECK(strstr(err, "encoder.layers.1.linear2.weight") != NULL && strstr(err, "shape") != NULL);
    write_model(&seeded, path, (damage){.skip = "encoder.layers.0.linear1.weight"});
    CHECK(kb_tf_load(&loaded, path, 2, 1, err, sizeof err) != 0);
    CHECK(strstr(err, "encoder.layers.0") != NULL);

    /* As PyTorch's strict load: NaN or Inf, a tensor the model has no place
     * for (even far past its layers), a zero-sized dimension. */
    static const struct {
        damage d;
        const char *phrase;
    } refused[] = {
        {{.poison = "encoder.layers.0.linear1.weight", .value = NAN},
         "tensor 'encoder.layers.0.linear1.weight' holds NaN or Inf"},
        {{.poison = "decoder.norm.bias", .value = INFINITY}, "tensor 'decoder.norm.bias' holds NaN or Inf"},
        {{.extra = "decoder.layers.0.extra.weight"},
         "tensor 'decoder.layers.0.extra.weight' is not part of a torch.nn.Transformer with 2 encoder and 1 decoder"},
        {{.extra = "lm_head.weight"}, "tensor 'lm_head.weight' is not part of"},
        {{.extra = "encoder.layers.65535.norm1.weight"}, "no tensor named 'encoder.layers.2.self_attn.in_proj_weight'"},
        {{.extra = "empty", .extra_dims = "0, 8"}, "tensor 'empty' has a zero-sized dimension"},
        {{.extra = "bell\\u0007"}, "tensor 'bell\\x07' is not part of"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; ++i) {
        write_model(&seeded, path, refused[i].d);
        err[0] = '\0';
        CHECK(kb_tf_load(&loaded, path, 2, 1, err, sizeof err) != 0);
        if (!strstr(err, refused[i].phrase) || strchr(err, '\n'))
            fprintf(stderr, "expected \"%s\" in: %s\n", refused[i].phrase, err);
        CHECK(strstr(err, refused[i].phrase) != NULL && strchr(err, '\n') == NULL);
    }

    kb_tf_free(&seeded);
    remove(path);
    return CHECK_DONE();
}
