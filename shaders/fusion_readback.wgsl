// gpuoverhead: fusion=readback
// The values the readback workload reads back, written on the GPU: value i is
// (i * 0x9E3779B1) ^ seed (wrapping u32), a pattern numpy computes exactly, whose seed the
// host changes between checks, so a read that returns zeros, or what an earlier read left in
// its staging buffer, fails the check. Its sampling forms use the decode step's argmax
// (fusion_decode.wgsl: `argmax_part`, `argmax`).
override WG: u32 = 64;

@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@group(0) @binding(1) var<uniform> seed: vec4<u32>;

@compute @workgroup_size(WG)
fn pattern(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    if (i < arrayLength(&data)) {
        data[i] = (i * 0x9E3779B1u) ^ seed.x;
    }
}
