/* The harness's internal interfaces.  Measurement (run.c, gpu.c, and the
 * timing engine of timing.h) fills kb_result records; printers (table.c,
 * csv.c) only render them, so every output format shows the same summary. */
#ifndef KBENCH_HARNESS_H
#define KBENCH_HARNESS_H

#include <stdio.h>
#include "ops/kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KB_EXIT_FAIL 1   /* a check failed, or no GPU */
#define KB_EXIT_USAGE 2  /* bad input: nothing was run or written */

/* ---- registry.c ---- */
typedef struct {
    const char *name;   /* "op variant" */
    const char *why;
} kb_unbuilt_variant;
extern const kb_unbuilt_variant kb_unbuilt_variants[]; /* generated; NULL-terminated */

const kb_op *kb_find_op(const char *name);
/* The form of variant `name` filed under dtype t, or NULL. */
const kb_variant *kb_find_variant(const kb_op *op, const char *name, kb_dtype t);
/* Its first form in any dtype, or NULL: whether the op has such a variant. */
const kb_variant *kb_find_variant_named(const kb_op *op, const char *name);
/* The variant a row of dtype t is compared with; NULL when none. */
const char *kb_baseline_for(const kb_op *op, kb_dtype t);
const char *kb_math_name(kb_math m);
int kb_parse_math(const char *s, kb_math *out);  /* 0, or -1 for an unknown name */

/* ---- dtype.c: the element types ---- */
const char *kb_dtype_name(kb_dtype t);
/* A dtype variants may be filed under, by name; 0, or -1 for an unknown name. */
int kb_parse_dtype(const char *s, kb_dtype *out);
size_t kb_dtype_size(kb_dtype t);
/* The relative error of one rounding to t (2^-8 for bf16); 0 for i32. */
double kb_dtype_unit_roundoff(kb_dtype t);
float kb_bf16_to_float(uint16_t h);
uint16_t kb_float_to_bf16(float f);

/* ---- quote.c ---- */
/* The UTF-8 character at s (n > 0 bytes left): its byte count, with its
 * code point in *cp; 0 when the bytes start none (a stray or truncated
 * sequence, an overlong form, a surrogate or past U+10FFFF). */
size_t kb_utf8_next(const unsigned char *s, size_t n, uint32_t *cp);
/* s with every byte that is no printable UTF-8 (control characters, C1,
 * invalid sequences) and backslashes written as \xNN, cut with "..." to fit
 * len: for echoing untrusted input in a one-line message. */
const char *kb_quote(const char *s, char *buf, size_t len);
#define KB_QUOTE_LEN 160
/* s[0..n) to f, uncut and escaped as kb_quote does: one line of valid
 * UTF-8 from which the bytes can be read back. */
void kb_put_escaped(FILE *f, const char *s, size_t n);
/* A refusal: the formatted line into err; returns -1, for `return kb_fail(...)`. */
int kb_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- number.c: the one grammar of numbers in flags and CSV cells ---- */
/* A real: an optional '-', digits, optionally '.' and digits, optionally
 * 'e' or 'E', a sign and digits; nothing else (no '+', space, hex, inf,
 * nan, ".5" or "5."), and neither overflow nor underflow.  0 on success. */
int kb_parse_decimal(const char *s, double *out);
/* An integer: decimal digits only (no sign, space or exponent), at most
 * max.  0 on success. */
int kb_parse_count(const char *s, uint64_t max, uint64_t *out);
/* A flag's integer from lo to hi; else -1 with one line in err that quotes
 * val and states the range. */
int kb_int_flag(const char *flag, const char *val, uint64_t lo, uint64_t hi, uint64_t *out, char *err,
                size_t errlen);
/* A flag's real from lo to hi (above lo when lo_open), noun saying what it
 * counts ("seconds"); else -1 with one line in err that quotes val and
 * states the range. */
int kb_real_flag(const char *flag, const char *val, double lo, int lo_open, double hi, const char *noun, double *out,
                 char *err, size_t errlen);

/* Comma-separated token ids, each an integer from 0 to max (at most
 * INT_MAX), at most `most` of them, into *ids (malloc'd) and *n; an empty
 * list or item is refused.  0, or -1 with one line in err. */
int kb_id_list(const char *flag, const char *list, uint64_t max, size_t most, int **ids, size_t *n, char *err,
               size_t errlen);

/* ---- shape.c ---- */
/* Parse one shape; 0 on success, else -1 with a message in err. */
int kb_parse_shape(const kb_op *op, const char *text, kb_shape *out, char *err, size_t errlen);
/* Parse a comma-separated list; returns the count or -1 with err set.
 * *out is malloc'd. */
int kb_parse_shape_list(const kb_op *op, const char *text, kb_shape **out, char *err, size_t errlen);
void kb_format_shape(const kb_op *op, const kb_shape *s, char *buf, size_t len);
/* Total bytes of every tensor of the shape; -1 with err set on overflow. */
int kb_shape_bytes(const kb_op *op, const kb_shape *s, kb_dtype t, int64_t *bytes, char *err, size_t errlen);

/* ---- tolerance.c: the one place where tolerances are set ---- */
/* Largest |out - ref| accepted for one element. */
double kb_tolerance(kb_math m, int64_t reduction_len, double ref);
/* The same bound as abs + rel * |ref|. */
void kb_tolerance_terms(kb_math m, int64_t reduction_len, double *abs, double *rel);
/* The terms for an output of dtype t: 0 for integers, which compare exactly. */
void kb_tolerance_terms_for(kb_math m, kb_dtype t, int64_t reduction_len, double *abs, double *rel);
/* Largest relative L2 error accepted over the checked rows. */
double kb_rel_l2_tolerance(kb_math m, int64_t reduction_len);
/* The same for an output of dtype t (at its type's rounding at the least). */
double kb_rel_l2_tolerance_for(kb_math m, kb_dtype t, int64_t reduction_len);
/* Largest relative L2 error of a whole fp32 transformer forward. */
double kb_model_rel_l2_tolerance(void);
/* The same for a bf16 model's logits against the double reference. */
double kb_model_bf16_rel_l2_tolerance(void);

/* ---- check.c ---- */
typedef struct {
    double max_abs_err;
    double rel_l2_err;
    double worst_tol;        /* the tolerance at the worst element */
    int64_t bad_elems;       /* over tolerance, NaN or Inf */
    int64_t nonfinite;       /* NaN or Inf anywhere in the output */
    int pass;
    const char *tensor;      /* the output these figures are of (the worst, in a row's check) */
} kb_check;

/* The comparison of one chunk of elements, merged in chunk order by
 * kb_check_merge whether the chunks ran on host threads or device blocks. */
typedef struct {
    int64_t bad_elems;
    double max_abs_err, worst_tol; /* max_abs_err is Inf for a NaN or Inf output */
    double err2, ref2;             /* the L2 sums of error and reference */
} kb_check_part;
void kb_check_merge(const kb_check_part *parts, int64_t nparts, kb_math m, kb_dtype t, int64_t reduction_len,
                    kb_check *c);

/* Compare n output elements (as stored by the variant, dtype t) with the
 * reference.  The caller scans the whole output for NaN/Inf separately with
 * kb_device_count_nonfinite, since only sampled rows are compared. */
void kb_compare_rows(const void *out, kb_dtype t, const double *ref, int64_t n, kb_math m,
                     int64_t reduction_len, kb_check *c);
/* NaN and Inf in a device buffer, counted on the device (device_scan.cu). */
cudaError_t kb_device_count_nonfinite(const void *x, int64_t n, kb_dtype t, int64_t *count);
/* How many of the `bytes` bytes at device pointers a and b differ. */
cudaError_t kb_device_count_differing(const void *a, const void *b, int64_t bytes, int64_t *count);
/* kb_compare_rows on the device: rows[nrows] (a device array) of the device
 * output `out`, of row_len elements each, against the device reference
 * `ref` (nrows * row_len doubles).  Only the verdict comes back. */
cudaError_t kb_device_compare_rows(const void *out, kb_dtype t, int64_t row_len, const int64_t *rows, int nrows,
                                   const double *ref, kb_math m, int64_t reduction_len, kb_check *c);
/* Pick rows to check: all when cheap, else first, last and a seeded sample
 * within a CPU budget.  Returns the count; *rows is malloc'd and sorted. */
int kb_pick_rows(int64_t total_rows, double row_cost, double budget, uint64_t seed, int64_t **rows);

/* ---- inputs.c ---- */
uint64_t kb_seed_for(const char *op, const kb_shape *s, int tensor);
/* Element i of the uniform stream `seed`: splitmix64 of (seed, i + 1), its
 * top 24 bits k as k / 2^23 - 1 in [-1, 1) (exact in float).  One
 * definition for the host's kb_fill_uniform and the GPU's
 * kb_device_fill_uniform, so both make the same inputs bit for bit. */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline float kb_uniform_at(uint64_t seed, int64_t i)
{
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((int32_t)(z >> 40) - (1 << 23)) * 0x1p-23f;
}
/* kb_fill_uniform's elements first .. first + n - 1 of `seed`, in dtype t
 * (any floating type, rounded as kb_store_floats rounds), made on the
 * current GPU into device memory x (inputs_device.cu); complete on return. */
cudaError_t kb_device_fill_uniform(void *x, kb_dtype t, int64_t n, int64_t first, uint64_t seed);
/* kb_store_floats on the GPU, with the hardware's conversions (device
 * pointers); complete on return.  The GPU suite checks the two agree. */
cudaError_t kb_device_store_floats(kb_dtype t, const float *src, void *dst, int64_t n);

/* ---- stats.c ---- */
typedef struct {
    double median, min, max, mean, rel_stdev;
    double mad; /* median absolute deviation from the median */
    int n;
} kb_stats;
void kb_stats_compute(double *samples, int n, kb_stats *st);  /* sorts samples */
/* Relative standard error of the median (normal approx., sigma from the
 * MAD, so outliers do not inflate it), for the stop rule. */
double kb_median_noise(const kb_stats *st);

/* ---- result.h content: one row of output ---- */
typedef enum { KB_PASS = 0, KB_FAIL, KB_SKIP } kb_status;

typedef struct {
    const kb_op *op;
    const kb_variant *variant;
    kb_shape shape;
    double flops, bytes;
    kb_stats time_ms;         /* valid when timed */
    int timed;
    double speedup;           /* over the op's baseline; 0 when unknown */
    double pct_of_ceiling;    /* GB/s over the run's copy ceiling, in %; 0 when unknown */
    double pct_of_peak;       /* over the roofline ceiling that bounds it, in % */
    int memory_bound;         /* arithmetic intensity under the ridge point */
    kb_check check;
    int64_t rows_checked, rows_total;
    int hot;                  /* L2 left warm between samples */
    /* NVML over the timed samples (nvml.c); 0 where not read */
    double clock_mhz, power_w; /* means over the readings */
    double temp_c;            /* the highest reading */
    unsigned long long throttle; /* the reasons seen, KB_THR_* bits */
    double mj_per_launch;     /* energy counter over the timed phase / timed launches */
    int throttled;            /* kb_clock_throttled */
    kb_status status;
    char reason[200];
    char devices[32];         /* the GPU the row ran on ("1"), or those it spanned ("0+1") */
    const char *family, *axis; /* as the job's (kb_job); axis NULL when none */
    /* Device memory the variant took for itself, over its setup and first
     * launch (handles, workspaces, a library's pools), in MiB, when gauged. */
    double workspace_mib;
    int workspace_gauged;
} kb_result;

const char *kb_status_name(kb_status s);

/* ---- options (cli.c) ---- */
/* How a run's results are written (csv.c): CSV, markdown or JSON lines. */
typedef enum { KB_FORMAT_CSV, KB_FORMAT_MD, KB_FORMAT_JSONL } kb_format;

typedef enum { KB_CMD_NONE, KB_CMD_LIST, KB_CMD_RUN, KB_CMD_CEILINGS, KB_CMD_PE, KB_CMD_HELP, KB_CMD_VERSION } kb_command;

typedef struct {
    kb_command cmd;
    const kb_op *ops[64];
    int nops;
    const char *variant_pattern;   /* comma-separated names or globs; NULL = all */
    const char *sizes;             /* NULL = op default */
    const char *families;          /* --family: comma-separated family names; NULL = all */
    int dtype_mask;                /* bit per kb_dtype; 0 = all */
    int quick, check_only, hot, device;
    /* --devices: the GPUs rows are dealt to (one worker each) and that
     * distributed ops and tensor-parallel variants span; ndevices 0 means
     * --device alone, -1 means all.  --replicate runs every row on each. */
    int devices[KB_MAX_RANKS];
    int ndevices, replicate;
    int device_given;              /* --device was named (it excludes --devices) */
    int ceilings;                  /* measure this GPU's ceilings before the sweep */
    int energy;                    /* an energy window after the samples (kb_wants_energy) */
    int test_sizes;                /* each op's small regular and tile-hostile shapes */
    int seq_len, d_model, paper;   /* kbench pe */
    const char *csv_path;          /* NULL = <out_dir>/<timestamp>.csv */
    const char *out_dir;           /* NULL = results */
    const char *kernel_path;       /* --kernel: a .cu file of one's own (own_kernel.c) */
    double row_cap_s;              /* time cap per row */
    double max_noise;              /* a row stops once its median's relative noise is under this; 0: 1% */
    int min_samples;               /* ... but not before this many samples; 0: 20 */
    kb_format format;              /* of the output file; CSV by default */
} kb_options;

/* ---- own_kernel.c: `kbench run --kernel FILE.cu` ---- */
/* Compile o->kernel_path with the nvcc that built kbench, load it, check
 * its KB_OWN_VARIANT against the contract, and make its op (that op's
 * table headed by the file's variant) o's only op; unless given, --variant
 * becomes the file's, its dtypes' baselines and the top of the ladder, and
 * --dtype its dtypes.  0, or -1 with one line in err. */
int kb_own_kernel_load(kb_options *o, char *err, size_t errlen);
const char *kb_own_kernel_path(void); /* the loaded file's real path, or NULL */
uint64_t kb_own_kernel_hash(void);    /* FNV-1a 64 of its bytes */
const char *kb_own_kernel_name(void); /* its variant's name */
/* verdict.c: what a sweep's rows say of variant `own` (file `path`). */
void kb_own_verdict(FILE *f, const kb_result *rows, int n, const char *own, const char *path);

/* Parse argv; 0 on success, else -1 with a one-line message in err. */
int kb_parse_args(int argc, char **argv, kb_options *o, char *err, size_t errlen);
/* Whether argv[1..argc) holds --help or -h. */
int kb_asks_help(int argc, char **argv);
int kb_variant_selected(const kb_options *o, const kb_variant *v);
void kb_print_usage(FILE *f);

/* ---- sweep.c: expand options into rows (no GPU needed) ---- */
typedef struct {
    const kb_op *op;
    const kb_variant *variant;
    kb_shape shape;
    /* The shape's family (kb_family): its name and axis, "custom" for a
     * --sizes shape in no family, "test" for --test-sizes; axis NULL when none. */
    const char *family, *axis;
} kb_job;
/* Whether the job spans several GPUs (a distributed op or a variant with
 * min_devices > 1): it runs where all of the run's GPUs are open. */
int kb_job_multi_device(const kb_job *job);
/* Why a run of ngpus GPUs cannot hold the job (into why), or NULL. */
const char *kb_job_too_few_gpus(const kb_job *job, int ngpus, char *why, size_t len);
/* Whether comma-separated `list` holds `item` exactly (registry.c). */
int kb_in_list(const char *list, const char *item);
/* The family of `op` whose list holds shape s, or NULL. */
const kb_family *kb_family_of(const kb_op *op, const kb_shape *s);
/* All of an op's family shapes, in order, into *shapes (freed by the
 * caller); the count, or -1 with err set. */
int kb_default_shapes(const kb_op *op, kb_shape **shapes, char *err, size_t errlen);
/* Expand and validate; returns count or -1 with err set.  Per shape, the
 * baseline variant comes first so every later row can show its speedup.
 * A distributed op's shapes get ranks = ndevices (at least 1), so `all`
 * must be resolved first. */
int kb_expand_sweep(const kb_options *o, kb_job **jobs, char *err, size_t errlen);

/* ---- gpu.c ---- */
typedef struct {
    char name[256];
    int cc_major, cc_minor, sm_count;
    int sm_clock_khz, mem_clock_khz, bus_width_bits;
    int64_t l2_bytes, global_mem_bytes;
    char driver[96];
    int runtime_version, cublas_version;
    char pci_bus_id[32];      /* NVML finds the same device by it */
} kb_device_info;
/* 0 when a device is usable, else -1 with a one-line reason. */
int kb_gpu_open(int device, kb_device_info *info, char *err, size_t errlen);

/* ---- csv.c ---- */
typedef struct {
    const char *key, *value;
} kb_meta;
/* The CSV header's metadata, owned for a run's lifetime: room for a run
 * of every op, a baseline line for each of its dtypes, the ceilings, and
 * KB_MAX_RANKS GPUs (a device_<k> line each, name and ceilings).
 * test_ceilings checks that such a run fits. */
#define KB_META_MAX 256
typedef struct {
    char keys[KB_META_MAX][64], text[KB_META_MAX][320];
    kb_meta meta[KB_META_MAX];
    int n;
} kb_meta_set;
/* Set key to the formatted value, replacing an earlier value of that key. */
void kb_meta_set_value(kb_meta_set *m, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Write all rows to path atomically (temp file + rename).  0 on success. */
/* The same records as markdown (metadata as a list, then one table) or as
 * JSON lines (a {"meta": {...}} line, then an object a row, keyed by the CSV's
 * columns, null where nothing was measured); written like kb_csv_write. */
int kb_parse_format(const char *s, kb_format *out);
int kb_results_write(const char *path, kb_format format, const kb_meta *meta, int nmeta, const kb_result *rows,
                     int nrows, char *err, size_t errlen);
int kb_csv_write(const char *path, const kb_meta *meta, int nmeta,
                 const kb_result *rows, int nrows, char *err, size_t errlen);
/* Appending to a CSV: read an existing kbench CSV whole (NULL with err set
 * when it is missing or its columns are not this version's), then rewrite
 * it as that text followed by rows, atomically. */
char *kb_csv_read_for_append(const char *path, char *err, size_t errlen);
int kb_csv_write_after(const char *path, const char *prefix, const kb_result *rows, int nrows, char *err,
                       size_t errlen);
void kb_csv_header(FILE *f);
/* One CSV cell, quoted when it holds a comma, quote or newline. */
void kb_csv_put_text(FILE *f, const char *s);
/* The largest CSV kbench reads (compare, --append). */
#define KB_CSV_MAX_BYTES ((size_t)256 << 20)
/* A regular file of at most max bytes and no NUL byte, read whole and
 * NUL-terminated; NULL with a one-line message in err otherwise. */
char *kb_read_text(const char *path, size_t max, char *err, size_t errlen);
/* Before any work: 0 when kb_csv_write can replace path (its temporary twin
 * is created and removed; path is absent or a regular file), else -1 with a
 * one-line message in err. */
int kb_csv_check_output(const char *path, char *err, size_t errlen);
void kb_csv_row(FILE *f, const kb_result *r);
/* A sweep rewrites its CSV this often, and once at its end: rewriting it
 * after every row cost a 691-row --quick sweep 2.6-2.8 s.  An interrupted
 * sweep leaves a complete file of the rows done by the last rewrite. */
#define KB_CSV_EVERY_S 1.0

/* ---- nvml.c: clocks, power, temperature and energy through a dlopen'ed NVML ---- */
/* NVML's clock event ("throttle") reason bits. */
#define KB_THR_IDLE 0x1ull
#define KB_THR_APP_CLOCKS 0x2ull
#define KB_THR_SW_POWER_CAP 0x4ull
#define KB_THR_HW_SLOWDOWN 0x8ull
#define KB_THR_SYNC_BOOST 0x10ull
#define KB_THR_SW_THERMAL 0x20ull
#define KB_THR_HW_THERMAL 0x40ull
#define KB_THR_HW_POWER_BRAKE 0x80ull
#define KB_THR_DISPLAY_CLOCKS 0x100ull
/* The reasons that mean power or heat held the clock down. */
#define KB_THR_POWER_THERMAL (KB_THR_SW_POWER_CAP | KB_THR_HW_SLOWDOWN | KB_THR_SW_THERMAL | \
                              KB_THR_HW_THERMAL | KB_THR_HW_POWER_BRAKE)
typedef struct {
    double clock_mhz, power_w, temp_c;  /* 0: not read */
    unsigned long long reasons;
} kb_nvml_reading;
/* The readings of one row's timed phase; start it zeroed. */
typedef struct {
    double clock_sum, power_sum, temp_max;
    int clock_n, power_n;
    unsigned long long reasons;  /* their union, idle left out */
    unsigned long long held;     /* power and thermal reasons seen with the clock under the maximum */
} kb_nvml_window;

/* Pure: "sw_power_cap|hw_thermal", empty for none (idle is never named). */
const char *kb_throttle_names(unsigned long long reasons, char *buf, size_t len);
/* Pure: a mean clock over 5% under the maximum, or a power or thermal reason
 * among `held`. */
int kb_clock_throttled(double clock_mhz, double max_clock_mhz, unsigned long long reasons);
/* Pure: the energy counter's delta (mJ) per launch; 0 when unknown, or when
 * the window was too short for the counter's 100 ms steps (under 1 s). */
#define KB_ENERGY_MIN_S 1.0
double kb_mj_per_launch(unsigned long long mj0, unsigned long long mj1, double window_s, int launches);
/* Pure: GFLOP/J or GB/J from flops or bytes per launch; 0 when unknown. */
double kb_per_joule(double per_launch, double mj_per_launch);
void kb_nvml_add(kb_nvml_window *w, const kb_nvml_reading *r, double max_clock_mhz);
void kb_nvml_summarize(const kb_nvml_window *w, double mj_per_launch, double max_clock_mhz, kb_result *r);

/* Load NVML and find the CUDA device by its PCI bus id; 0, or -1 with the
 * reason in kb_nvml_status().  fallback_max_clock_mhz stands for NVML's
 * maximum SM clock when it has none. */
int kb_nvml_open(const char *pci_bus_id, int fallback_max_clock_mhz);
int kb_nvml_gpu_count(void);    /* the GPUs as CUDA will count them, or -1: ask CUDA */
const char *kb_nvml_status(void);    /* "available" or "unavailable: why" */
double kb_nvml_max_clock_mhz(void);  /* what kb_clock_throttled compares with */
/* Read clock, power, temperature and reasons into w (nothing without NVML). */
void kb_nvml_sample(kb_nvml_window *w);
int kb_nvml_limited(void); /* a power or thermal limit holds the clock down now */
/* The total-energy counter in mJ; -1 when unavailable. */
int kb_nvml_energy(unsigned long long *mj);
/* The counter read on another thread: begin asks for a reading (0, or -1
 * without NVML) and returns at once; begun waits for it (0 with mj, or -1). */
int kb_nvml_energy_begin(void);
int kb_nvml_energy_begun(unsigned long long *mj);

/* ---- ceilings.c ---- */
typedef struct {
    double mem_gb_s, l2_gb_s, fp32_gflop_s, tc_gflop_s;  /* measured; 0 = not measured */
    double ds_mem_gb_s, ds_fp32_gflop_s, ds_tc_gflop_s;  /* datasheet, from device attributes */
    double fp32_clock_mhz, tc_clock_mhz;                 /* the SM clock their runs held (NVML); 0 = not read */
    double fp32_inside_mhz, tc_inside_mhz;               /* the SM clock inside their launches; 0 = not ours */
    char tc_kernel[24];                                  /* what measured tc_gflop_s ("" = none) */
    double fp8_gflop_s;                                  /* measured e4m3 tensor rate; 0 = not measured */
    double read_gb_s, write_gb_s;                        /* memory read alone, written alone; 0 = not measured */
} kb_ceilings;
void kb_datasheet_ceilings(const kb_device_info *d, kb_ceilings *c);
void kb_measure_ceilings(const kb_device_info *d, void *flush, size_t flush_bytes, kb_ceilings *c);
/* The memory ceiling of a row whose bytes are write_share written and the
 * rest read: the read ceiling at 0, the copy's at 1/2, the write ceiling at
 * 1, linear between; the copy's wherever one is not measured or the share
 * is unknown (< 0). */
double kb_memory_ceiling_for(const kb_ceilings *c, double write_share);
/* A timed row's place under the ceilings: its GB/s as % of the copy
 * ceiling, whether it is memory-bound (intensity under the ridge point of
 * its math, against its access mix's memory ceiling), and % of the ceiling
 * that bounds it.  The one place these are computed, for the sweep and for
 * `kbench derive`. */
void kb_place_on_roofline(const kb_ceilings *c, kb_math math, double flops, double bytes, double write_share,
                          double median_ms,
                          double *pct_of_ceiling, double *pct_of_peak, int *memory_bound);
/* Raise the memory ceiling to the best cold copy row, fill every timed row's
 * pct_of_ceiling and pct_of_peak, and record the ceilings in the metadata. */
void kb_apply_ceilings(kb_result *rows, int n, kb_ceilings *c, kb_meta_set *meta);
int kb_cmd_ceilings(const kb_options *o);

/* ---- table.c ---- */
void kb_table_header(FILE *f);
void kb_table_row(FILE *f, const kb_result *r, int index, int total);

/* ---- run.c ---- */
/* Whether --energy measures this row: every row when --sizes names the
 * shapes, else the rows at their op's representative shape (the largest
 * default shape, by FLOP then bytes: the one the README's table shows). */
int kb_wants_energy(const kb_options *o, const kb_op *op, const kb_shape *s, kb_dtype t);
/* Run one job: check (and time unless check_only).  Needs an open GPU. */
void kb_run_job(const kb_job *job, const kb_options *o, void *flush_buf,
                size_t flush_bytes, kb_result *r);
void kb_run_release(void);
/* Free the case in use but keep kb_run_plan's next cases in the making:
 * the ceilings' copy case, gigabytes, before the sweep's first row. */
void kb_run_drop_case(void);
/* How many GPUs a row's devices cell names: "1" one, "0+1" two (ranks.c). */
int kb_devices_spanned(const char *devices);
/* The GPUs kb_run_devices reports (ranks.c); the first is opened and current. */
void kb_set_run_devices(const int *ids, int n);
/* While on, kb_ranks_fork and kb_ranks_join do nothing: a variant's launch
 * only enqueues each GPU's part on that GPU's stream, which the harness
 * then times itself (timing.c, rows across GPUs). */
void kb_ranks_set_direct(int on);

/* A start gate on several GPUs' streams (gate.cu): each stream holds at
 * its gate until kb_gate_open, so the work queued behind it starts on
 * every GPU at once and runs back to back, whatever the host's launch
 * costs.  A gate left closed for 2 s opens by itself and counts as timed
 * out, so a launch that blocks the host can never hang the run. */
typedef struct kb_gate kb_gate;
const char *kb_gate_create(kb_gate **g);
void kb_gate_destroy(kb_gate *g);
/* Enqueue a closed gate on `stream`, which must be on the current GPU. */
const char *kb_gate_close(kb_gate *g, cudaStream_t stream);
/* Open every gate closed since the last opening. */
void kb_gate_open(kb_gate *g);
/* Whether a gate opened by itself since kb_gate_create. */
int kb_gate_timed_out(const kb_gate *g);
/* Announce a sweep's rows (until kb_run_release): while the GPU runs one
 * case's rows, the host makes the next case's inputs and reference. */
void kb_run_plan(const kb_job *jobs, int n);

/* ---- commands.c ---- */
/* The CSV metadata of a run on this device: GPU, versions, commit, date. */
void kb_collect_meta(const kb_device_info *d, const kb_options *o, kb_meta_set *m);
/* <out_dir or results>/kbench-<timestamp>.csv, creating the folder. */
int kb_default_csv_path(const char *out_dir, char *path, size_t len, char *err, size_t errlen);
/* The L2 flush buffer: twice the L2, allocated once. NULL when out of memory. */
void *kb_alloc_flush(const kb_device_info *d, size_t *bytes);
/* Whether a baseline that ran on `base` (a devices text) is the one for a
 * row on `row`: the same GPU, or for a row across GPUs ("0+1") its first ("0"). */
int kb_baseline_gpus(const char *base, const char *row);
/* The speedup of rows[n - 1] over the baseline row before it at the same
 * op and shape (kb_baseline_gpus). */
void kb_fill_speedup(kb_result *rows, int n);
int kb_cmd_run(const kb_options *o);
/* workers_plan.c, for --devices.  Resolve `all` to the machine's GPUs (at most
 * KB_MAX_RANKS) and check every index exists, asking CUDA in a child
 * process so that this one stays fork-safe; 0, or -1 with err set. */
int kb_resolve_devices(kb_options *o, char *err, size_t errlen);
/* workers.c.  Run the sweep with one worker process per GPU and the rows
 * that span GPUs in this process afterwards; writes csv as it goes.  Exit
 * code. */
int kb_run_on_devices(const kb_options *o, const kb_job *jobs, int n, const char *csv);
int kb_cmd_list(FILE *f);
int kb_cmd_pe(const kb_options *o);

/* ---- compare.c: kbench compare BASE.csv NEW.csv [--threshold PCT] ---- */
int kb_cmd_compare(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
