/* Layer `native`: the same operations as the wrapper and raw layers, issued by a C loop.
 *
 * Python passes the native handles and the wgpu-native functions (as pointers taken from
 * the very library the binding loaded), so the calls, their order and their releases are
 * those of layers/raw.py with no Python in between. Compiled at run time against the
 * webgpu.h that ships in the wgpu wheel. */
#include <stddef.h>
#include <stdint.h>
#include "webgpu.h"

typedef struct {
    WGPUProcDeviceCreateCommandEncoder create_encoder;
    WGPUProcCommandEncoderBeginComputePass begin_pass;
    WGPUProcComputePassEncoderSetPipeline set_pipeline;
    WGPUProcComputePassEncoderSetBindGroup set_bind_group;
    WGPUProcComputePassEncoderDispatchWorkgroups dispatch;
    WGPUProcComputePassEncoderEnd end_pass;
    WGPUProcComputePassEncoderRelease release_pass;
    WGPUProcCommandEncoderFinish finish;
    WGPUProcCommandEncoderRelease release_encoder;
    WGPUProcQueueSubmit submit;
    WGPUProcCommandBufferRelease release_buffer;
} Procs;

enum { ENC_SUBMIT = 0, ENC_PASS = 1, ENC_DISPATCH = 2 };

static void op(const Procs *p, WGPUComputePassEncoder pass, WGPUComputePipeline pipeline,
               WGPUBindGroup group, uint32_t x, uint32_t y) {
    p->set_pipeline(pass, pipeline);
    p->set_bind_group(pass, 0, group, 0, NULL);
    p->dispatch(pass, x, y, 1);
}

/* One compute pass holding one operation, ended and released. */
static void op_in_own_pass(const Procs *p, WGPUCommandEncoder encoder,
                           const WGPUComputePassDescriptor *pass_desc,
                           WGPUComputePipeline pipeline, WGPUBindGroup group,
                           uint32_t x, uint32_t y) {
    WGPUComputePassEncoder pass = p->begin_pass(encoder, pass_desc);
    op(p, pass, pipeline, group, x, y);
    p->end_pass(pass);
    p->release_pass(pass);
}

static void submit_and_release(const Procs *p, WGPUQueue queue, WGPUCommandEncoder encoder) {
    WGPUCommandBufferDescriptor buffer_desc = {0};
    WGPUCommandBuffer command = p->finish(encoder, &buffer_desc);
    p->release_encoder(encoder);
    p->submit(queue, 1, &command);
    p->release_buffer(command);
}

/* Issue n operations in the given encoding; returns 0, or -1 for an unknown encoding. */
int gpuoverhead_issue(const Procs *p, WGPUDevice device, WGPUQueue queue,
                      WGPUComputePipeline pipeline, WGPUBindGroup group,
                      uint32_t x, uint32_t y, int encoding, uint32_t n) {
    WGPUCommandEncoderDescriptor encoder_desc = {0};
    WGPUComputePassDescriptor pass_desc = {0};
    if (encoding == ENC_SUBMIT) {
        for (uint32_t i = 0; i < n; i++) {
            WGPUCommandEncoder encoder = p->create_encoder(device, &encoder_desc);
            op_in_own_pass(p, encoder, &pass_desc, pipeline, group, x, y);
            submit_and_release(p, queue, encoder);
        }
        return 0;
    }
    if (encoding == ENC_PASS) {
        WGPUCommandEncoder encoder = p->create_encoder(device, &encoder_desc);
        for (uint32_t i = 0; i < n; i++)
            op_in_own_pass(p, encoder, &pass_desc, pipeline, group, x, y);
        submit_and_release(p, queue, encoder);
        return 0;
    }
    if (encoding == ENC_DISPATCH) {
        WGPUCommandEncoder encoder = p->create_encoder(device, &encoder_desc);
        WGPUComputePassEncoder pass = p->begin_pass(encoder, &pass_desc);
        for (uint32_t i = 0; i < n; i++) op(p, pass, pipeline, group, x, y);
        p->end_pass(pass);
        p->release_pass(pass);
        submit_and_release(p, queue, encoder);
        return 0;
    }
    return -1;
}
