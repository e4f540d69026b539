// gpuoverhead: fusion=recurrent
// A recurrent step: the state h (H f32 values) becomes sigmoid(W h + b), where W is H x H;
// with a batch, B states side by side (state b at b * H), each stepped with the same W and b.
// Unfused, a step is six dispatches, one matrix-vector product and five pointwise ops,
//     z = W h;  z = z + b;  z = -z;  z = exp(z);  z = z + 1;  z = 1 / z
// as an eager framework issues them. Fused, a step is one dispatch of `fused`: each thread
// computes its row's product and applies the same five ops in the same order. `state` holds
// two halves of B x H values; PARITY says which half holds h (the step writes the other).
override WG: u32 = 64;
override PARITY: u32 = 0;

@group(0) @binding(0) var<storage, read_write> state: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;

fn size() -> u32 {
    return arrayLength(&bias);
}

// Values in a half: B states of H.
fn total() -> u32 {
    return arrayLength(&state) / 2u;
}


// Row i % H of W times state i / H.
fn product(i: u32) -> f32 {
    let n = size();
    let row = i % n;
    let src = PARITY * total() + (i / n) * n;
    var acc = 0.0;
    for (var j = 0u; j < n; j = j + 1u) {
        acc = acc + w[row * n + j] * state[src + j];
    }
    return acc;
}

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// The half the step writes.
fn out(i: u32) -> u32 {
    return (1u - PARITY) * total() + i;
}

@compute @workgroup_size(WG)
fn matvec(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i < total()) {
        state[out(i)] = product(i);
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
fn fused(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if (i < total()) {
        state[out(i)] = 1.0 / (exp(-(product(i) + bias[i % size()])) + 1.0);
    }
}
