// gpuoverhead: fusion=population
// A population of independent cells, a thread a cell: each step evaluates a Rastrigin-like
// function at the cell's point and moves the cell by it. The point is the cell's two 16-bit
// halves (a, b) on the integer grid; the evaluation is Rastrigin's sum of squares plus
// A (1 - cos) per coordinate, the cosine a triangle wave of period 256 (`wave`), A = 10:
//     f  = a*a + b*b + 10 * (wave(a) + wave(b))
//     x' = (x ^ rotl(f, 13)) * 0x9E3779B1 + 1          (wrapping u32 arithmetic)
// No cell reads another, so no step waits on its neighbours. A dispatch applies STEPS steps
// in place: the fused form of L steps is one dispatch with STEPS=L (the cell looping in a
// register), the unfused form L dispatches with STEPS=1. Integer arithmetic makes both
// forms, and numpy, agree exactly.
override WG: u32 = 64;
override STEPS: u32 = 1;

@group(0) @binding(0) var<storage, read_write> cells: array<u32>;

fn wave(v: u32) -> u32 {
    let t = v & 255u;
    return t ^ ((t >> 7u) * 255u);
}

fn step(x: u32) -> u32 {
    let a = x & 0xFFFFu;
    let b = x >> 16u;
    let f = a * a + b * b + 10u * (wave(a) + wave(b));
    return (x ^ ((f << 13u) | (f >> 19u))) * 0x9E3779B1u + 1u;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    if (i >= arrayLength(&cells)) {
        return;
    }
    var x = cells[i];
    for (var s = 0u; s < STEPS; s = s + 1u) {
        x = step(x);
    }
    cells[i] = x;
}
