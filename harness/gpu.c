/* Opening the GPU and reading what the CSV header records about it. */
#include <stdio.h>
#include <string.h>
#include <cublas_v2.h>
#include "harness/harness.h"

#ifndef KB_ARCH_FLAGS
#define KB_ARCH_FLAGS ""
#endif

cudaError_t kb_device_code_loads(void); /* device_scan.cu; only this file needs it */

static int attr(enum cudaDeviceAttr a, int dev)
{
    int v = 0;
    return cudaDeviceGetAttribute(&v, a, dev) == cudaSuccess ? v : 0;
}

/* The kernel driver's version ("580.159.04"), or the CUDA version it supports. */
static void driver_version(char *buf, size_t len)
{
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    char line[512];
    int v = 0;
    if (f && fgets(line, sizeof line, f)) {
        /* "... Kernel Module  580.95.05 ..." or, for the open modules,
         * "... Open Kernel Module for x86_64  580.159.04 ...": the version
         * is the first word after "Kernel Module" that starts with a digit. */
        const char *p = strstr(line, "Kernel Module");
        char word[64];
        int used = 0;
        while (p && len > 64 && sscanf(p += used, " %63s%n", word, &used) == 1)
            if (word[0] >= '0' && word[0] <= '9' && strchr(word, '.')) {
                snprintf(buf, len, "%s", word);
                fclose(f);
                return;
            }
    }
    if (f)
        fclose(f);
    cudaDriverGetVersion(&v);
    snprintf(buf, len, "CUDA %d.%d", v / 1000, (v % 1000) / 10);
}

/* "sm_80 sm_90 compute_90": the code=... targets of the -gencode flags
 * this binary was built with (meson.build's gpu_arch). */
static void built_archs(char *buf, size_t len)
{
    const char *p = KB_ARCH_FLAGS;
    size_t used = 0;
    buf[0] = '\0';
    while ((p = strstr(p, "code=")) && used < len) {
        int n = (int)strcspn(p += 5, " ");
        used += (size_t)snprintf(buf + used, len - used, "%s%.*s", used ? " " : "", n, p);
    }
}

int kb_gpu_open(int device, kb_device_info *info, char *err, size_t errlen)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        /* Without an NVIDIA driver the runtime says the driver is too old. */
        snprintf(err, errlen, "no CUDA device found: %s%s",
                 e == cudaErrorInsufficientDriver ? "no usable NVIDIA driver; the runtime says: " : "",
                 e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports zero devices");
        return -1;
    }
    if (device >= count) {
        snprintf(err, errlen, "no CUDA device %d: this machine has %d", device, count);
        return -1;
    }
    struct cudaDeviceProp p;
    if ((e = cudaSetDevice(device)) != cudaSuccess ||
        (e = cudaGetDeviceProperties(&p, device)) != cudaSuccess ||
        (e = cudaFree(NULL)) != cudaSuccess) {
        snprintf(err, errlen, "cannot open CUDA device %d: %s", device, cudaGetErrorString(e));
        return -1;
    }
    /* A binary without code for this GPU would fail every row; say once
     * what to build instead. */
    e = kb_device_code_loads();
    if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorUnsupportedPtxVersion) {
        char built[256];
        built_archs(built, sizeof built);
        snprintf(err, errlen, "this binary has no code for sm_%d%d (built for %s); rebuild with -Dgpu_arch=%d%d",
                 p.major, p.minor, built[0] ? built : "unknown archs", p.major, p.minor);
        return -1;
    }
    if (e != cudaSuccess) {
        snprintf(err, errlen, "cannot load kernels on CUDA device %d: %s", device, cudaGetErrorString(e));
        return -1;
    }
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->sm_count = p.multiProcessorCount;
    info->l2_bytes = p.l2CacheSize;
    info->global_mem_bytes = (int64_t)p.totalGlobalMem;
    info->sm_clock_khz = attr(cudaDevAttrClockRate, device);
    info->mem_clock_khz = attr(cudaDevAttrMemoryClockRate, device);
    info->bus_width_bits = attr(cudaDevAttrGlobalMemoryBusWidth, device);
    driver_version(info->driver, sizeof info->driver);
    cudaRuntimeGetVersion(&info->runtime_version);
    int major = 0, minor = 0, patch = 0;
    cublasGetProperty(MAJOR_VERSION, &major);
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    info->cublas_version = major * 10000 + minor * 100 + patch;
    /* NVML is optional: without it the CSV says why and leaves its columns empty. */
    if (cudaDeviceGetPCIBusId(info->pci_bus_id, sizeof info->pci_bus_id, device) != cudaSuccess)
        info->pci_bus_id[0] = '\0';
    kb_nvml_open(info->pci_bus_id, info->sm_clock_khz / 1000);
    return 0;
}
