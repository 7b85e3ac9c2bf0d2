/* The terminal printer: one line per row as it completes. */
#include <stdio.h>
#include "harness/harness.h"

void kb_table_header(FILE *f)
{
    fprintf(f, "%-9s %-3s %-7s %-16s %-6s %-16s %10s %10s %9s %8s %6s %5s %9s %-4s\n", "row", "gpu", "op",
            "variant", "dtype", "shape", "median_ms", "GFLOP/s", "GB/s", "speedup", "noise%",
            "MHz", "max_err", "stat");
}

/* "  throttled: clock -31% sw_power_cap" after a throttled row's status. */
static void throttle_note(FILE *f, const kb_result *r)
{
    char names[160];
    double max = kb_nvml_max_clock_mhz();
    fprintf(f, "  throttled:");
    if (r->clock_mhz > 0 && max > 0)
        fprintf(f, " clock %+.0f%%", 100.0 * (r->clock_mhz / max - 1));
    kb_throttle_names(r->throttle & KB_THR_POWER_THERMAL, names, sizeof names);
    fprintf(f, "%s%s", names[0] ? " " : "", names);
}

void kb_table_row(FILE *f, const kb_result *r, int index, int total)
{
    char pos[32], shape[128];
    int timed = r->timed && r->status == KB_PASS;
    snprintf(pos, sizeof pos, "[%d/%d]", index, total);
    kb_format_shape(r->op, &r->shape, shape, sizeof shape);
    /* gpu: the row's GPU, or the GPUs it spanned ("0+1"): a --devices run's
     * workers print their rows as they finish, interleaved. */
    fprintf(f, "%-9s %-3s %-7s %-16s %-6s %-16s ", pos, r->devices, r->op->name, r->variant->name,
            kb_math_name(r->variant->math), shape);
    if (timed) {
        double sec = r->time_ms.median * 1e-3;
        fprintf(f, "%10.4f %10.1f %9.1f ", r->time_ms.median, r->flops / sec * 1e-9,
                r->bytes / sec * 1e-9);
        if (r->speedup > 0)
            fprintf(f, "%7.2fx ", r->speedup);
        else
            fprintf(f, "%8s ", "-");
        fprintf(f, "%6.2f ", 100.0 * r->time_ms.rel_stdev);
    } else
        fprintf(f, "%10s %10s %9s %8s %6s ", "-", "-", "-", "-", "-");
    if (timed && r->clock_mhz > 0)
        fprintf(f, "%5.0f ", r->clock_mhz);
    else
        fprintf(f, "%5s ", "-");
    if (r->rows_checked > 0)
        fprintf(f, "%9.2e ", r->check.max_abs_err);
    else
        fprintf(f, "%9s ", "-");
    fprintf(f, "%-4s%s%s", kb_status_name(r->status), r->reason[0] ? "  " : "", r->reason);
    if (timed && r->throttled)
        throttle_note(f, r);
    fputc('\n', f);
    fflush(f);
}
