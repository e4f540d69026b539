/* A plain C loop of wgpu-native's calls, outside gpuoverhead: the reference that the native
 * layer's `submit` figure is held against (issue 54; from ../shared/repro/plain_loop.c).
 * One burst: n ops, each its own encoder, compute pass and submit, then one wait in
 * wgpuDevicePoll; returns the burst's ns (issue and wait), or its issue ns alone through
 * *issued. Built and driven by benchmarks/investigations/submit_cadence.py. */
#include <stdint.h>
#include <time.h>
#include "webgpu.h"
#include "wgpu.h"

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

uint64_t burst_submit(WGPUDevice dev, WGPUQueue q, WGPUComputePipeline pipe, WGPUBindGroup bg,
                      uint32_t n, uint64_t *issued) {
    uint64_t t0 = now();
    for (uint32_t i = 0; i < n; i++) {
        WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(dev, NULL);
        WGPUComputePassEncoder p = wgpuCommandEncoderBeginComputePass(enc, NULL);
        wgpuComputePassEncoderSetPipeline(p, pipe);
        wgpuComputePassEncoderSetBindGroup(p, 0, bg, 0, NULL);
        wgpuComputePassEncoderDispatchWorkgroups(p, 1, 1, 1);
        wgpuComputePassEncoderEnd(p);
        WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
        wgpuQueueSubmit(q, 1, &cb);
        wgpuCommandBufferRelease(cb);
        wgpuComputePassEncoderRelease(p);
        wgpuCommandEncoderRelease(enc);
    }
    *issued = now() - t0;
    wgpuDevicePoll(dev, 1, NULL);
    return now() - t0;
}
