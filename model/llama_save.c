/* Writing the Llama-style model as a Hugging Face checkpoint directory:
 * config.json and model.safetensors in F32, BF16 or F16, what
 * kb_llama_load and transformers' from_pretrained read.  kb_tf_save writes
 * only torch.nn.Transformer's names in F32, so the safetensors layout is
 * written here the same way: the header padded to 8 bytes, then the
 * tensors in order, each file via a temporary renamed into place. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/fileio.h"
#include "model/llama.h"

static const char *const dtype_names[] = {"F32", "BF16", "F16"};
static const char *const torch_names[] = {"float32", "bfloat16", "float16"};
static const int dtype_bytes[] = {4, 2, 2};

typedef struct {
    FILE *out;
    kb_llama_dtype dtype;
    uint64_t bytes;
    int bad;
} st_out;

static void header_entry(const char *name, int64_t rows, int64_t cols, const float *data, void *user)
{
    st_out *w = user;
    (void)data;
    const uint64_t n = (uint64_t)rows * (uint64_t)(cols ? cols : 1), size = n * (uint64_t)dtype_bytes[w->dtype];
    fprintf(w->out, ", \"%s\": {\"dtype\": \"%s\", \"shape\": [%lld", name, dtype_names[w->dtype], (long long)rows);
    if (cols)
        fprintf(w->out, ", %lld", (long long)cols);
    fprintf(w->out, "], \"data_offsets\": [%llu, %llu]}", (unsigned long long)w->bytes,
            (unsigned long long)(w->bytes + size));
    w->bytes += size;
}

static void data_entry(const char *name, int64_t rows, int64_t cols, const float *data, void *user)
{
    st_out *w = user;
    (void)name;
    const int64_t n = rows * (cols ? cols : 1);
    if (w->dtype == KB_LLAMA_F32) {
        w->bad |= fwrite(data, sizeof *data, (size_t)n, w->out) != (size_t)n;
        return;
    }
    for (int64_t i = 0; i < n && !w->bad; ++i) {
        const uint16_t h = w->dtype == KB_LLAMA_BF16 ? kb_f32_to_bf16(data[i]) : kb_f32_to_f16(data[i]);
        const unsigned char le[2] = {(unsigned char)h, (unsigned char)(h >> 8)};
        w->bad |= fwrite(le, 1, 2, w->out) != 2;
    }
}

static char *header(const kb_llama_model *m, kb_llama_dtype dtype, size_t *len)
{
    char *text = NULL;
    st_out w = {open_memstream(&text, len), dtype, 0, 0};
    if (!w.out)
        return NULL;
    fputs("{\"__metadata__\": {\"format\": \"pt\"}", w.out);
    kb_llama_each_weight(m, header_entry, &w);
    fputc('}', w.out);
    while (ftell(w.out) % 8)
        fputc(' ', w.out);
    return fclose(w.out) == 0 ? text : (free(text), NULL);
}

static int write_safetensors(const kb_llama_model *m, kb_llama_dtype dtype, const char *tmp)
{
    size_t len;
    char *head = header(m, dtype, &len);
    st_out w = {head ? fopen(tmp, "wb") : NULL, dtype, 0, 0};
    if (!w.out) {
        free(head);
        return -1;
    }
    unsigned char le[8];
    for (int i = 0; i < 8; ++i)
        le[i] = (unsigned char)((uint64_t)len >> (8 * i));
    w.bad = fwrite(le, 1, 8, w.out) != 8 || fwrite(head, 1, len, w.out) != len;
    kb_llama_each_weight(m, data_entry, &w);
    free(head);
    return (fclose(w.out) != 0 || w.bad) ? -1 : 0;
}

static int write_config(const kb_llama_config *c, kb_llama_dtype dtype, const char *tmp)
{
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    const kb_llama_rope_scaling *r = &c->rope_scaling;
    char scaling[256] = "null";
    if (r->factor != 0)
        snprintf(scaling, sizeof scaling,
                 "{\"rope_type\": \"llama3\", \"factor\": %.17g, \"low_freq_factor\": %.17g, "
                 "\"high_freq_factor\": %.17g, \"original_max_position_embeddings\": %d}",
                 r->factor, r->low_freq_factor, r->high_freq_factor, r->original_max_pos);
    fprintf(f,
            "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n"
            "  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n  \"num_hidden_layers\": %d,\n"
            "  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n  \"head_dim\": %d,\n"
            "  \"vocab_size\": %d,\n  \"max_position_embeddings\": %d,\n  \"rms_norm_eps\": %.17g,\n"
            "  \"rope_theta\": %.17g,\n  \"rope_scaling\": %s,\n  \"tie_word_embeddings\": %s,\n"
            "  \"hidden_act\": \"silu\",\n  \"attention_bias\": false,\n  \"mlp_bias\": false,\n"
            "  \"torch_dtype\": \"%s\"\n}\n",
            c->d_model, c->d_ff, c->layers, c->heads, c->kv_heads, c->head_dim, c->vocab, c->max_pos, c->eps,
            c->rope_theta, scaling, c->tied ? "true" : "false", torch_names[dtype]);
    const int bad = ferror(f);
    return fclose(f) == 0 && !bad ? 0 : -1;
}

/* dir/name as a writer replaces it (kb_output_target), and its temporary twin. */
static int output_of(const char *dir, const char *name, char *target, char *tmp, char *err, size_t errlen)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return kb_report(err, errlen, "%s: cannot write the checkpoint: %s", dir, strerror(ENAMETOOLONG));
    if (kb_output_target(path, target, PATH_MAX, err, errlen) != 0)
        return -1;
    snprintf(tmp, PATH_MAX + 32, "%s.tmp.%ld", target, (long)getpid());
    return 0;
}

int kb_llama_save(const kb_llama_model *m, const char *dir, kb_llama_dtype dtype, char *err, size_t errlen)
{
    char st[PATH_MAX], cfg[PATH_MAX], st_tmp[PATH_MAX + 32], cfg_tmp[PATH_MAX + 32];
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return kb_report(err, errlen, "%s: cannot make the directory: %s", dir, strerror(errno));
    if (output_of(dir, "model.safetensors", st, st_tmp, err, errlen) != 0 ||
        output_of(dir, "config.json", cfg, cfg_tmp, err, errlen) != 0)
        return -1;
    int rc = 0;
    /* Both written in full before either replaces what was there. */
    if (write_safetensors(m, dtype, st_tmp) != 0 || write_config(&m->cfg, dtype, cfg_tmp) != 0 ||
        rename(st_tmp, st) != 0 || rename(cfg_tmp, cfg) != 0)
        rc = kb_report(err, errlen, "%s: cannot write the checkpoint: %s", dir, strerror(errno));
    unlink(st_tmp);
    unlink(cfg_tmp);
    return rc;
}
