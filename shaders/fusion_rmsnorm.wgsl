// gpuoverhead: fusion=rmsnorm
// RMSNorm over rows of H values (H = 896, Qwen2.5-0.5B's hidden size):
//     y = x / sqrt(mean(x^2) + EPS) * w
// Unfused, five dispatches as an unfused engine issues them: `square` (sq = x*x),
// `sumsq` (one workgroup per row sums sq), `inv_rms` (r = 1/sqrt(ss/H + EPS)), `apply_scale`
// (t = x*r), `weight` (y = t*w). Fused: `fused`, one workgroup per row doing all of it.
// Both sum each row in the same order (thread t: elements t, t+WG, ...; then a tree).
override WG: u32 = 256;
override H: u32 = 896;
const EPS: f32 = 1e-6;
const MAX_WG: u32 = 1024u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> sq: array<f32>;
@group(0) @binding(3) var<storage, read_write> ss: array<f32>;
@group(0) @binding(4) var<storage, read_write> r: array<f32>;
@group(0) @binding(5) var<storage, read_write> t: array<f32>;
@group(0) @binding(6) var<storage, read_write> y: array<f32>;
// Units of work done: the last dispatch of each unit adds 1, so the output check sees a
// missing unit (the normalized rows are the same after one unit or many).
@group(0) @binding(7) var<storage, read_write> units_done: atomic<u32>;

var<workgroup> sums: array<f32, MAX_WG>;

fn flat_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// Tree reduction of `sums` within one workgroup; the sum ends in sums[0].
fn reduce(lid: u32) {
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if (lid < stride) {
            sums[lid] = sums[lid] + sums[lid + stride];
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(WG)
fn square(@builtin(global_invocation_id) gid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if (i < arrayLength(&sq)) {
        sq[i] = x[i] * x[i];
    }
}

@compute @workgroup_size(WG)
fn sumsq(@builtin(workgroup_id) row: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var acc = 0.0;
    for (var j = lid; j < H; j = j + WG) {
        acc = acc + sq[row.x * H + j];
    }
    sums[lid] = acc;
    reduce(lid);
    if (lid == 0u) {
        ss[row.x] = sums[0];
    }
}

@compute @workgroup_size(WG)
fn inv_rms(@builtin(global_invocation_id) gid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if (i < arrayLength(&r)) {
        r[i] = 1.0 / sqrt(ss[i] / f32(H) + EPS);
    }
}

@compute @workgroup_size(WG)
fn apply_scale(@builtin(global_invocation_id) gid: vec3<u32>,
             @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if (i < arrayLength(&t)) {
        t[i] = x[i] * r[i / H];
    }
}

@compute @workgroup_size(WG)
fn weight(@builtin(global_invocation_id) gid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if (i < arrayLength(&y)) {
        y[i] = t[i] * w[i % H];
    }
    if (i == 0u) {
        atomicAdd(&units_done, 1u);
    }
}

@compute @workgroup_size(WG)
fn fused(@builtin(workgroup_id) row: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var acc = 0.0;
    for (var j = lid; j < H; j = j + WG) {
        let v = x[row.x * H + j];
        acc = acc + v * v;
    }
    sums[lid] = acc;
    reduce(lid);
    let scale = 1.0 / sqrt(sums[0] / f32(H) + EPS);
    for (var j = lid; j < H; j = j + WG) {
        let i = row.x * H + j;
        y[i] = (x[i] * scale) * w[j];
    }
    if (row.x == 0u && lid == 0u) {
        atomicAdd(&units_done, 1u);
    }
}
