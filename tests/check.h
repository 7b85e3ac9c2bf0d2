/* A minimal assertion helper for kbench's C tests: count failures, report
 * each with its line, exit non-zero if any failed. */
#ifndef KBENCH_TEST_CHECK_H
#define KBENCH_TEST_CHECK_H
#include <stdio.h>

static int check_failures;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            check_failures++;                                                    \
        }                                                                        \
    } while (0)

#define CHECK_NEAR(a, b, tol) CHECK(fabs((double)(a) - (double)(b)) <= (tol))

#define CHECK_DONE() (check_failures ? (fprintf(stderr, "%d checks failed\n", check_failures), 1) : 0)

/* A GPU test's first step (needs harness/harness.h): open device 0 into
 * *dev, or print one line and exit 77, meson's skip. */
#define SKIP_WITHOUT_GPU(what, dev)                                              \
    do {                                                                         \
        char skip_err_[512];                                                     \
        if (kb_gpu_open(0, (dev), skip_err_, sizeof skip_err_) != 0) {           \
            printf("skipping %s: %s\n", what, skip_err_);                        \
            return 77;                                                           \
        }                                                                        \
    } while (0)

#endif
