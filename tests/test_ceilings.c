/* The roofline bookkeeping: datasheet ceilings from device attributes, the
 * memory ceiling raised by the best cold copy row, and each row set against
 * the ceiling that bounds it (memory under the ridge point, compute above). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "harness/harness.h"
#include "ops/copy.h"
#include "ops/matmul.h"
#include "tests/check.h"

static kb_result timed(const kb_op *op, const kb_variant *v, double flops, double bytes, double ms)
{
    kb_result r;
    memset(&r, 0, sizeof r);
    r.op = op;
    r.variant = v;
    r.flops = flops;
    r.bytes = bytes;
    r.timed = 1;
    r.time_ms.median = ms;
    r.status = KB_PASS;
    return r;
}

static const char *meta_value(const kb_meta_set *m, const char *key)
{
    for (int i = 0; i < m->n; ++i)
        if (!strcmp(m->meta[i].key, key))
            return m->meta[i].value;
    return NULL;
}

/* The metadata of a run of every op on 8 GPUs fits: every op's baselines,
 * the ceilings and the datasheet's, each GPU's line (kb_meta_set's room
 * once overflowed silently and took the ceilings' lines with it). */
static void metadata_fits(const kb_device_info *d, kb_ceilings *c)
{
    static kb_meta_set meta;
    static kb_options o;
    for (o.nops = 0; kb_ops[o.nops]; ++o.nops)
        o.ops[o.nops] = kb_ops[o.nops];
    kb_collect_meta(d, &o, &meta);
    kb_apply_ceilings(NULL, 0, c, &meta);
    for (int k = 0; k < KB_MAX_RANKS; ++k) {
        char key[32];
        snprintf(key, sizeof key, "device_%d", k);
        kb_meta_set_value(&meta, key, "NVIDIA H200; pci_bus_id 00000000:19:00.0; sm_count 132; ceiling_mem_gb_s 4240");
    }
    CHECK(meta_value(&meta, "baseline_bf16_reduce_scatter") && meta_value(&meta, "ceiling_mem_gb_s"));
    CHECK(meta_value(&meta, "datasheet_tc_gflop_s") && meta_value(&meta, "device_7"));
    printf("a run of every op on %d GPUs: %d metadata lines of %d\n", KB_MAX_RANKS, meta.n, KB_META_MAX);
}

int main(void)
{
    /* An H100 SXM's attributes: 132 SMs at 1980 MHz, HBM3 at 2619 MHz x 5120 bits. */
    kb_device_info d = {.cc_major = 9, .cc_minor = 0, .sm_count = 132, .sm_clock_khz = 1980000,
                        .mem_clock_khz = 2619000, .bus_width_bits = 5120};
    kb_ceilings c;
    kb_datasheet_ceilings(&d, &c);
    c.mem_gb_s = 3000;
    metadata_fits(&d, &c);
    c.mem_gb_s = 0;
    CHECK_NEAR(c.ds_mem_gb_s, 3352.3, 0.1);
    CHECK_NEAR(c.ds_fp32_gflop_s, 66908.2, 0.1);
    CHECK_NEAR(c.ds_tc_gflop_s, 1070530.6, 0.1);
    CHECK(c.mem_gb_s == 0 && c.fp32_gflop_s == 0);

    const kb_variant *copy = kb_find_variant(&kb_op_copy, "vec4", KB_F32);
    const kb_variant *mm = kb_find_variant(&kb_op_matmul, "double_buffered", KB_F32);
    const kb_variant *tf32 = kb_find_variant(&kb_op_matmul, "cublas_tf32", KB_F32);
    kb_result rows[4] = {
        timed(&kb_op_copy, copy, 0, 3e9, 1.0),               /* 3000 GB/s: the memory ceiling */
        timed(&kb_op_matmul, mm, 1.1e12, 2e8, 22.0),         /* 50 TFLOP/s, far above the ridge */
        timed(&kb_op_matmul, mm, 2e9, 1e9, 0.5),             /* 2 FLOP/byte: memory-bound */
        timed(&kb_op_matmul, tf32, 1.1e12, 2e8, 3.0),        /* tf32: half the tensor rate */
    };
    rows[0].hot = 0;
    kb_meta_set meta = {0};
    kb_apply_ceilings(rows, 4, &c, &meta);

    CHECK_NEAR(c.mem_gb_s, 3000, 1e-6);
    CHECK_NEAR(rows[0].pct_of_ceiling, 100, 1e-9);
    CHECK(rows[1].memory_bound == 0);
    CHECK_NEAR(rows[1].pct_of_peak, 100.0 * 50000 / 66908.2, 0.01);
    CHECK(rows[2].memory_bound == 1);
    CHECK_NEAR(rows[2].pct_of_peak, 100.0 * 2000 / 3000, 1e-6);
    CHECK_NEAR(rows[2].pct_of_ceiling, 100.0 * 2000 / 3000, 1e-6);
    CHECK_NEAR(rows[3].pct_of_peak, 100.0 * (1.1e12 / 3e-3 * 1e-9) / (1070530.6 / 2), 0.01);

    /* A measured ceiling wins over the datasheet; a hot copy never sets the memory ceiling. */
    c.fp32_gflop_s = 60000;
    rows[0].hot = 1;
    c.mem_gb_s = 0;
    kb_apply_ceilings(rows, 4, &c, &meta);
    CHECK_NEAR(rows[1].pct_of_peak, 100.0 * 50000 / 60000, 0.01);
    CHECK(c.mem_gb_s == 0 && rows[2].pct_of_ceiling == 0);
    CHECK_NEAR(rows[2].pct_of_peak, 100.0 * 2000 / 3352.3, 0.01); /* datasheet memory */

    /* The header records the ceilings, each key once, and with a measured
     * tensor ceiling what measured it and the clock its run held. */
    CHECK(!meta_value(&meta, "ceiling_tc_kernel") && !meta_value(&meta, "ceiling_tc_clock_mhz"));
    CHECK(!meta_value(&meta, "ceiling_tc_clock_inside_mhz"));
    c.tc_gflop_s = 900000, c.tc_clock_mhz = 1755, c.tc_inside_mhz = 1762.4;
    snprintf(c.tc_kernel, sizeof c.tc_kernel, "wgmma_peak");
    kb_apply_ceilings(rows, 4, &c, &meta);
    CHECK_NEAR(rows[3].pct_of_peak, 100.0 * (1.1e12 / 3e-3 * 1e-9) / (900000.0 / 2), 0.01);
    CHECK(meta_value(&meta, "ceiling_tc_kernel") && !strcmp(meta_value(&meta, "ceiling_tc_kernel"), "wgmma_peak"));
    CHECK(meta_value(&meta, "ceiling_tc_clock_mhz") && !strcmp(meta_value(&meta, "ceiling_tc_clock_mhz"), "1755"));
    CHECK(meta_value(&meta, "ceiling_tc_clock_inside_mhz") &&
          !strcmp(meta_value(&meta, "ceiling_tc_clock_inside_mhz"), "1762"));
    CHECK(!meta_value(&meta, "ceiling_fp32_clock_inside_mhz")); /* not stamped here */
    CHECK(meta_value(&meta, "ceiling_fp32_gflop_s") && !strcmp(meta_value(&meta, "ceiling_fp32_gflop_s"), "60000.0"));
    CHECK(meta_value(&meta, "datasheet_mem_gb_s") && !strcmp(meta_value(&meta, "datasheet_mem_gb_s"), "3352.3"));
    int seen = 0;
    for (int i = 0; i < meta.n; ++i)
        seen += !strcmp(meta.meta[i].key, "ceiling_mem_gb_s");
    CHECK(seen == 1);

    /* Ceilings by access mix: a row's bytes split by its tensors' roles
     * (matmul 4096x8x4096 writes 0.2% of them, copy half), its memory
     * ceiling the read ceiling's at no writes, the copy's at half, the
     * write ceiling's at all, linear between; without them the copy's. */
    const kb_shape mm_narrow = {3, {4096, 8, 4096}}, vec = {1, {1 << 20}};
    const double share = kb_op_write_share(&kb_op_matmul, &mm_narrow, KB_F32);
    CHECK_NEAR(share, 8.0 / (4096 + 8 + 8), 1e-12);
    CHECK_NEAR(kb_op_write_share(&kb_op_copy, &vec, KB_F32), 0.5, 1e-12);
    CHECK(kb_op_write_share(&kb_op_matmul, &(kb_shape){0}, KB_F32) < 0);
    c.mem_gb_s = 3000;
    CHECK_NEAR(kb_memory_ceiling_for(&c, 0.25), 3000, 1e-9); /* read and write not measured */
    c.read_gb_s = 3400, c.write_gb_s = 2800;
    CHECK_NEAR(kb_memory_ceiling_for(&c, 0), 3400, 1e-9);
    CHECK_NEAR(kb_memory_ceiling_for(&c, 0.25), 3200, 1e-9);
    CHECK_NEAR(kb_memory_ceiling_for(&c, 0.5), 3000, 1e-9);
    CHECK_NEAR(kb_memory_ceiling_for(&c, 0.75), 2900, 1e-9);
    CHECK_NEAR(kb_memory_ceiling_for(&c, 1), 2800, 1e-9);
    CHECK_NEAR(kb_memory_ceiling_for(&c, -1), 3000, 1e-9);
    kb_result narrow = timed(&kb_op_matmul, mm, 2.0 * 4096 * 8 * 4096, 4.0 * (2 * 4096 * 4096 + 2 * 4096 * 8), 0.04);
    narrow.shape = mm_narrow;
    kb_apply_ceilings(&narrow, 1, &c, &meta);
    const double gb_s = narrow.bytes / 0.04e-3 * 1e-9, ceiling = 3400 - 400 * 2 * share;
    CHECK(narrow.memory_bound == 1);
    CHECK_NEAR(narrow.pct_of_peak, 100.0 * gb_s / ceiling, 1e-6); /* under 100: over the copy's 3000 GB/s */
    CHECK(narrow.pct_of_peak < 100 && narrow.pct_of_ceiling > 100);
    CHECK(meta_value(&meta, "ceiling_read_gb_s") && !strcmp(meta_value(&meta, "ceiling_read_gb_s"), "3400.0"));
    CHECK(meta_value(&meta, "ceiling_write_gb_s") && !strcmp(meta_value(&meta, "ceiling_write_gb_s"), "2800.0"));

    /* A FAIL row gets no percentages. */
    kb_result failed = timed(&kb_op_matmul, mm, 1e9, 1e9, 1.0);
    failed.status = KB_FAIL;
    kb_apply_ceilings(&failed, 1, &c, &meta);
    CHECK(failed.pct_of_peak == 0 && failed.pct_of_ceiling == 0);
    return CHECK_DONE();
}
