/* The timing engine (timing.c): every timed row of kbench goes through
 * kb_time, whether `kbench run` times a variant, `kbench model` a whole
 * forward or a CUDA graph of it, `kbench model generate` a prefill or a
 * run of decode steps, or `kbench model stages` a stage's.  So every row
 * of the README follows one rule: the warm-up, the settling after a power
 * or thermal limit, the L2 flush before each sample, one sample between two
 * CUDA events, the stop rule, NVML's readings over the samples, the energy
 * window, the timing of a row across GPUs, and the sweep's phase
 * accounting. */
#ifndef KBENCH_TIMING_H
#define KBENCH_TIMING_H

#include <stdio.h>
#include <cuda_runtime_api.h>
#include "harness/harness.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the stop rule ---- */
#define KB_STOP_CAP_S 1.0       /* --max-time */
#define KB_STOP_MAX_NOISE 0.01  /* --max-noise, as a fraction */
#define KB_STOP_MIN_SAMPLES 20  /* --min-samples */
#define KB_MIN_SAMPLES 3        /* a row never stops before a median has three samples */
#define KB_MAX_SAMPLES 2000     /* nor samples past this many */

/* When a row's sampling stops: once cap_s of sampling is spent, or from
 * min_samples samples on once the median's relative noise
 * (kb_median_noise) is under max_noise.  A zero field means its default
 * (KB_STOP_*), so a rule set from no flag is the default rule. */
typedef struct {
    double cap_s;
    double max_noise;
    int min_samples;
} kb_stop_rule;

/* Pure: whether sampling stops after st->n samples (st their statistics)
 * that took elapsed_s.  Never under KB_MIN_SAMPLES, always at
 * KB_MAX_SAMPLES. */
int kb_stop_rule_met(const kb_stop_rule *rule, const kb_stats *st, double elapsed_s);
/* The rule in words, for a CSV's stop_rule line. */
void kb_stop_rule_text(const kb_stop_rule *rule, char *buf, size_t len);
/* The rule's flags, which every command that times rows takes with these
 * words and ranges: --max-time S (seconds in (0, 3600]), --max-noise PCT
 * (0.01 to 100) and --min-samples N (3 to 2000). */
int kb_is_stop_flag(const char *flag);
/* One of them and its value into rule: 0, or -1 with one line in err. */
int kb_parse_stop_flag(const char *flag, const char *val, kb_stop_rule *rule, char *err, size_t errlen);
/* kbench run's rule, from the three options it keeps it in. */
kb_stop_rule kb_options_stop_rule(const kb_options *o);

/* ---- timing one row ---- */
/* One launch of what a row times, enqueued on `stream`: NULL, or what failed. */
typedef const char *(*kb_launch_fn)(void *arg, cudaStream_t stream);

/* What a row times.  The engine calls launch once per sample between two
 * CUDA events on `stream`, and for the warm-up and an energy window. */
typedef struct {
    kb_launch_fn launch;
    void *arg;                /* every callback's */
    cudaStream_t stream;      /* 0: the legacy stream */
    /* Optional: called before every sample, outside its events and before
     * its L2 flush, and before each warm-up launch; so each sample starts
     * from the state the hook makes.  kbench run will restore a variant's
     * in/out tensors (gradients it accumulates, optimizer state) from
     * their pristine copy here; generate's decode rows refill the KV cache
     * with a prefill.  A batch of back-to-back launches (a row across GPUs,
     * an energy window) gets one call before the batch.  NULL, or what
     * failed. */
    const char *(*before_sample)(void *arg);
    /* Optional: after a one-GPU sample's events are done, the sample's
     * time as the launch measured it, between events of its own on
     * `stream`, in place of the time between the engine's (`kbench model`
     * times its forward without its copies). */
    const char *(*sample_ms)(void *arg, double *ms);
    int units;                /* what one launch holds (decode steps): a sample is its time / units; 0: 1 */
    int ranks;                /* a row across GPUs: its launches, with stream 0, are timed on every GPU's own
                                 stream (kb_ranks_set_direct), in batches; always hot */
    int energy;               /* after the samples, an energy window (--energy): back-to-back launches for 1 s */
} kb_timed;

/* How a command times its rows: the stop rule and the L2 flush. */
typedef struct {
    kb_stop_rule rule;
    int hot;                  /* no flush: L2 stays warm between samples */
    void *flush;              /* the flush buffer (kb_alloc_flush); NULL: none, and the rows run hot */
    size_t flush_bytes;
} kb_time_opts;

/* What kb_time measured. */
typedef struct {
    kb_stats ms;              /* the samples, in ms per unit */
    kb_nvml_window nvml;      /* NVML's readings over them */
    double mj_per_launch;     /* energy per unit: the energy window's, else the samples' when they lasted 1 s; else 0 */
} kb_timing;

/* Warm up (a process's first timed row launches for 0.2 s, to lift the
 * GPU from idle clocks; later rows launch once), idle 1 s when NVML reads
 * a power or thermal limit, then sample until the stop rule is met: before
 * each sample the L2 flush buffer is overwritten by a memset on the
 * stream (unless hot), outside the sample's events.  NULL, or what failed
 * (the launch's message or CUDA's); *out is then incomplete. */
const char *kb_time(const kb_timed *w, const kb_time_opts *o, kb_timing *out);
/* A row's time_ms and NVML columns (clock, power, temperature, throttle,
 * energy) from what kb_time measured. */
void kb_timing_fill(const kb_timing *t, kb_result *r);

/* A variant's row timed by kb_time, its launches with args and ctx; time_ms
 * and the NVML columns into r (run.c). */
const char *kb_time_variant(const kb_variant *v, const void *args, void *ctx, const kb_time_opts *o, int ranks,
                            int energy, kb_result *r);

/* The run's GPUs ran work until a moment ago (other processes' rows), so
 * the first timed row needs no warm-up from idle. */
void kb_run_gpus_busy(void);

/* ---- where a sweep's wall time goes, summed over its rows (kb_run_phases) ---- */
enum {
    PH_ALLOC, PH_HOST_WAIT, PH_RESET, PH_SETUP, PH_FIRST, PH_CHECK, PH_WARMUP, PH_TIMING, PH_FLUSH, PH_NVML,
    PH_ENERGY, PH_SETTLE, PH_COUNT
};
double kb_now_s(void);
/* Add the time since t0 to a phase; returns now, to start the next. */
double kb_phase_end(int ph, double t0);
/* The host's own time on inputs and references, wherever it ran. */
void kb_phase_host(double inputs_s, double reference_s);
/* Where the sweep's total_s went (the CSV rewrites, csv_s, then each phase
 * above, other), and the host's time on inputs and references, mostly
 * overlapped with the GPU. */
void kb_run_phases(FILE *f, double total_s, double csv_s);

#ifdef __cplusplus
}
#endif
#endif
