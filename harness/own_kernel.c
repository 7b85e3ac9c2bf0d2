/* `kbench run --kernel FILE.cu`: a kernel of one's own, compiled by the
 * nvcc that built kbench against kbench's op headers (ops/kbench_own.h),
 * loaded, checked against the contract, and put at the head of its op's
 * table, so that the sweep runs it exactly as an in-tree variant.  Every
 * refusal is one line, before any GPU work (exit 2). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "formats/fileio.h"
#include "harness/harness.h"

#ifndef KB_SOURCE_ROOT
#define KB_SOURCE_ROOT "."
#endif
#ifndef KB_NVCC
#define KB_NVCC "nvcc"
#endif

#define MAX_FILE_BYTES (16u << 20)
#define MAX_TABLE 256

static struct {
    char path[PATH_MAX];
    uint64_t hash;
    kb_op op;                              /* the op, its table headed by the file's variant */
    const kb_variant *table[MAX_TABLE + 2];
    char pattern[512];                     /* the default --variant */
} own;

const char *kb_own_kernel_path(void) { return own.path[0] ? own.path : NULL; }
uint64_t kb_own_kernel_hash(void) { return own.hash; }
const char *kb_own_kernel_name(void) { return own.path[0] ? own.table[0][0].name : NULL; }

/* FNV-1a, 64 bits: the rows name the file's content by it. */
static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static int ident_char(char c)
{
    return c == '_' || (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');
}

/* How many times the file's code (not its comments or strings) invokes
 * KB_OWN_VARIANT. */
static int count_variants(const char *s)
{
    static const char macro[] = "KB_OWN_VARIANT(";
    int n = 0;
    for (const char *p = s; *p;) {
        if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
        } else if (p[0] == '/' && p[1] == '/') {
            p += strcspn(p, "\n");
        } else if (*p == '"' || *p == '\'') {
            const char q = *p++;
            while (*p && *p != q)
                p += p[0] == '\\' && p[1] ? 2 : 1;
            p += *p != 0;
        } else if (!strncmp(p, macro, sizeof macro - 1) && (p == s || !ident_char(p[-1]))) {
            ++n;
            p += sizeof macro - 1;
        } else
            ++p;
    }
    return n;
}

/* The arch to build for: the GPU's (sm_90 as sm_90a, for wgmma), else
 * Hopper's, so that a file can be checked for errors on a machine with
 * none. */
static void arch_flag(char *buf, size_t len)
{
    int n = 0, major = 9, minor = 0;
    if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) {
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    }
    cudaGetLastError();
    const char *a = major == 9 && minor == 0 ? "a" : "";
    snprintf(buf, len, "-gencode=arch=compute_%d%d%s,code=sm_%d%d%s", major, minor, a, major, minor, a);
}

/* nvcc's first error in its log (a line with "error"), or its first line. */
static void first_error(const char *log_path, char *line, size_t len)
{
    size_t n = 0;
    char err[256];
    char *log = kb_input_read(log_path, "nvcc's log", MAX_FILE_BYTES, &n, err, sizeof err);
    snprintf(line, len, "%s", log ? "nvcc failed and printed nothing" : err);
    for (char *l = log, *next; l && *l; l = next) {
        next = l + strcspn(l, "\n");
        const int had_nl = *next == '\n';
        *next = 0;
        if (strstr(l, "error") || (!strcmp(line, "nvcc failed and printed nothing") && *l)) {
            snprintf(line, len, "%s", l);
            if (strstr(l, "error"))
                break;
        }
        next += had_nl;
    }
    free(log);
}

/* nvcc FILE into dir/own.so, its output into dir/nvcc.log.  0, or -1 with
 * one line in err. */
static int compile(const char *file, const char *dir, char *so, size_t solen, char *err, size_t errlen)
{
    char log[PATH_MAX], arch[96], inc[PATH_MAX + 4];
    snprintf(so, solen, "%s/own.so", dir);
    snprintf(log, sizeof log, "%s/nvcc.log", dir);
    snprintf(inc, sizeof inc, "-I%s", KB_SOURCE_ROOT);
    arch_flag(arch, sizeof arch);
    char *const argv[] = {KB_NVCC, "-shared", "-Xcompiler=-fPIC", "-O3", "-std=c++20", "-lineinfo",
                          "--expt-relaxed-constexpr", "-cudart", "shared", arch, inc, "-o", so, (char *)file, NULL};
    const pid_t pid = fork();
    if (pid < 0)
        return kb_fail(err, errlen, "cannot start nvcc: %s", strerror(errno));
    if (pid == 0) {
        const int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "error: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    char line[400], q[KB_QUOTE_LEN];
    first_error(log, line, sizeof line);
    return kb_fail(err, errlen, "%s does not compile: %s", kb_quote(file, q, sizeof q), line);
}

static void remove_build(const char *dir)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/own.so", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/nvcc.log", dir);
    unlink(p);
    rmdir(dir);
}

/* The compiled file loaded (the build removed once it is mapped): its op's
 * name and its forms.  0, or -1 with one line in err. */
static int build_and_load(const char *file, const char **op_name, const kb_variant **forms, char *err, size_t errlen)
{
    char dir[] = "/tmp/kbench-own-XXXXXX", so[PATH_MAX], q[KB_QUOTE_LEN];
    if (!mkdtemp(dir))
        return kb_fail(err, errlen, "cannot make a folder for the build: %s", strerror(errno));
    int rc = compile(file, dir, so, sizeof so, err, errlen);
    void *lib = rc == 0 ? dlopen(so, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (rc == 0 && !lib)
        rc = kb_fail(err, errlen, "%s's build does not load: %s", kb_quote(file, q, sizeof q), dlerror());
    remove_build(dir);
    if (rc != 0)
        return rc;
    *op_name = (const char *)dlsym(lib, "kb_own_op");
    *forms = (const kb_variant *)dlsym(lib, "kb_own_variants");
    if (!*op_name || !*forms)
        return kb_fail(err, errlen, "%s defines no kb_own_op and kb_own_variants (end it with KB_OWN_VARIANT)",
                       kb_quote(file, q, sizeof q));
    return 0;
}

static int has_form(const kb_op *op, kb_dtype t)
{
    KB_FOR_EACH_VARIANT(op, v)
        if (v->dtype == t)
            return 1;
    return 0;
}

/* The forms: one name, a launch each, one per dtype, a dtype the op's
 * contract has (some in-tree form of it), a name no in-tree variant has. */
static int check_forms(const char *file, const kb_op *op, const kb_variant *forms, char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    const char *f = kb_quote(file, q, sizeof q);
    if (!forms[0].name)
        return kb_fail(err, errlen, "%s's KB_OWN_VARIANT lists no forms", f);
    for (const kb_variant *v = forms; v->name; ++v) {
        if (strcmp(v->name, forms[0].name))
            return kb_fail(err, errlen, "%s defines variants '%s' and '%s'; a file holds one (its forms one name, one a dtype)",
                           f, forms[0].name, v->name);
        if (!v->launch)
            return kb_fail(err, errlen, "%s's variant '%s' has no launch", f, v->name);
        if ((unsigned)v->dtype >= KB_DTYPE_COUNT || !kb_dtypes[v->dtype].keys_variants)
            return kb_fail(err, errlen, "%s's variant '%s' has a dtype kbench does not know (%d)", f, v->name,
                           (int)v->dtype);
        if ((unsigned)v->math >= KB_MATH_COUNT)
            return kb_fail(err, errlen, "%s's variant '%s' has a math kbench does not know (%d)", f, v->name,
                           (int)v->math);
        for (const kb_variant *w = forms; w < v; ++w)
            if (w->dtype == v->dtype)
                return kb_fail(err, errlen, "%s's variant '%s' has two %s forms", f, v->name, kb_dtype_name(v->dtype));
        if (!has_form(op, v->dtype))
            return kb_fail(err, errlen, "%s has no %s forms in kbench, so its contract has none to check '%s' against",
                           op->name, kb_dtype_name(v->dtype), v->name);
    }
    if (kb_find_variant_named(op, forms[0].name))
        return kb_fail(err, errlen, "%s's variant is named '%s', as kbench's own %s %s is; rename it", f,
                       forms[0].name, op->name, forms[0].name);
    return 0;
}

/* The variants that run beside the file's unless --variant names others:
 * each of its dtypes' baseline, and the top of the hand-written ladder
 * (the last variant of the table with a form of that dtype that needs no
 * library). */
static void default_pattern(const kb_op *op, const kb_variant *forms)
{
    size_t used = (size_t)snprintf(own.pattern, sizeof own.pattern, "%s", forms[0].name);
    for (const kb_variant *f = forms; f->name; ++f) {
        const char *top = NULL, *base = op->baseline[f->dtype];
        KB_FOR_EACH_VARIANT(op, v)
            if (v->dtype == f->dtype && !v->needs && (!base || strcmp(v->name, base)))
                top = v->name;
        const char *add[2] = {base, top};
        for (int i = 0; i < 2; ++i)
            if (add[i] && used < sizeof own.pattern)
                used += (size_t)snprintf(own.pattern + used, sizeof own.pattern - used, ",%s", add[i]);
    }
}

/* op's table with the file's forms at its head. */
static int make_op(const kb_op *op, const kb_variant *forms, char *err, size_t errlen)
{
    int n = 0;
    own.table[n++] = forms;
    for (const kb_variant *const *t = op->variants; *t; ++t) {
        if (n == MAX_TABLE)
            return kb_fail(err, errlen, "%s has over %d variant files", op->name, MAX_TABLE);
        own.table[n++] = *t;
    }
    own.table[n] = NULL;
    own.op = *op;
    own.op.variants = own.table;
    return 0;
}

int kb_own_kernel_load(kb_options *o, char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    const char *file = o->kernel_path, *f = kb_quote(file, q, sizeof q);
    size_t len = 0;
    char *text = kb_input_read(file, f, MAX_FILE_BYTES, &len, err, errlen);
    if (!text)
        return -1;
    const int n = count_variants(text);
    own.hash = fnv1a(text, len);
    free(text);
    if (n != 1)
        return n == 0 ? kb_fail(err, errlen, "%s defines no variant: end it with KB_OWN_VARIANT(\"op\", {...}) "
                                "(docs/own-kernel.md)", f)
                      : kb_fail(err, errlen, "%s calls KB_OWN_VARIANT %d times; a file holds one variant", f, n);
    const char *op_name;
    const kb_variant *forms;
    if (build_and_load(file, &op_name, &forms, err, errlen) != 0)
        return -1;
    const kb_op *op = kb_find_op(op_name);
    char q2[KB_QUOTE_LEN];
    if (!op)
        return kb_fail(err, errlen, "%s's variant is for op '%s', which kbench does not have (see kbench list)", f,
                       kb_quote(op_name, q2, sizeof q2));
    if (o->nops == 1 && o->ops[0] != op)
        return kb_fail(err, errlen, "%s's variant is for %s, not --op %s", f, op->name, o->ops[0]->name);
    if (check_forms(file, op, forms, err, errlen) != 0 || make_op(op, forms, err, errlen) != 0)
        return -1;
    if (!realpath(file, own.path))
        snprintf(own.path, sizeof own.path, "%s", file);
    o->ops[0] = &own.op;
    o->nops = 1;
    if (!o->variant_pattern) {
        default_pattern(op, forms);
        o->variant_pattern = own.pattern;
    }
    if (!o->dtype_mask)
        for (const kb_variant *v = forms; v->name; ++v)
            o->dtype_mask |= 1 << v->dtype;
    return 0;
}
