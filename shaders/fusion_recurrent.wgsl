// gpuoverhead: fusion=recurrent
// A recurrent step: the state h (H f32 values) becomes sigmoid(W h + b), where W is H x H;
// with a batch, B states side by side (state b at b * H), each stepped with the same W and b.
// Unfused, a step is six dispatches, one matrix-vector product and five pointwise ops,
//     z = W h;  z = z + b;  z = -z;  z = exp(z);  z = z + 1;  z = 1 / z
// as an eager framework issues them. Fused, a step is one dispatch of `fused`: the same
// product, then the same five ops in the same order on each result. `state` holds two
// halves of B x H values; PARITY says which half holds h (the step writes the other).
// The product (matvec, fused) gives each output value a group of LANES threads: lane l reads
// columns l, l + LANES, ... of its row, so a group's loads are adjacent in memory (coalesced)
// and a long row is spread over many threads; the lanes' partial sums are then added in
// workgroup memory. W is read as vec4 (16 bytes a load) where H is a multiple of 4.
override WG: u32 = 64;       // threads per workgroup (the product: a power of two up to 256)
override PARITY: u32 = 0;
override LANES: u32 = 4;     // product: threads per output value, a power of two dividing WG
override LOADS: u32 = 1;     // product: loads per lane, ceil(row length in loads / LANES)
override VEC4: bool = false; // product: W read through w4 (H a multiple of 4)

@group(0) @binding(0) var<storage, read_write> state: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read> w4: array<vec4<f32>>;  // the same buffer as w

var<workgroup> red: array<f32, 256>;

fn size() -> u32 {
    return arrayLength(&bias);
}

// Values in a half: B states of H.
fn total() -> u32 {
    return arrayLength(&state) / 2u;
}

// Lane `lane`'s share of row `row` of W times the state at `src`. The trip count LOADS is
// fixed at pipeline creation, so drivers unroll the loop and keep its loads in flight
// together; the last load of a lane may lie past the row's end and is skipped.
fn share(row: u32, src: u32, lane: u32) -> f32 {
    let n = size();
    if (VEC4) {
        let n4 = n / 4u;
        var acc = vec4<f32>(0.0);
        for (var k = 0u; k < LOADS; k = k + 1u) {
            let c = lane + k * LANES;
            if (c < n4) {
                let j = src + 4u * c;
                let x = vec4<f32>(state[j], state[j + 1u], state[j + 2u], state[j + 3u]);
                acc = fma(w4[row * n4 + c], x, acc);
            }
        }
        return acc.x + acc.y + acc.z + acc.w;
    }
    var acc = 0.0;
    for (var k = 0u; k < LOADS; k = k + 1u) {
        let c = lane + k * LANES;
        if (c < n) {
            acc = fma(w[row * n + c], state[src + c], acc);
        }
    }
    return acc;
}

// Adds up `red` over each run of LANES threads: the run that starts at thread i ends with
// its sum in red[i]. A tree, log2(LANES) steps, each behind a barrier.
fn reduce_runs(lid: u32) {
    workgroupBarrier();
    for (var s = LANES / 2u; s > 0u; s = s / 2u) {
        if ((lid & (LANES - 1u)) < s) {
            red[lid] = red[lid] + red[lid + s];
        }
        workgroupBarrier();
    }
}

// The product for this thread's lane group, WG / LANES groups a workgroup: group g computes
// row g / B of W times state g % B, so the B groups reading one row of W run side by side
// and all but the first find it in cache. Afterwards the group's first lane holds the value
// in red[lid] and gets its index in a half; every other thread gets total() (nothing).
fn product(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    let n = size();
    let batch = total() / n;
    let g = (wid.x + wid.y * nwg.x) * (WG / LANES) + lid / LANES;
    let lane = lid % LANES;
    let row = g / batch;
    let src = PARITY * total() + (g % batch) * n;
    var part = 0.0;
    if (g < total()) {
        part = share(row, src, lane);
    }
    red[lid] = part;
    reduce_runs(lid);
    return select(total(), (g % batch) * n + row, lane == 0u && g < total());
}

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// The half the step writes.
fn out(i: u32) -> u32 {
    return (1u - PARITY) * total() + i;
}

@compute @workgroup_size(WG)
fn matvec(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let i = product(wid, nwg, lid);
    if (i < total()) {
        state[out(i)] = red[lid];
    }
}

@compute @workgroup_size(WG)
fn add_bias(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i < total()) {
        state[out(i)] = state[out(i)] + bias[i % size()];
    }
}

@compute @workgroup_size(WG)
fn negate(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i < total()) {
        state[out(i)] = -state[out(i)];
    }
}

@compute @workgroup_size(WG)
fn exponent(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i < total()) {
        state[out(i)] = exp(state[out(i)]);
    }
}

@compute @workgroup_size(WG)
fn add_one(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i < total()) {
        state[out(i)] = state[out(i)] + 1.0;
    }
}

@compute @workgroup_size(WG)
fn reciprocal(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i < total()) {
        state[out(i)] = 1.0 / state[out(i)];
    }
}

@compute @workgroup_size(WG)
fn fused(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
    let i = product(wid, nwg, lid);
    if (i < total()) {
        state[out(i)] = 1.0 / (exp(-(red[lid] + bias[i % size()])) + 1.0);
    }
}
