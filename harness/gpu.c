/* Opening the GPU and reading what the CSV header records about it. */
#include <stdio.h>
#include <string.h>
#include <cublas_v2.h>
#include "harness/harness.h"

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
    return 0;
}
