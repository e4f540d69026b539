// gpuoverhead: fusion=chain
// Elementwise chain over f32 values, in place. Step s applies op s % 3: add `a`, multiply by
// `b`, max with `c` (read from a uniform, so no compiler folds them away). A dispatch applies
// STEPS consecutive steps from FIRST: the fused form of K steps is one dispatch with STEPS=K,
// FIRST=0; the unfused form is K dispatches with STEPS=1, FIRST=s. Both apply the same f32
// operations in the same order, so their outputs are bit-identical.
override WG: u32 = 64;
override STEPS: u32 = 1;
override FIRST: u32 = 0;

struct Params { a: f32, b: f32, c: f32, pad: f32 }

@group(0) @binding(0) var<storage, read_write> data: array<f32>;
@group(0) @binding(1) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    if (i >= arrayLength(&data)) {
        return;
    }
    var x = data[i];
    for (var s = FIRST; s < FIRST + STEPS; s = s + 1u) {
        let op = s % 3u;
        if (op == 0u) {
            x = x + p.a;
        } else if (op == 1u) {
            x = x * p.b;
        } else {
            x = max(x, p.c);
        }
    }
    data[i] = x;
}
