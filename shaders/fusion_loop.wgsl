// gpuoverhead: fusion=loop
// A dependent loop: a 1-D ring of WG u32 cells (one workgroup holds it all) where each step
// needs the previous step's neighbours:
//     x'[i] = (x[i-1] ^ rotl(x[i+1], 5)) * 0x9E3779B1 + x[i]   (wrapping u32 arithmetic)
// `state` holds two halves of WG cells; PARITY says which half holds the current values.
// Unfused: one dispatch of `advance` per step (half PARITY -> the other half). Fused: one
// dispatch of `fused` runs STEPS steps in workgroup memory with a barrier between steps and
// stores the result where STEPS unfused steps would have left it. Integer arithmetic makes
// both forms, and numpy, agree exactly.
override WG: u32 = 64;
override STEPS: u32 = 1;
override PARITY: u32 = 0;
const MAX_CELLS: u32 = 256u;

@group(0) @binding(0) var<storage, read_write> state: array<u32>;

var<workgroup> cells: array<array<u32, MAX_CELLS>, 2>;

fn rule(left: u32, mid: u32, right: u32) -> u32 {
    return (left ^ ((right << 5u) | (right >> 27u))) * 0x9E3779B1u + mid;
}

@compute @workgroup_size(WG)
fn advance(@builtin(local_invocation_index) i: u32) {
    let src = PARITY * WG;
    let dst = (1u - PARITY) * WG;
    state[dst + i] = rule(state[src + (i + WG - 1u) % WG], state[src + i],
                          state[src + (i + 1u) % WG]);
}

@compute @workgroup_size(WG)
fn fused(@builtin(local_invocation_index) i: u32) {
    cells[0][i] = state[PARITY * WG + i];
    workgroupBarrier();
    for (var s = 0u; s < STEPS; s = s + 1u) {
        let a = s % 2u;
        cells[1u - a][i] = rule(cells[a][(i + WG - 1u) % WG], cells[a][i],
                                cells[a][(i + 1u) % WG]);
        workgroupBarrier();
    }
    state[((PARITY + STEPS) % 2u) * WG + i] = cells[STEPS % 2u][i];
}
