// gpuoverhead: writes=all
// Elementwise a[i] += 1 over `elements` u32 values: after D dispatches every element has
// grown by exactly D. The grid may be two-dimensional when
// `elements` needs more than 65535 workgroups in x.
override WG: u32 = 64;

@group(0) @binding(0) var<storage, read_write> data: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    if (i < arrayLength(&data)) {
        data[i] = data[i] + 1u;
    }
}
