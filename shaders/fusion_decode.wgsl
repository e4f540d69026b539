// gpuoverhead: fusion=decode
// One decode step of a transformer shaped like Qwen2.5 (RMSNorm, grouped-query attention
// with rotary embedding over a KV cache, SwiGLU MLP, residual adds, final norm, LM head),
// batch 1, f32. The new token sits at position T - 1 (the cache holds T - 1 earlier ones),
// so every step does the same work and leaves the same logits.
// Unfused, one dispatch per operation (18 per layer): rmsnorm, matvec (q, k, v), rope (q,
// k), kv_store, scores, softmax, attend, matvec (o), add, rmsnorm, matvec (gate, up),
// silu_mul, matvec (down), add. Fused, 5 per layer: qkv_rope (norm folded in), attention,
// matvec_add (o + residual), gate_up (norm folded in, SiLU x up), matvec_add (down +
// residual). Both: copy (the token's embedding into the residual stream) first, the final
// norm and the LM head (unfused: rmsnorm + matvec; fused: norm_matvec) in row chunks below
// the storage-binding limit, and `count` last.
// The weight matrices are read from binding 7 as W: f32 here; the f16 form of the step
// (suite key `precision: f16`) is this file with `enable f16;` and W = f16, computing in f32.
override WG: u32 = 64;        // threads per workgroup, a power of two up to 256
override H: u32 = 896;        // hidden size
override NH: u32 = 14;        // query heads
override NKV: u32 = 2;        // key/value heads
override F: u32 = 4864;       // MLP size
override T: u32 = 129;        // positions attended: the cache and the new token
override ROWS: u32 = 896;     // matvec: output rows (rope: heads; elementwise: length)
override COLS: u32 = 896;     // matvec: input length
const D: u32 = 64u;
const HALF: u32 = 32u;
const EPS: f32 = 1e-6;
const THETA: f32 = 1000000.0;
const MAX_T: u32 = 2304u;
alias W = f32;

@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read> in2: array<f32>;
@group(0) @binding(3) var<storage, read_write> out0: array<f32>;
@group(0) @binding(4) var<storage, read_write> out1: array<f32>;
@group(0) @binding(5) var<storage, read_write> out2: array<f32>;
@group(0) @binding(6) var<storage, read_write> counter: atomic<u32>;
@group(0) @binding(7) var<storage, read> weights: array<W>;

var<workgroup> red0: array<f32, 256>;
var<workgroup> red1: array<f32, 256>;
var<workgroup> scores_wg: array<f32, MAX_T>;

fn row_of(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// Sums of red0 and red1 within the workgroup, in red0[0] and red1[0].
fn reduce_sums(lid: u32) {
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if (lid < stride) {
            red0[lid] = red0[lid] + red0[lid + stride];
            red1[lid] = red1[lid] + red1[lid + stride];
        }
        workgroupBarrier();
    }
}

fn reduce_max(lid: u32) {
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if (lid < stride) {
            red0[lid] = max(red0[lid], red0[lid + stride]);
        }
        workgroupBarrier();
    }
}

// 1 / sqrt(mean(in1^2) + EPS) over the hidden vector in1, in every thread.
fn inv_rms_of_in1(lid: u32) -> f32 {
    var acc = 0.0;
    for (var j = lid; j < H; j = j + WG) {
        acc = acc + in1[j] * in1[j];
    }
    red0[lid] = acc;
    red1[lid] = 0.0;
    reduce_sums(lid);
    let inv = 1.0 / sqrt(red0[0] / f32(H) + EPS);
    workgroupBarrier();
    return inv;
}

fn rotate(a: f32, b: f32, j: u32) -> vec2<f32> {
    let angle = f32(T - 1u) * pow(THETA, -f32(2u * j) / f32(D));
    return vec2<f32>(a * cos(angle) - b * sin(angle), b * cos(angle) + a * sin(angle));
}

// ---- both forms --------------------------------------------------------------------------

// out0 (the residual stream) = in0 (the token's embedding row).
@compute @workgroup_size(WG)
fn copy(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < H) {
        out0[gid.x] = in0[gid.x];
    }
}

// One more step done: the output alone cannot show a missing one.
@compute @workgroup_size(1)
fn count() {
    atomicAdd(&counter, 1u);
}

// out0[r] = w[r, :] . in1 + in2[r] (w: the weights at binding 7), a workgroup per row.
@compute @workgroup_size(WG)
fn matvec(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let r = row_of(wid, nwg);
    var acc = 0.0;
    if (r < ROWS) {
        for (var c = lid; c < COLS; c = c + WG) {
            acc = acc + f32(weights[r * COLS + c]) * in1[c];
        }
    }
    red0[lid] = acc;
    red1[lid] = 0.0;
    reduce_sums(lid);
    if (lid == 0u && r < ROWS) {
        out0[r] = red0[0] + in2[r];
    }
}

// ---- unfused ----------------------------------------------------------------------------

// out0 = in1 / rms(in1) * in0 (in0: the norm's weight), one workgroup.
@compute @workgroup_size(WG)
fn rmsnorm(@builtin(local_invocation_index) lid: u32) {
    let inv = inv_rms_of_in1(lid);
    for (var j = lid; j < H; j = j + WG) {
        out0[j] = in1[j] * inv * in0[j];
    }
}

// Rotary embedding of ROWS heads of out0, in place.
@compute @workgroup_size(WG)
fn rope(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= ROWS * HALF) {
        return;
    }
    let base = (i / HALF) * D + i % HALF;
    let turned = rotate(out0[base], out0[base + HALF], i % HALF);
    out0[base] = turned.x;
    out0[base + HALF] = turned.y;
}

// The new token's key (in0) and value (in1) into the caches out0 and out1.
@compute @workgroup_size(WG)
fn kv_store(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < NKV * D) {
        out0[(T - 1u) * NKV * D + i] = in0[i];
        out1[(T - 1u) * NKV * D + i] = in1[i];
    }
}

// out0[h, t] = q_h (in0) . k_t (in1, the cache) / sqrt(D).
@compute @workgroup_size(WG)
fn scores(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= NH * T) {
        return;
    }
    let h = i / T;
    let t = i % T;
    let g = h / (NH / NKV);
    var acc = 0.0;
    for (var d = 0u; d < D; d = d + 1u) {
        acc = acc + in0[h * D + d] * in1[(t * NKV + g) * D + d];
    }
    out0[i] = acc * 0.125;
}

// Softmax of each head's row of out0 in place, a workgroup per head.
@compute @workgroup_size(WG)
fn softmax(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let base = wid.x * T;
    var m = -3.0e38;
    for (var t = lid; t < T; t = t + WG) {
        m = max(m, out0[base + t]);
    }
    red0[lid] = m;
    reduce_max(lid);
    let top = red0[0];
    workgroupBarrier();
    var acc = 0.0;
    for (var t = lid; t < T; t = t + WG) {
        let e = exp(out0[base + t] - top);
        out0[base + t] = e;
        acc = acc + e;
    }
    red0[lid] = acc;
    red1[lid] = 0.0;
    reduce_sums(lid);
    let total = red0[0];
    for (var t = lid; t < T; t = t + WG) {
        out0[base + t] = out0[base + t] / total;
    }
}

// out0[h, d] = sum_t p[h, t] (in0) v_t[d] (in1, the cache).
@compute @workgroup_size(WG)
fn attend(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= NH * D) {
        return;
    }
    let h = i / D;
    let g = h / (NH / NKV);
    var acc = 0.0;
    for (var t = 0u; t < T; t = t + 1u) {
        acc = acc + in0[h * T + t] * in1[(t * NKV + g) * D + i % D];
    }
    out0[i] = acc;
}

// out0 += in0 (the residual add), ROWS values.
@compute @workgroup_size(WG)
fn add(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < ROWS) {
        out0[gid.x] = out0[gid.x] + in0[gid.x];
    }
}

// out0 = silu(in0) * in1, ROWS values.
@compute @workgroup_size(WG)
fn silu_mul(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < ROWS) {
        out0[i] = in0[i] / (1.0 + exp(-in0[i])) * in1[i];
    }
}

// ---- fused ------------------------------------------------------------------------------

// Norm, Q, K and V rows (weights: [q; k; v], in1: the residual stream, in2: the norm's
// weight then the biases), rotary embedding, K and V into the caches: a workgroup per pair
// of rows (j, j + 32) of one head. out0: q, out1: key cache, out2: value cache.
@compute @workgroup_size(WG)
fn qkv_rope(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let p = row_of(wid, nwg);
    let inv = inv_rms_of_in1(lid);
    let block = p / HALF;
    let j = p % HALF;
    let r0 = block * D + j;
    let r1 = r0 + HALF;
    var a = 0.0;
    var b = 0.0;
    for (var c = lid; c < H; c = c + WG) {
        let n = in1[c] * in2[c];
        a = a + f32(weights[r0 * H + c]) * n;
        b = b + f32(weights[r1 * H + c]) * n;
    }
    red0[lid] = a;
    red1[lid] = b;
    reduce_sums(lid);
    if (lid != 0u || block >= NH + 2u * NKV) {
        return;
    }
    let y0 = red0[0] * inv + in2[H + r0];
    let y1 = red1[0] * inv + in2[H + r1];
    let slot = (T - 1u) * NKV * D;
    if (block < NH) {
        let turned = rotate(y0, y1, j);
        out0[r0] = turned.x;
        out0[r1] = turned.y;
    } else if (block < NH + NKV) {
        let turned = rotate(y0, y1, j);
        out1[slot + (block - NH) * D + j] = turned.x;
        out1[slot + (block - NH) * D + j + HALF] = turned.y;
    } else {
        out2[slot + (block - NH - NKV) * D + j] = y0;
        out2[slot + (block - NH - NKV) * D + j + HALF] = y1;
    }
}

// Attention of one head (a workgroup): scores, softmax and the weighted values. in0: q,
// in1: key cache, in2: value cache, out0: the heads' outputs.
@compute @workgroup_size(WG)
fn attention(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wid.x;
    let g = h / (NH / NKV);
    var m = -3.0e38;
    for (var t = lid; t < T; t = t + WG) {
        var acc = 0.0;
        for (var d = 0u; d < D; d = d + 1u) {
            acc = acc + in0[h * D + d] * in1[(t * NKV + g) * D + d];
        }
        scores_wg[t] = acc * 0.125;
        m = max(m, acc * 0.125);
    }
    red0[lid] = m;
    reduce_max(lid);
    let top = red0[0];
    workgroupBarrier();
    var total = 0.0;
    for (var t = lid; t < T; t = t + WG) {
        let e = exp(scores_wg[t] - top);
        scores_wg[t] = e;
        total = total + e;
    }
    red0[lid] = total;
    red1[lid] = 0.0;
    reduce_sums(lid);
    let sum = red0[0];
    if (lid < D) {
        var acc = 0.0;
        for (var t = 0u; t < T; t = t + 1u) {
            acc = acc + scores_wg[t] * in2[(t * NKV + g) * D + lid];
        }
        out0[h * D + lid] = acc / sum;
    }
}

// out0[r] += w[r, :] . in1 + in2[r]: a projection and its residual add.
@compute @workgroup_size(WG)
fn matvec_add(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let r = row_of(wid, nwg);
    var acc = 0.0;
    if (r < ROWS) {
        for (var c = lid; c < COLS; c = c + WG) {
            acc = acc + f32(weights[r * COLS + c]) * in1[c];
        }
    }
    red0[lid] = acc;
    red1[lid] = 0.0;
    reduce_sums(lid);
    if (lid == 0u && r < ROWS) {
        out0[r] = out0[r] + red0[0] + in2[r];
    }
}

// out0[r] = silu(gate_r . n) * (up_r . n), n the normed residual stream (in1) with the
// norm's weight in2; weights: gate rows then up rows. A workgroup per row r < F.
@compute @workgroup_size(WG)
fn gate_up(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let r = row_of(wid, nwg);
    let inv = inv_rms_of_in1(lid);
    var a = 0.0;
    var b = 0.0;
    if (r < F) {
        for (var c = lid; c < H; c = c + WG) {
            let n = in1[c] * in2[c];
            a = a + f32(weights[r * H + c]) * n;
            b = b + f32(weights[(F + r) * H + c]) * n;
        }
    }
    red0[lid] = a;
    red1[lid] = b;
    reduce_sums(lid);
    if (lid == 0u && r < F) {
        let g = red0[0] * inv;
        out0[r] = g / (1.0 + exp(-g)) * (red1[0] * inv);
    }
}

// out0[r] = w[r, :] . (in1 / rms(in1) * in2): the final norm folded into the LM head.
@compute @workgroup_size(WG)
fn norm_matvec(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let r = row_of(wid, nwg);
    let inv = inv_rms_of_in1(lid);
    var acc = 0.0;
    if (r < ROWS) {
        for (var c = lid; c < H; c = c + WG) {
            acc = acc + f32(weights[r * H + c]) * in1[c] * in2[c];
        }
    }
    red0[lid] = acc;
    red1[lid] = 0.0;
    reduce_sums(lid);
    if (lid == 0u && r < ROWS) {
        out0[r] = red0[0] * inv;
    }
}
