// gpuoverhead: writes=first
// The emptiest dispatch that can still be verified: the grid covers `elements` invocations,
// and only the first one does anything, adding 1 to data[0]. After D dispatches data[0] has
// grown by D and every other element is unchanged.
override WG: u32 = 64;

@group(0) @binding(0) var<storage, read_write> data: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x == 0u && gid.y == 0u) {
        data[0] = data[0] + 1u;
    }
}
