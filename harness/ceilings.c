/* This GPU's ceilings: measured (our copy kernel and cudaMemcpy for memory,
 * a hot in-L2 copy for L2, our FMA-chain kernel for fp32, our wgmma kernel
 * for the tensor cores on Hopper, else a cuBLAS bf16 GEMM) beside the
 * datasheet figures computed from device attributes.  Every timed row is then set against the ceiling that bounds
 * it on the roofline. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "harness/harness.h"
#include "harness/timing.h"
#include "ops/copy.h"

extern const kb_variant kb_fma_peak, kb_wgmma_peak, kb_wgmma_fp8_peak, kb_bf16_gemm_peak, kb_read_peak,
    kb_write_peak;
double kb_stream_bytes(void);
double kb_fma_flops(void);
double kb_wgmma_flops(void);
double kb_wgmma_fp8_flops(void);
double kb_gemm_flops(void);
double kb_ceiling_inside_mhz(void);

/* Dense bf16 tensor FLOP per SM per clock, by architecture (0: unknown). */
static double tensor_flop_per_clock(int major, int minor)
{
    if (major == 9 && minor == 0)
        return 4096;  /* Hopper: 989 TFLOP/s dense at 1830 MHz on 132 SMs */
    if (major == 8 && minor == 0)
        return 2048;  /* A100 */
    return 0;
}

void kb_datasheet_ceilings(const kb_device_info *d, kb_ceilings *c)
{
    memset(c, 0, sizeof *c);
    double sm_hz = d->sm_clock_khz * 1e3;
    /* HBM and GDDR move data on both clock edges. */
    c->ds_mem_gb_s = 2.0 * d->mem_clock_khz * 1e3 * d->bus_width_bits / 8 * 1e-9;
    c->ds_fp32_gflop_s = d->sm_count * 128.0 * 2 * sm_hz * 1e-9; /* 128 FP32 lanes per SM */
    c->ds_tc_gflop_s = d->sm_count * tensor_flop_per_clock(d->cc_major, d->cc_minor) * sm_hz * 1e-9;
}

/* Best GB/s of the checked copy op at one size. */
static double copy_ceiling(int64_t n, int hot, void *flush, size_t flush_bytes)
{
    kb_options o;
    memset(&o, 0, sizeof o);
    o.hot = hot;
    o.row_cap_s = 1.0;
    double best = 0;
    KB_FOR_EACH_VARIANT(&kb_op_copy, v) {
        kb_job job = {&kb_op_copy, v, {1, {n}, 0}};
        kb_result r;
        kb_run_job(&job, &o, flush, flush_bytes, &r);
        if (r.status == KB_PASS && r.timed)
            best = fmax(best, r.bytes / (r.time_ms.median * 1e-3) * 1e-9);
    }
    kb_run_drop_case();
    return best;
}

/* Set up, time under o and tear down one ceiling kernel: r its timing,
 * *inside_mhz the SM clock its own stamps read (0: none).  NULL, or why it
 * cannot run. */
static const char *time_ceiling_kernel(const kb_variant *v, const kb_time_opts *o, kb_result *r, double *inside_mhz)
{
    void *ctx = NULL;
    memset(r, 0, sizeof *r);
    const char *e = v->setup(NULL, &ctx);
    if (!e)
        e = kb_time_variant(v, NULL, ctx, o, 0, 0, r);
    *inside_mhz = e ? 0 : kb_ceiling_inside_mhz();
    if (ctx)
        v->teardown(ctx);
    return e;
}

/* GB/s of a memory-ceiling kernel over its bytes, cold (L2 flushed
 * between samples); 0 when it cannot run. */
static double stream_ceiling(const kb_variant *v, void *flush, size_t flush_bytes)
{
    kb_result r;
    double inside;
    const kb_time_opts cold = {.flush = flush, .flush_bytes = flush_bytes};
    return time_ceiling_kernel(v, &cold, &r, &inside) ? 0 : kb_stream_bytes() / (r.time_ms.median * 1e-3) * 1e-9;
}

/* GFLOP/s of a compute-ceiling kernel, the SM clock NVML read around its
 * launches and the one inside them (our kernels' stamps), 0 when it cannot
 * run. */
static double compute_ceiling(const kb_variant *v, double flops, void *flush, size_t flush_bytes, double *clock_mhz,
                              double *inside_mhz)
{
    kb_result r;
    /* Hot, under the default rule: the kernels read no memory to flush. */
    const kb_time_opts hot = {.hot = 1, .flush = flush, .flush_bytes = flush_bytes};
    const char *e = time_ceiling_kernel(v, &hot, &r, inside_mhz);
    *clock_mhz = e ? 0 : r.clock_mhz;
    return e ? 0 : flops / (r.time_ms.median * 1e-3) * 1e-9;
}

void kb_measure_ceilings(const kb_device_info *d, void *flush, size_t flush_bytes, kb_ceilings *c)
{
    kb_datasheet_ceilings(d, c);
    c->mem_gb_s = copy_ceiling(1 << 28, 0, flush, flush_bytes);
    c->read_gb_s = stream_ceiling(&kb_read_peak, flush, flush_bytes);
    c->write_gb_s = stream_ceiling(&kb_write_peak, flush, flush_bytes);
    /* Source and destination together fill half of L2, and L2 stays warm. */
    c->l2_gb_s = copy_ceiling(d->l2_bytes / 16, 1, flush, flush_bytes);
    c->fp32_gflop_s =
        compute_ceiling(&kb_fma_peak, kb_fma_flops(), flush, flush_bytes, &c->fp32_clock_mhz, &c->fp32_inside_mhz);
    /* A GEMM from global memory cannot bound the GEMMs it is compared with:
     * our kernels beat cuBLAS's.  Where wgmma exists, MMAs from shared
     * memory alone do. */
    const kb_variant *tc = &kb_wgmma_peak;
    c->tc_gflop_s = compute_ceiling(tc, kb_wgmma_flops(), flush, flush_bytes, &c->tc_clock_mhz, &c->tc_inside_mhz);
    if (c->tc_gflop_s == 0) {
        tc = &kb_bf16_gemm_peak;
        c->tc_gflop_s = compute_ceiling(tc, kb_gemm_flops(), flush, flush_bytes, &c->tc_clock_mhz, &c->tc_inside_mhz);
    }
    snprintf(c->tc_kernel, sizeof c->tc_kernel, "%s", c->tc_gflop_s > 0 ? tc->name : "");
    /* fp8's rate by its own MMAs, where the bf16 one came from wgmma too. */
    double fp8_clock, fp8_inside;
    if (tc == &kb_wgmma_peak)
        c->fp8_gflop_s =
            compute_ceiling(&kb_wgmma_fp8_peak, kb_wgmma_fp8_flops(), flush, flush_bytes, &fp8_clock, &fp8_inside);
}

/* Measured where we have it, else the datasheet. */
static double pick(double measured, double datasheet) { return measured > 0 ? measured : datasheet; }

static double compute_ceiling_for(const kb_ceilings *c, kb_math m)
{
    double tc = pick(c->tc_gflop_s, c->ds_tc_gflop_s);
    /* tf32 runs the tensor cores at half the bf16 rate; 3xtf32 spends three
     * tf32 products on each fp32 one. */
    switch (m) {
    case KB_MATH_F32: return pick(c->fp32_gflop_s, c->ds_fp32_gflop_s);
    case KB_MATH_TF32: return tc / 2;
    case KB_MATH_3XTF32: return tc / 6;
    case KB_MATH_FP8: return pick(c->fp8_gflop_s, 2 * tc); /* else twice bf16's, the tensor cores' fp8 rate */
    default: return tc; /* bf16 and f16: the same dense rate on the tensor cores */
    }
}

double kb_memory_ceiling_for(const kb_ceilings *c, double write_share)
{
    const double copy = pick(c->mem_gb_s, c->ds_mem_gb_s);
    if (write_share < 0 || write_share > 1)
        return copy;
    const double read = pick(c->read_gb_s, copy), write = pick(c->write_gb_s, copy);
    return write_share <= 0.5 ? read + (copy - read) * 2 * write_share
                              : copy + (write - copy) * (2 * write_share - 1);
}

void kb_place_on_roofline(const kb_ceilings *c, kb_math math, double flops, double bytes, double write_share,
                          double median_ms, double *pct_of_ceiling, double *pct_of_peak, int *memory_bound)
{
    double sec = median_ms * 1e-3, gb_s = bytes / sec * 1e-9;
    double mem = kb_memory_ceiling_for(c, write_share), comp = compute_ceiling_for(c, math);
    *pct_of_ceiling = c->mem_gb_s > 0 ? 100.0 * gb_s / c->mem_gb_s : 0;
    *memory_bound = comp <= 0 || flops / bytes < comp / mem;
    *pct_of_peak = *memory_bound ? 100.0 * gb_s / mem : 100.0 * flops / sec * 1e-9 / comp;
}

void kb_apply_ceilings(kb_result *rows, int n, kb_ceilings *c, kb_meta_set *meta)
{
    double best_copy = 0;
    for (int i = 0; i < n; ++i)
        if (!strcmp(rows[i].op->name, "copy") && rows[i].timed && rows[i].status == KB_PASS && !rows[i].hot)
            best_copy = fmax(best_copy, rows[i].bytes / (rows[i].time_ms.median * 1e-3) * 1e-9);
    c->mem_gb_s = fmax(c->mem_gb_s, best_copy);
    for (int i = 0; i < n; ++i) {
        kb_result *r = &rows[i];
        /* A collective moves bytes over the links between GPUs, which no
         * ceiling of one GPU bounds: its GB/s is bus bandwidth, unplaced.
         * Any other row across N GPUs is placed as one GPU taking N times
         * as long, under N times one GPU's ceilings. */
        if (r->timed && r->status == KB_PASS && r->op->distributed)
            r->memory_bound = 1;
        else if (r->timed && r->status == KB_PASS)
            kb_place_on_roofline(c, r->variant->math, r->flops, r->bytes,
                                 kb_op_write_share(r->op, &r->shape, r->variant->dtype),
                                 r->time_ms.median * kb_devices_spanned(r->devices), &r->pct_of_ceiling,
                                 &r->pct_of_peak, &r->memory_bound);
    }
    if (c->mem_gb_s > 0)
        kb_meta_set_value(meta, "ceiling_mem_gb_s", "%.1f", c->mem_gb_s);
    if (c->l2_gb_s > 0)
        kb_meta_set_value(meta, "ceiling_l2_gb_s", "%.1f", c->l2_gb_s);
    if (c->fp32_gflop_s > 0)
        kb_meta_set_value(meta, "ceiling_fp32_gflop_s", "%.1f", c->fp32_gflop_s);
    if (c->fp32_clock_mhz > 0)
        kb_meta_set_value(meta, "ceiling_fp32_clock_mhz", "%.0f", c->fp32_clock_mhz);
    if (c->tc_gflop_s > 0)
        kb_meta_set_value(meta, "ceiling_tc_gflop_s", "%.1f", c->tc_gflop_s);
    if (c->tc_gflop_s > 0 && c->tc_kernel[0])
        kb_meta_set_value(meta, "ceiling_tc_kernel", "%s", c->tc_kernel);
    if (c->tc_clock_mhz > 0)
        kb_meta_set_value(meta, "ceiling_tc_clock_mhz", "%.0f", c->tc_clock_mhz);
    if (c->fp32_inside_mhz > 0)
        kb_meta_set_value(meta, "ceiling_fp32_clock_inside_mhz", "%.0f", c->fp32_inside_mhz);
    if (c->tc_inside_mhz > 0)
        kb_meta_set_value(meta, "ceiling_tc_clock_inside_mhz", "%.0f", c->tc_inside_mhz);
    if (c->fp8_gflop_s > 0)
        kb_meta_set_value(meta, "ceiling_fp8_gflop_s", "%.1f", c->fp8_gflop_s);
    if (c->read_gb_s > 0)
        kb_meta_set_value(meta, "ceiling_read_gb_s", "%.1f", c->read_gb_s);
    if (c->write_gb_s > 0)
        kb_meta_set_value(meta, "ceiling_write_gb_s", "%.1f", c->write_gb_s);
    kb_meta_set_value(meta, "datasheet_mem_gb_s", "%.1f", c->ds_mem_gb_s);
    kb_meta_set_value(meta, "datasheet_fp32_gflop_s", "%.1f", c->ds_fp32_gflop_s);
    if (c->ds_tc_gflop_s > 0)
        kb_meta_set_value(meta, "datasheet_tc_gflop_s", "%.1f", c->ds_tc_gflop_s);
}

static void print_line(const char *what, const char *unit, double measured, double datasheet)
{
    printf("%-22s %12.1f %12.1f %8s  %s\n", what, measured, datasheet,
           datasheet > 0 && measured > 0 ? "" : "-", unit);
    if (datasheet > 0 && measured > 0)
        printf("%-22s %34.1f%%\n", "", 100.0 * measured / datasheet);
}

int kb_cmd_ceilings(const kb_options *o)
{
    kb_device_info dev;
    char err[512];
    if (kb_gpu_open(o->device, &dev, err, sizeof err) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        return KB_EXIT_FAIL;
    }
    size_t flush_bytes;
    void *flush = kb_alloc_flush(&dev, &flush_bytes);
    if (!flush) {
        fprintf(stderr, "kbench: out of device memory for the L2 flush buffer\n");
        return KB_EXIT_FAIL;
    }
    kb_ceilings c;
    kb_measure_ceilings(&dev, flush, flush_bytes, &c);
    cudaFree(flush);
    printf("ceilings of %s (sm_%d%d, %d SMs, %d MHz)\n%-22s %12s %12s\n", dev.name, dev.cc_major,
           dev.cc_minor, dev.sm_count, dev.sm_clock_khz / 1000, "", "measured", "datasheet");
    print_line("memory (copy)", "GB/s, read + written", c.mem_gb_s, c.ds_mem_gb_s);
    print_line("memory (read)", "GB/s, read alone", c.read_gb_s, c.ds_mem_gb_s);
    print_line("memory (write)", "GB/s, written alone", c.write_gb_s, c.ds_mem_gb_s);
    print_line("L2 (hot copy)", "GB/s, read + written", c.l2_gb_s, 0);
    print_line("fp32 FMA", "GFLOP/s", c.fp32_gflop_s, c.ds_fp32_gflop_s);
    print_line("tensor bf16", "GFLOP/s", c.tc_gflop_s, c.ds_tc_gflop_s);
    print_line("tensor e4m3", "GFLOP/s", c.fp8_gflop_s, 2 * c.ds_tc_gflop_s);
    if (c.tc_gflop_s > 0)
        printf("tensor bf16 measured by %s, e4m3 %s%s; SM clock by NVML: %.0f MHz (fp32 FMA), %.0f MHz (tensor), "
               "datasheet figures at %d MHz\n",
               c.tc_kernel, c.fp8_gflop_s > 0 ? "by " : "unmeasured (twice bf16's datasheet)",
               c.fp8_gflop_s > 0 ? kb_wgmma_fp8_peak.name : "",
               c.fp32_clock_mhz, c.tc_clock_mhz, dev.sm_clock_khz / 1000);
    /* NVML reads the clock between launches; the kernels' own stamps say
     * what the SMs ran at under the load. */
    if (c.fp32_inside_mhz > 0 || c.tc_inside_mhz > 0)
        printf("SM clock inside the kernels: %.0f MHz (fp32 FMA), %.0f MHz (tensor; 0: cuBLAS's, not stamped)\n",
               c.fp32_inside_mhz, c.tc_inside_mhz);
    const double ds_tc_inside = c.ds_tc_gflop_s * c.tc_inside_mhz / (dev.sm_clock_khz / 1000.0);
    if (ds_tc_inside > 0)
        printf("tensor bf16 datasheet at %.0f MHz: %.1f GFLOP/s, of which the measured is %.1f%%\n", c.tc_inside_mhz,
               ds_tc_inside, 100.0 * c.tc_gflop_s / ds_tc_inside);
    return c.mem_gb_s > 0 && c.fp32_gflop_s > 0 ? 0 : KB_EXIT_FAIL;
}
