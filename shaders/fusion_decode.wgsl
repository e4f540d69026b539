// gpuoverhead: fusion=decode
// One decode step of a transformer shaped like Qwen2.5 (RMSNorm, grouped-query attention
// with rotary embedding over a KV cache, SwiGLU MLP, residual adds, final norm, LM head
// tied to the embedding), batch 1, f32. The new token sits at position T - 1 (the cache
// holds T - 1 earlier ones), so every step does the same work and leaves the same logits.
// Unfused, one dispatch per operation (18 per layer): rmsnorm, matvec (q, k, v), rope (q,
// k), kv_store, scores, softmax, attend, matvec (o), add, rmsnorm, matvec (gate, up),
// silu_mul, matvec (down), add. Fused, 5 per layer: qkv_rope (norm folded in), attn_part
// (flash-decoding: a workgroup per head and block of AB cache positions, its partial max,
// sum and weighted values), attn_out (the blocks combined, o + residual), gate_up (norm
// folded in, SiLU x up), matvec_add (down + residual); or, the `head` attention
// (workloads/decode_choices.ATTENTIONS), attn_head (a workgroup per query head over the
// whole cache, normed) and o_proj (o + residual, a plain matvec) for attn_part and attn_out.
// Both: copy (the token's row of the
// tied embedding into the residual stream) first, the final norm and the LM head
// (unfused: rmsnorm + matvec; fused: norm_matvec, or norm_matvec4 with four rows a lane
// group, the suite's choice: workloads/decode_choices) in row chunks below the storage-binding
// limit, all chunks writing one logits buffer, and `count` last. In the token loop (an
// engine's greedy decoding) the step's input is instead the embedding of the token id in a
// GPU buffer (`embed`, a dispatch per head chunk) and its end the argmax of the logits into
// that buffer (`argmax_part`, `argmax`), so the next step reads the token this one chose.
// Matrix-vector products read weights as vec4 (16 bytes in f32, 8 in f16), LANES threads
// per row, WG / LANES rows per workgroup, sums reduced in workgroup memory. Each lane's
// loop has a trip count fixed at pipeline creation (overrides), so drivers unroll it and
// keep its loads in flight together.
// The weight matrices are read from binding 7 as W: f32 here; the f16 form of the step
// (suite key `precision: f16`) is this file with `enable f16;` and W = f16, computing in f32.
override WG: u32 = 128;       // threads per workgroup, a power of two up to 256
override LANES: u32 = 32;     // matvec: threads per row, a power of two up to WG
override H: u32 = 896;        // hidden size
override NH: u32 = 14;        // query heads
override NKV: u32 = 2;        // key/value heads
override D: u32 = 64;         // head dimension, a multiple of 16 up to 128
override F: u32 = 4864;       // MLP size
override T: u32 = 129;        // positions attended: the cache and the new token
override AB: u32 = 256;       // attention: positions per block, a power of two from
                              // WG / (D / 4) up to WG
override NB: u32 = 1;         // attention blocks: ceil(T / AB)
override MLS: u32 = 64;       // attention: f32 between two heads' blocks' largest scores and
                              // sums (ml_at), at least 2 * NB, whole cache lines
override ROWS: u32 = 896;     // matvec: output rows (rope: heads; elementwise: length)
override COLS: u32 = 896;     // matvec: input length, a multiple of 4
override TOKEN: u32 = 0;      // copy: the token's row in the first chunk of the LM head
override BASE: u32 = 0;       // matvec, norm_matvec, embed: the chunk's first row of the head
override EARLY: u32 = 0;      // qkv_rope, matvec_add, o_proj: 1 loads what a row's sums are
                              // added to (biases, RoPE angles, the residual) before its dot
                              // products, their wait overlapping the weights'; 0 after
override AHEAD_WG: u32 = 0;   // the `_ahead` entry points: workgroups past the kernel's own
                              // that load `ahead` (load_ahead), none where 0
override AHEAD_AT: u32 = 0;   // load_ahead: its first range's first vec4 in `ahead`
override AHEAD_N: u32 = 0;    // load_ahead: vec4 in each of its two ranges
override AHEAD_GAP: u32 = 0;  // load_ahead: the second range starts AHEAD_GAP vec4 after the
                              // first
const EPS: f32 = 1e-6;
const MAX_D4: u32 = 32u;      // D / 4 at most
const MAX_Q4: u32 = 384u;     // NH * D / 4 and H / 4 at most (os: the attention's output or a
                              // normed residual stream in workgroup memory)
const MAX_HB: u32 = 512u;     // NH * NB at most
alias W = f32;

@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read> in2: array<f32>;
@group(0) @binding(3) var<storage, read_write> out0: array<f32>;
@group(0) @binding(4) var<storage, read_write> out1: array<f32>;
@group(0) @binding(5) var<storage, read_write> out2: array<f32>;
@group(0) @binding(6) var<storage, read_write> counter: atomic<u32>;
@group(0) @binding(7) var<storage, read> weights: array<vec4<W>>;
@group(0) @binding(8) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read> y4: array<vec4<f32>>;
@group(0) @binding(10) var<storage, read> z4: array<vec4<f32>>;
@group(0) @binding(11) var<storage, read_write> token: array<u32>;
@group(0) @binding(12) var<storage, read> ahead: array<vec4<W>>;
@group(0) @binding(13) var<storage, read_write> tickets: array<atomic<u32>>;

var<workgroup> red: array<vec4<f32>, 256>;
var<workgroup> redm: array<f32, 256>;
var<workgroup> qs: array<vec4<f32>, MAX_D4>;
var<workgroup> ps: array<f32, 256>;
var<workgroup> os: array<vec4<f32>, MAX_Q4>;
var<workgroup> hw: array<f32, MAX_HB>;
var<workgroup> lw: array<f32, MAX_HB>;
var<workgroup> redi: array<u32, 256>;

fn row_of(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

fn total(v: vec4<f32>) -> f32 {
    return v.x + v.y + v.z + v.w;
}

// Sums `red` over each run of `lanes` threads (a power of two dividing WG): the run that
// starts at thread i ends with its sum in red[i].
fn reduce_runs(lid: u32, lanes: u32) {
    workgroupBarrier();
    for (var s = lanes / 2u; s > 0u; s = s / 2u) {
        if ((lid & (lanes - 1u)) < s) {
            red[lid] = red[lid] + red[lid + s];
        }
        workgroupBarrier();
    }
}

// The largest of `redm` in redm[0] (the whole workgroup).
fn reduce_max(lid: u32) {
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            redm[lid] = max(redm[lid], redm[lid + s]);
        }
        workgroupBarrier();
    }
}

// The sum of `redm` in redm[0] (the whole workgroup).
fn reduce_sum(lid: u32) {
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            redm[lid] = redm[lid] + redm[lid + s];
        }
        workgroupBarrier();
    }
}

// A lane's share of w[row, :] . x4 over `cols4` vec4 columns (lane, lane + LANES, ...), four
// columns a batch whose loads are issued together (a column past the row reads the row's
// last one, weighted 0): a lane waits for memory once per batch, not once per column.
fn dot_share(row: u32, lane: u32, cols4: u32) -> f32 {
    let base = row * cols4;
    let last = cols4 - 1u;
    var a = vec4<f32>(0.0);
    var b = vec4<f32>(0.0);
    for (var c = lane; c < cols4; c = c + 4u * LANES) {
        let c1 = min(c + LANES, last);
        let c2 = min(c + 2u * LANES, last);
        let c3 = min(c + 3u * LANES, last);
        let w0 = vec4<f32>(weights[base + c]);
        let w1 = vec4<f32>(weights[base + c1]);
        let w2 = vec4<f32>(weights[base + c2]);
        let w3 = vec4<f32>(weights[base + c3]);
        a = fma(w0, x4[c], a);
        b = fma(w1, select(vec4<f32>(0.0), x4[c1], c + LANES < cols4), b);
        a = fma(w2, select(vec4<f32>(0.0), x4[c2], c + 2u * LANES < cols4), a);
        b = fma(w3, select(vec4<f32>(0.0), x4[c3], c + 3u * LANES < cols4), b);
    }
    return total(a + b);
}

// The weights of dot_share's first batch of row `row` (cols4 vec4 columns), loaded ahead.
fn first_batch(row: u32, lane: u32, cols4: u32) -> array<vec4<f32>, 4> {
    let base = row * cols4;
    let last = cols4 - 1u;
    return array<vec4<f32>, 4>(vec4<f32>(weights[base + min(lane, last)]),
                               vec4<f32>(weights[base + min(lane + LANES, last)]),
                               vec4<f32>(weights[base + min(lane + 2u * LANES, last)]),
                               vec4<f32>(weights[base + min(lane + 3u * LANES, last)]));
}

// dot_share against os (the combined attention output in workgroup memory), the first
// batch's weights given (`first_batch`, loaded before os was).
fn dot_share_os(row: u32, lane: u32, cols4: u32, first: array<vec4<f32>, 4>) -> f32 {
    let last = cols4 - 1u;
    var a = vec4<f32>(0.0);
    var b = vec4<f32>(0.0);
    for (var c = lane; c < cols4; c = c + 4u * LANES) {
        let c1 = min(c + LANES, last);
        let c2 = min(c + 2u * LANES, last);
        let c3 = min(c + 3u * LANES, last);
        var w = first;
        if (c != lane) {
            w = first_batch(row, c, cols4);
        }
        a = fma(w[0], os[c], a);
        b = fma(w[1], select(vec4<f32>(0.0), os[c1], c + LANES < cols4), b);
        a = fma(w[2], select(vec4<f32>(0.0), os[c2], c + 2u * LANES < cols4), a);
        b = fma(w[3], select(vec4<f32>(0.0), os[c3], c + 3u * LANES < cols4), b);
    }
    return total(a + b);
}

// A lane's shares of w[r0, :] . n and w[r1, :] . n, n = x4 * y4 (the residual stream times
// the norm's weight, not yet divided by its RMS), and of x4 . x4 (for the RMS): (a, b, ss,
// 0). Two columns of each row a batch: four weight loads issued together.
fn norm_dot2(r0: u32, r1: u32, lane: u32) -> vec4<f32> {
    let h4 = H / 4u;
    let last = h4 - 1u;
    var a = vec4<f32>(0.0);
    var b = vec4<f32>(0.0);
    var q = vec4<f32>(0.0);
    for (var c = lane; c < h4; c = c + 2u * LANES) {
        let c1 = min(c + LANES, last);
        let wa0 = vec4<f32>(weights[r0 * h4 + c]);
        let wb0 = vec4<f32>(weights[r1 * h4 + c]);
        let wa1 = vec4<f32>(weights[r0 * h4 + c1]);
        let wb1 = vec4<f32>(weights[r1 * h4 + c1]);
        let x0 = x4[c];
        let x1 = select(vec4<f32>(0.0), x4[c1], c + LANES < h4);
        let n0 = x0 * y4[c];
        let n1 = x1 * y4[c1];
        a = fma(wa1, n1, fma(wa0, n0, a));
        b = fma(wb1, n1, fma(wb0, n0, b));
        q = fma(x1, x1, fma(x0, x0, q));
    }
    return vec4<f32>(total(a), total(b), total(q), 0.0);
}

// norm_dot2 for one row, four columns a batch: (a, 0, ss, 0).
fn norm_dot(r: u32, lane: u32) -> vec4<f32> {
    let h4 = H / 4u;
    let last = h4 - 1u;
    var a = vec4<f32>(0.0);
    var q = vec4<f32>(0.0);
    for (var c = lane; c < h4; c = c + 4u * LANES) {
        let c1 = min(c + LANES, last);
        let c2 = min(c + 2u * LANES, last);
        let c3 = min(c + 3u * LANES, last);
        let w0 = vec4<f32>(weights[r * h4 + c]);
        let w1 = vec4<f32>(weights[r * h4 + c1]);
        let w2 = vec4<f32>(weights[r * h4 + c2]);
        let w3 = vec4<f32>(weights[r * h4 + c3]);
        let x0 = x4[c];
        let x1 = select(vec4<f32>(0.0), x4[c1], c + LANES < h4);
        let x2 = select(vec4<f32>(0.0), x4[c2], c + 2u * LANES < h4);
        let x3 = select(vec4<f32>(0.0), x4[c3], c + 3u * LANES < h4);
        a = fma(w0, x0 * y4[c], fma(w1, x1 * y4[c1], a));
        a = fma(w2, x2 * y4[c2], fma(w3, x3 * y4[c3], a));
        q = fma(x0, x0, fma(x1, x1, fma(x2, x2, fma(x3, x3, q))));
    }
    return vec4<f32>(total(a), 0.0, total(q), 0.0);
}

fn inv_rms(sum_sq: f32) -> f32 {
    return 1.0 / sqrt(sum_sq / f32(H) + EPS);
}

// (a, b) turned by the new token's angle for pair j: in1 holds cos then sin of the angles
// of position T - 1, computed on the host in f64 (a GPU's pow and cos of 2048 radians in
// f32 are off by more than the logits' tolerance).
fn rotate(a: f32, b: f32, j: u32) -> vec2<f32> {
    return turn(a, b, in1[j], in1[D / 2u + j]);
}

fn turn(a: f32, b: f32, c: f32, s: f32) -> vec2<f32> {
    return vec2<f32>(a * c - b * s, b * c + a * s);
}

// A row's residual out0[r] where EARLY loads it before the row's dot products (`ok`: the
// row exists), else 0; `then_row` gives it after them, loading it there where not EARLY.
fn early_row(ok: bool, r: u32) -> f32 {
    if (EARLY == 1u && ok) {
        return out0[r];
    }
    return 0.0;
}

fn then_row(r: u32, early: f32) -> f32 {
    if (EARLY == 1u) {
        return early;
    }
    return out0[r];
}

// ---- both forms --------------------------------------------------------------------------

// out0 (the residual stream) = row TOKEN of the LM head's first chunk (the tied embedding).
@compute @workgroup_size(WG)
fn copy(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < H / 4u) {
        let v = vec4<f32>(weights[TOKEN * (H / 4u) + i]);
        out0[4u * i] = v.x;
        out0[4u * i + 1u] = v.y;
        out0[4u * i + 2u] = v.z;
        out0[4u * i + 3u] = v.w;
    }
}

// ---- the token loop (an engine's step: the token in, the next token out, on the GPU) ------

// out0 = the embedding of token[0] (its row of the tied LM head) where that row is in this
// chunk (rows BASE .. BASE + ROWS, bound at binding 7); every chunk has its dispatch.
@compute @workgroup_size(WG)
fn embed(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let t = token[0];
    if (i < H / 4u && t >= BASE && t - BASE < ROWS) {
        let v = vec4<f32>(weights[(t - BASE) * (H / 4u) + i]);
        out0[4u * i] = v.x;
        out0[4u * i + 1u] = v.y;
        out0[4u * i + 2u] = v.z;
        out0[4u * i + 3u] = v.w;
    }
}

// Keeps in (redm, redi)[lid] whichever of it and entry `other` is the larger logit, the
// lower index on a tie (numpy's argmax).
fn keep_best(lid: u32, other: u32) {
    let v = redm[other];
    let i = redi[other];
    if (v > redm[lid] || (v == redm[lid] && i < redi[lid])) {
        redm[lid] = v;
        redi[lid] = i;
    }
}

// The greedy choice, first half: each workgroup's largest of WG * 16 logits (in0, ROWS of
// them) as (value, index bits) pairs in out0.
@compute @workgroup_size(WG)
fn argmax_part(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let start = wid.x * WG * 16u;
    redm[lid] = -3.4e38;
    redi[lid] = 0xffffffffu;
    for (var j = 0u; j < 16u; j = j + 1u) {
        let r = start + j * WG + lid;
        if (r < ROWS && in0[r] > redm[lid]) {
            redm[lid] = in0[r];
            redi[lid] = r;
        }
    }
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        workgroupBarrier();
        if (lid < s) {
            keep_best(lid, lid + s);
        }
    }
    if (lid == 0u) {
        out0[2u * wid.x] = redm[0];
        out0[2u * wid.x + 1u] = bitcast<f32>(redi[0]);
    }
}

// Second half, one workgroup: the best of the NB pairs in in0 is the next token, token[0].
@compute @workgroup_size(WG)
fn argmax(@builtin(local_invocation_index) lid: u32) {
    redm[lid] = -3.4e38;
    redi[lid] = 0xffffffffu;
    for (var b = lid; b < NB; b = b + WG) {
        let v = in0[2u * b];
        if (v > redm[lid]) {
            redm[lid] = v;
            redi[lid] = bitcast<u32>(in0[2u * b + 1u]);
        }
    }
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        workgroupBarrier();
        if (lid < s) {
            keep_best(lid, lid + s);
        }
    }
    if (lid == 0u) {
        token[0] = redi[0];
    }
}

// One more step done: the output alone cannot show a missing one.
@compute @workgroup_size(1)
fn count() {
    atomicAdd(&counter, 1u);
}

// out0[BASE + r] = w[r, :] . x4 + in2[r] (w: the weights at binding 7), LANES threads a row.
@compute @workgroup_size(WG)
fn matvec(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let r = row_of(wid, nwg) * (WG / LANES) + lid / LANES;
    let lane = lid % LANES;
    var s = 0.0;
    if (r < ROWS) {
        s = dot_share(r, lane, COLS / 4u);
    }
    red[lid] = vec4<f32>(s, 0.0, 0.0, 0.0);
    reduce_runs(lid, LANES);
    if (lane == 0u && r < ROWS) {
        out0[BASE + r] = red[lid].x + in2[r];
    }
}

// ---- unfused ----------------------------------------------------------------------------

// out0 = in1 / rms(in1) * in0 (in0: the norm's weight), one workgroup.
@compute @workgroup_size(WG)
fn rmsnorm(@builtin(local_invocation_index) lid: u32) {
    var acc = 0.0;
    for (var j = lid; j < H; j = j + WG) {
        acc = acc + in1[j] * in1[j];
    }
    redm[lid] = acc;
    reduce_sum(lid);
    let inv = inv_rms(redm[0]);
    for (var j = lid; j < H; j = j + WG) {
        out0[j] = in1[j] * inv * in0[j];
    }
}

// Rotary embedding of ROWS heads of out0, in place (in1: the angles' cos and sin).
@compute @workgroup_size(WG)
fn rope(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let half = D / 2u;
    if (i >= ROWS * half) {
        return;
    }
    let base = (i / half) * D + i % half;
    let turned = rotate(out0[base], out0[base + half], i % half);
    out0[base] = turned.x;
    out0[base + half] = turned.y;
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

// out0[h, t] = q_h (x4) . k_t (y4, the cache) / sqrt(D), a thread per head and position.
@compute @workgroup_size(WG)
fn scores(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= NH * T) {
        return;
    }
    let h = i / T;
    let t = i % T;
    let g = h / (NH / NKV);
    let d4 = D / 4u;
    let k = (t * NKV + g) * d4;
    var acc = vec4<f32>(0.0);
    for (var d = 0u; d < d4; d = d + 4u) {
        let k0 = y4[k + d];
        let k1 = y4[k + d + 1u];
        let k2 = y4[k + d + 2u];
        let k3 = y4[k + d + 3u];
        acc = fma(x4[h * d4 + d], k0, fma(x4[h * d4 + d + 1u], k1, acc));
        acc = fma(x4[h * d4 + d + 2u], k2, fma(x4[h * d4 + d + 3u], k3, acc));
    }
    out0[i] = total(acc) / sqrt(f32(D));
}

// Softmax of each head's row of out0 in place, a workgroup per head.
@compute @workgroup_size(WG)
fn softmax(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let base = wid.x * T;
    var m = -3.0e38;
    for (var t = lid; t < T; t = t + WG) {
        m = max(m, out0[base + t]);
    }
    redm[lid] = m;
    reduce_max(lid);
    let top = redm[0];
    workgroupBarrier();
    var acc = 0.0;
    for (var t = lid; t < T; t = t + WG) {
        let e = exp(out0[base + t] - top);
        out0[base + t] = e;
        acc = acc + e;
    }
    redm[lid] = acc;
    reduce_sum(lid);
    let sum = redm[0];
    for (var t = lid; t < T; t = t + WG) {
        out0[base + t] = out0[base + t] / sum;
    }
}

// out0[h, 4c .. 4c + 3] = sum_t p[h, t] (in0) v_t[4c ..] (z4, the cache): a workgroup per
// head and 4 dimensions, its threads over the positions.
@compute @workgroup_size(WG)
fn attend(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let d4 = D / 4u;
    let h = wid.x / d4;
    let c = wid.x % d4;
    let g = h / (NH / NKV);
    var acc = vec4<f32>(0.0);
    for (var t = lid; t < T; t = t + WG) {
        acc = fma(vec4<f32>(in0[h * T + t]), z4[(t * NKV + g) * d4 + c], acc);
    }
    red[lid] = acc;
    reduce_runs(lid, WG);
    if (lid == 0u) {
        let o = red[0];
        out0[h * D + 4u * c] = o.x;
        out0[h * D + 4u * c + 1u] = o.y;
        out0[h * D + 4u * c + 2u] = o.z;
        out0[h * D + 4u * c + 3u] = o.w;
    }
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

// Norm, Q, K and V rows (weights: [q; k; v], x4: the residual stream, y4: the norm's
// weight, in2: the biases), rotary embedding (in1: its cos and sin), K and V into the caches: LANES threads per
// pair of rows (j, j + D / 2) of one head. out0: q, out1: key cache, out2: value cache.
@compute @workgroup_size(WG)
fn qkv_rope(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let p = row_of(wid, nwg) * (WG / LANES) + lid / LANES;
    let lane = lid % LANES;
    let half = D / 2u;
    let block = p / half;
    let j = p % half;
    let r0 = block * D + j;
    let r1 = r0 + half;
    let early = early_qkv(lane == 0u && block < NH + 2u * NKV, block, j);
    var s = vec4<f32>(0.0);
    if (block < NH + 2u * NKV) {
        s = norm_dot2(r0, r1, lane);
    }
    red[lid] = s;
    reduce_runs(lid, LANES);
    if (lane == 0u && block < NH + 2u * NKV) {
        qkv_normed(block, j, red[lid], early);
    }
}

// The biases (in2) of rows (j, j + D / 2) of Q/K/V block `block` and pair j's cos and sin
// (in1): (bias, bias, cos, sin).
fn qkv_extra(block: u32, j: u32) -> vec4<f32> {
    let r0 = block * D + j;
    return vec4<f32>(in2[r0], in2[r0 + D / 2u], in1[j], in1[D / 2u + j]);
}

// qkv_extra where EARLY loads it before the pair's dot products (`ok`: lane 0 of a pair
// that exists), else 0 (qkv_normed loads it after them).
fn early_qkv(ok: bool, block: u32, j: u32) -> vec4<f32> {
    if (EARLY == 1u && ok) {
        return qkv_extra(block, j);
    }
    return vec4<f32>(0.0);
}

// qkv_store of a pair's sums (their dots and the stream's sum of squares, norm_dot2's), with
// its qkv_extra: `early`'s where EARLY, else loaded now.
fn qkv_normed(block: u32, j: u32, sums: vec4<f32>, early: vec4<f32>) {
    let inv = inv_rms(sums.z);
    var extra = early;
    if (EARLY == 0u) {
        extra = qkv_extra(block, j);
    }
    qkv_store(block, j, sums.x * inv, sums.y * inv, extra);
}

// Rows (j, j + D / 2) of Q/K/V block `block` (a query head, then the key heads, then the
// value heads), normed, plus their biases: query and key rows turned by RoPE, key and value
// rows into the caches at position T - 1 (out0: q, out1: key cache, out2: value cache);
// `extra`: qkv_extra's.
fn qkv_store(block: u32, j: u32, dot0: f32, dot1: f32, extra: vec4<f32>) {
    let half = D / 2u;
    let r0 = block * D + j;
    let r1 = r0 + half;
    let y0 = dot0 + extra.x;
    let y1 = dot1 + extra.y;
    let slot = (T - 1u) * NKV * D;
    if (block < NH) {
        let turned = turn(y0, y1, extra.z, extra.w);
        out0[r0] = turned.x;
        out0[r1] = turned.y;
    } else if (block < NH + NKV) {
        let turned = turn(y0, y1, extra.z, extra.w);
        out1[slot + (block - NH) * D + j] = turned.x;
        out1[slot + (block - NH) * D + j + half] = turned.y;
    } else {
        out2[slot + (block - NH - NKV) * D + j] = y0;
        out2[slot + (block - NH - NKV) * D + j + half] = y1;
    }
}

// Flash-decoding's first half: head wid.y over cache block wid.x (positions AB * wid.x ..).
// Scores: WG / AB threads per position, each its share of the head's dimensions; values:
// thread lid takes dimensions 4 (lid % (D / 4)) .. + 3 over every (WG / (D / 4))-th position.
// Every load of q and K, and the first four of V, is issued before the first barrier, so
// a short block waits for memory about once. x4: q, y4: key cache, z4: value cache.
// out0[2i], out0[2i + 1]: the block's largest score and its sum of exp(score - largest);
// out1[i * D ..]: its values weighted by exp(score - largest), i = head * NB + block.
@compute @workgroup_size(WG)
fn attn_part(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    attn_block(wid, lid);
}

// attn_part with AHEAD_WG workgroups more (rows of the grid past the heads) that load the
// next kernels' weights (load_ahead) while the attention's short chains of loads leave the
// memory idle.
@compute @workgroup_size(WG)
fn attn_part_ahead(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    if (wid.y >= NH) {
        load_ahead((wid.y - NH) * nwg.x + wid.x, lid);
        return;
    }
    attn_block(wid, lid);
}

// attn_part whose last workgroup of a head to finish (by an atomic ticket a head, tickets[h],
// which it sets back to 0 for the next dispatch) combines the head's blocks, normed, into
// out2[h * D ..], so the output projection after it is a plain matrix-vector product
// (o_proj), where attn_out combines every block in each of its workgroups. Each block's
// partial results are written before a storageBarrier (naga: device-scope acquire-release)
// and its ticket taken after; the last reads them after another, and no workgroup of the
// dispatch reads them before, so no cache can hold a stale copy. Its AHEAD_WG workgroups
// past the heads load ahead as attn_part_ahead's (none where 0).
@compute @workgroup_size(WG)
fn attn_part_ticket(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) lid: u32) {
    if (wid.y >= NH) {
        load_ahead((wid.y - NH) * nwg.x + wid.x, lid);
        return;
    }
    attn_block(wid, lid);
    storageBarrier();
    if (lid == 0u) {
        last_block = atomicAdd(&tickets[wid.y], 1u);
    }
    if (workgroupUniformLoad(&last_block) == NB - 1u) {
        storageBarrier();
        combine_head(wid.y, lid);
        if (lid == 0u) {
            atomicStore(&tickets[wid.y], 0u);
        }
    }
}

var<workgroup> last_block: u32;

// Where block b of head h keeps its largest score (and its sum after it). Each head's start
// on a line of its own (MLS: decode_model.ml_stride), so that attn_part_ticket's combine
// of one head never caches a line of another's that is still being written: no SM's L1 is
// kept coherent with another's within a dispatch (the grid-barrier probe, round 5).
fn ml_at(h: u32, b: u32) -> u32 {
    return h * MLS + 2u * b;
}

// Head h's NB blocks (out0: their largest scores and sums, out1: their weighted values)
// combined and normed into out2[h * D ..], a thread a dimension.
fn combine_head(h: u32, lid: u32) {
    for (var i = lid; i < NB; i = i + WG) {
        hw[i] = out0[ml_at(h, i)];
        lw[i] = out0[ml_at(h, i) + 1u];
    }
    workgroupBarrier();
    if (lid < D) {
        var top = -3.0e38;
        for (var b = 0u; b < NB; b = b + 1u) {
            top = max(top, hw[b]);
        }
        var sum = 0.0;
        var o = 0.0;
        for (var b = 0u; b < NB; b = b + 1u) {
            let e = exp(hw[b] - top);
            sum = sum + lw[b] * e;
            o = o + e * out1[(h * NB + b) * D + lid];
        }
        out2[h * D + lid] = o / sum;
    }
}

fn attn_block(wid: vec3<u32>, lid: u32) {
    let b = wid.x;
    let h = wid.y;
    let g = h / (NH / NKV);
    let d4 = D / 4u;
    let split = WG / AB;          // threads per position (a power of two up to D / 4)
    let ks = d4 / split;          // vec4 of q . k per thread
    let p = lid / split;
    let t = b * AB + p;
    let k = (min(t, T - 1u) * NKV + g) * d4 + (lid % split) * ks;
    let q = h * d4 + (lid % split) * ks;
    let dl = lid % d4;
    let pl = lid / d4;
    let runs = WG / d4;           // at most AB
    var vs: array<vec4<f32>, 4>;
    for (var i = 0u; i < min(AB / runs, 4u); i = i + 1u) {
        vs[i] = z4[value_row(b * AB + pl + i * runs, g) + dl];
    }
    var acc = vec4<f32>(0.0);
    for (var d = 0u; d < ks; d = d + 1u) {
        acc = fma(y4[k + d], x4[q + d], acc);
    }
    ps[lid] = total(acc);
    workgroupBarrier();
    var s = -3.0e38;
    if (lid % split == 0u) {
        var dot = 0.0;
        for (var j = 0u; j < split; j = j + 1u) {
            dot = dot + ps[lid + j];
        }
        s = select(-3.0e38, dot / sqrt(f32(D)), t < T);
        redm[p] = s;
    }
    for (var st = AB / 2u; st > 0u; st = st / 2u) {
        workgroupBarrier();
        if (lid < st) {
            redm[lid] = max(redm[lid], redm[lid + st]);
        }
    }
    workgroupBarrier();
    let top = redm[0];
    if (lid % split == 0u) {
        ps[p] = select(0.0, exp(s - top), t < T);
    }
    workgroupBarrier();
    attn_values(b, h, g, lid, vs);
    if (lid == 0u) {
        var sum = 0.0;
        for (var r = 0u; r < runs; r = r + 1u) {
            sum = sum + redm[r];
        }
        out0[ml_at(h, b)] = top;
        out0[ml_at(h, b) + 1u] = sum;
    }
}

// The value cache's offset (in vec4) of position t (past the cache: the last one, which
// ps weighs 0) for key/value head g.
fn value_row(t: u32, g: u32) -> u32 {
    return (min(t, T - 1u) * NKV + g) * (D / 4u);
}

// attn_part's weighted values (vs: the thread's first four values, loaded early): out1
// gets their sums over the block, redm[0 .. WG / (D / 4)) the sums of ps in parts.
fn attn_values(b: u32, h: u32, g: u32, lid: u32, vs: array<vec4<f32>, 4>) {
    let d4 = D / 4u;
    let dl = lid % d4;
    let pl = lid / d4;
    let runs = WG / d4;
    var o = vec4<f32>(0.0);
    var e = 0.0;
    for (var i = 0u; i < AB / runs; i = i + 1u) {
        var v = vec4<f32>(0.0);
        if (i < 4u) {
            v = vs[i];
        } else {
            v = z4[value_row(b * AB + pl + i * runs, g) + dl];
        }
        let w = ps[pl + i * runs];
        o = fma(vec4<f32>(w), v, o);
        e = e + w;
    }
    red[lid] = o;
    if (dl == 0u) {
        redm[pl] = e;
    }
    workgroupBarrier();
    if (lid < d4) {
        var sum = vec4<f32>(0.0);
        for (var r = 0u; r < runs; r = r + 1u) {
            sum = sum + red[lid + r * d4];
        }
        let at = (h * NB + b) * D + 4u * lid;
        out1[at] = sum.x;
        out1[at + 1u] = sum.y;
        out1[at + 2u] = sum.z;
        out1[at + 3u] = sum.w;
    }
}

// attn_part for blocks of WG positions (AB = WG, long caches), a thread per position for
// the scores: on the H100 at a cache of 2048 attn_part's split form took the fused 0.5B
// token from 1.34 to 1.54 ms (results/round6-h100-decode), this one did not. x4: q, y4: key cache, z4: value cache. out0[2i],
// out0[2i + 1]: the block's largest score and its sum of exp(score - largest); out1[i * D
// ..]: its values weighted by exp(score - largest), i = head * NB + block.
@compute @workgroup_size(WG)
fn attn_part_wide(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = wid.x;
    let h = wid.y;
    let g = h / (NH / NKV);
    let d4 = D / 4u;
    if (lid < d4) {
        qs[lid] = x4[h * d4 + lid] / sqrt(f32(D));
    }
    workgroupBarrier();
    let t = b * WG + lid;
    let k = (min(t, T - 1u) * NKV + g) * d4;
    var acc = vec4<f32>(0.0);
    for (var d = 0u; d < d4; d = d + 4u) {
        let k0 = y4[k + d];
        let k1 = y4[k + d + 1u];
        let k2 = y4[k + d + 2u];
        let k3 = y4[k + d + 3u];
        acc = fma(k0, qs[d], fma(k1, qs[d + 1u], acc));
        acc = fma(k2, qs[d + 2u], fma(k3, qs[d + 3u], acc));
    }
    let s = select(-3.0e38, total(acc), t < T);
    redm[lid] = s;
    reduce_max(lid);
    let top = redm[0];
    var e = 0.0;
    if (t < T) {
        e = exp(s - top);
    }
    ps[lid] = e;
    workgroupBarrier();
    attn_values_wide(b, h, g, lid);
    if (lid == 0u) {
        out0[ml_at(h, b)] = top;
        out0[ml_at(h, b) + 1u] = redm[0];
    }
}

// attn_part_wide's weighted values: thread lid takes dimensions 4 (lid % (D / 4)) .. + 3 over
// every (WG / (D / 4))-th position of the block; out1 gets their sums, redm[0] the sum of ps.
fn attn_values_wide(b: u32, h: u32, g: u32, lid: u32) {
    let d4 = D / 4u;
    let dl = lid % d4;
    let pl = lid / d4;
    let runs = WG / d4;
    let end = T - 1u;
    var o = vec4<f32>(0.0);
    var e = 0.0;
    for (var i = 0u; i < d4; i = i + 4u) {  // ps is 0 past the cache: those rows weigh 0
        let p = pl + i * runs;
        let v0 = z4[(min(b * WG + p, end) * NKV + g) * d4 + dl];
        let v1 = z4[(min(b * WG + p + runs, end) * NKV + g) * d4 + dl];
        let v2 = z4[(min(b * WG + p + 2u * runs, end) * NKV + g) * d4 + dl];
        let v3 = z4[(min(b * WG + p + 3u * runs, end) * NKV + g) * d4 + dl];
        let e0 = ps[p];
        let e1 = ps[p + runs];
        let e2 = ps[p + 2u * runs];
        let e3 = ps[p + 3u * runs];
        o = fma(vec4<f32>(e0), v0, fma(vec4<f32>(e1), v1, o));
        o = fma(vec4<f32>(e2), v2, fma(vec4<f32>(e3), v3, o));
        e = e + e0 + e1 + e2 + e3;
    }
    red[lid] = o;
    redm[lid] = e;
    workgroupBarrier();
    for (var st = runs / 2u; st > 0u; st = st / 2u) {
        if (pl < st) {
            red[lid] = red[lid] + red[lid + st * d4];
            redm[lid] = redm[lid] + redm[lid + st * d4];
        }
        workgroupBarrier();
    }
    if (pl == 0u) {
        let at = (h * NB + b) * D + 4u * dl;
        out1[at] = red[lid].x;
        out1[at + 1u] = red[lid].y;
        out1[at + 2u] = red[lid].z;
        out1[at + 3u] = red[lid].w;
    }
}

// Flash-decoding's second half and the output projection with its residual add: every
// workgroup combines the blocks (in0: attn_part's out0, z4: its out1) into the heads'
// outputs in workgroup memory, then out0[r] += w[r, :] . o for its rows. A lane's first
// weights are loaded before the combine, so their wait overlaps it.
@compute @workgroup_size(WG)
fn attn_out(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    attn_out_rows(row_of(wid, nwg), lid);
}

// attn_out with AHEAD_WG workgroups more, past its rows', that load `ahead` (load_ahead).
@compute @workgroup_size(WG)
fn attn_out_ahead(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    if (!ahead_role(row_of(wid, nwg), lid)) {
        attn_out_rows(row_of(wid, nwg), lid);
    }
}

fn attn_out_rows(v: u32, lid: u32) {
    let r = v * (WG / LANES) + lid / LANES;
    let s = attn_out_dot(r, lid);
    if (lid % LANES == 0u && r < H) {
        out0[r] = out0[r] + s;
    }
}

// attn_out's combine and row r's dot product with it, whole in the row's first lane.
fn attn_out_dot(r: u32, lid: u32) -> f32 {
    let lane = lid % LANES;
    let cols4 = NH * (D / 4u);
    let first = first_batch(min(r, H - 1u), lane, cols4);
    combine(lid);
    var s = 0.0;
    if (r < H) {
        s = dot_share_os(r, lane, cols4, first);
    }
    red[lid] = vec4<f32>(s, 0.0, 0.0, 0.0);
    reduce_runs(lid, LANES);
    return red[lid].x;
}

// attn_out's first part: each block's weight exp(m_b - m) / sum_b' l_b' exp(m_b' - m) in hw
// (every block's m and l loaded at once), then each head's output in os, four blocks a
// batch (a block past the last reads the last, weighted 0).
fn combine(lid: u32) {
    for (var i = lid; i < NH * NB; i = i + WG) {
        hw[i] = in0[ml_at(i / NB, i % NB)];
        lw[i] = in0[ml_at(i / NB, i % NB) + 1u];
    }
    workgroupBarrier();
    if (lid < NH) {
        var top = -3.0e38;
        for (var b = 0u; b < NB; b = b + 1u) {
            top = max(top, hw[lid * NB + b]);
        }
        var sum = 0.0;
        for (var b = 0u; b < NB; b = b + 1u) {
            sum = sum + lw[lid * NB + b] * exp(hw[lid * NB + b] - top);
        }
        for (var b = 0u; b < NB; b = b + 1u) {
            hw[lid * NB + b] = exp(hw[lid * NB + b] - top) / sum;
        }
    }
    workgroupBarrier();
    let d4 = D / 4u;
    for (var c = lid; c < NH * d4; c = c + WG) {
        let at = (c / d4) * NB;
        let d = c % d4;
        var o = vec4<f32>(0.0);
        for (var b = 0u; b < NB; b = b + 4u) {
            let b1 = min(b + 1u, NB - 1u);
            let b2 = min(b + 2u, NB - 1u);
            let b3 = min(b + 3u, NB - 1u);
            let p0 = z4[(at + b) * d4 + d];
            let p1 = z4[(at + b1) * d4 + d];
            let p2 = z4[(at + b2) * d4 + d];
            let p3 = z4[(at + b3) * d4 + d];
            o = fma(vec4<f32>(hw[at + b]), p0, o);
            o = fma(vec4<f32>(select(0.0, hw[at + b1], b + 1u < NB)), p1, o);
            o = fma(vec4<f32>(select(0.0, hw[at + b2], b + 2u < NB)), p2, o);
            o = fma(vec4<f32>(select(0.0, hw[at + b3], b + 3u < NB)), p3, o);
        }
        os[c] = o;
    }
    workgroupBarrier();
}

// ---- fused, the attention a workgroup a query head (decode_choices.Kernels.attention) ----

// attn_head: positions at most (its scores and weights in workgroup memory; a longer cache
// takes attn_part's blocks).
const MAX_T: u32 = 1024u;
override SPLIT: u32 = 1;      // attn_head: threads per position of the scores, a power of
                              // two up to D / 4
override DS: u32 = 1;         // attn_head: workgroups a head, each D / DS of its dimensions
                              // (a power of two up to D / 4)
var<workgroup> sc: array<f32, MAX_T>;
var<workgroup> part16: array<f32, 16>;

// The sum of v over the workgroup (with `largest`: the largest), in every thread: WG / 16
// values in each of the first 16 threads, then those 16 in every thread: two barriers,
// where reduce_sum's tree takes log2(WG). WG a multiple of 16.
fn group_fold(v: f32, lid: u32, largest: bool) -> f32 {
    redm[lid] = v;
    workgroupBarrier();
    let n = WG / 16u;
    if (lid < 16u) {
        var s = redm[lid * n];
        for (var j = 1u; j < n; j = j + 1u) {
            s = select(s + redm[lid * n + j], max(s, redm[lid * n + j]), largest);
        }
        part16[lid] = s;
    }
    workgroupBarrier();
    var s = part16[0];
    for (var j = 1u; j < 16u; j = j + 1u) {
        s = select(s + part16[j], max(s, part16[j]), largest);
    }
    return s;
}

// attn_head's values of positions t, t + R, t + 2R, t + 3R (R = `runs`; past the cache:
// the last position, which it weighs 0), dimensions 4 c .. 4 c + 3 of key/value head g.
fn head_values(t: u32, runs: u32, c: u32, g: u32) -> array<vec4<f32>, 4> {
    return array<vec4<f32>, 4>(z4[value_row(t, g) + c], z4[value_row(t + runs, g) + c],
                               z4[value_row(t + 2u * runs, g) + c],
                               z4[value_row(t + 3u * runs, g) + c]);
}

// The attention of query head wid.x over all T positions, normed: out0[h * D ..] =
// softmax(q_h . K / sqrt(D)) V, so the output projection after it is a plain matrix-vector
// product (o_proj), where attn_part's blocks are combined by every workgroup of attn_out.
// DS workgroups a head (wid.y), each the whole softmax (the scores again: the keys come from
// the cache) and D / DS of the values' dimensions, so that more of the GPU's cores read and
// each thread has fewer positions: at DS = D / 16 and a cache of 128, one batch of four,
// loaded before the scores (head_values) so that its wait overlaps theirs (q is read
// straight from x4, so no barrier comes before the keys' loads either). Scores SPLIT
// threads a position, WG / SPLIT positions a pass, into sc; their largest and the sum of
// exp by group_fold; values four positions a batch. x4: q, y4: key cache, z4: value cache.
// T <= MAX_T.
@compute @workgroup_size(WG)
fn attn_head(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wid.x;
    let g = h / (NH / NKV);
    let d4 = D / 4u;
    let ks = d4 / SPLIT;
    let share = (lid % SPLIT) * ks;
    let cols = d4 / DS;           // vec4 of the values' dimensions this workgroup sums
    let dl = lid % cols;
    let pl = lid / cols;
    let runs = WG / cols;
    let c0 = wid.y * cols + dl;
    var v = head_values(pl, runs, c0, g);
    for (var c = 0u; c < T; c = c + WG / SPLIT) {
        let t = c + lid / SPLIT;
        let k = (min(t, T - 1u) * NKV + g) * d4 + share;
        var acc = vec4<f32>(0.0);
        for (var d = 0u; d < ks; d = d + 1u) {
            acc = fma(y4[k + d], x4[h * d4 + share + d], acc);
        }
        if (SPLIT == 1u) {
            if (t < T) {
                sc[t] = total(acc) / sqrt(f32(D));
            }
        } else {
            ps[lid] = total(acc) / sqrt(f32(D));
            workgroupBarrier();
            if (lid % SPLIT == 0u && t < T) {
                var s = 0.0;
                for (var j = 0u; j < SPLIT; j = j + 1u) {
                    s = s + ps[lid + j];
                }
                sc[t] = s;
            }
            workgroupBarrier();
        }
    }
    workgroupBarrier();
    var m = -3.0e38;
    for (var t = lid; t < T; t = t + WG) {
        m = max(m, sc[t]);
    }
    let top = group_fold(m, lid, true);
    var e = 0.0;
    for (var t = lid; t < T; t = t + WG) {
        sc[t] = exp(sc[t] - top);
        e = e + sc[t];
    }
    let sum = group_fold(e, lid, false);  // its barriers also publish sc
    let end = T - 1u;
    var o = vec4<f32>(0.0);
    for (var t = pl; t < T; t = t + 4u * runs) {
        if (t != pl) {
            v = head_values(t, runs, c0, g);
        }
        o = fma(vec4<f32>(sc[t]), v[0], o);
        o = fma(vec4<f32>(select(0.0, sc[min(t + runs, end)], t + runs < T)), v[1], o);
        o = fma(vec4<f32>(select(0.0, sc[min(t + 2u * runs, end)], t + 2u * runs < T)), v[2], o);
        o = fma(vec4<f32>(select(0.0, sc[min(t + 3u * runs, end)], t + 3u * runs < T)), v[3], o);
    }
    red[lid] = o;
    workgroupBarrier();
    for (var st = runs / 2u; st > 0u; st = st / 2u) {
        if (pl < st) {
            red[lid] = red[lid] + red[lid + st * cols];
        }
        workgroupBarrier();
    }
    if (pl == 0u) {
        let o4 = red[lid] / sum;
        let at = h * D + 4u * c0;
        out0[at] = o4.x;
        out0[at + 1u] = o4.y;
        out0[at + 2u] = o4.z;
        out0[at + 3u] = o4.w;
    }
}

// out0[r] += w[r, :] . x4: a projection and its residual add (the MLP's down projection).
@compute @workgroup_size(WG)
fn matvec_add(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    project_add(wid, nwg, lid);
}

// matvec_add with AHEAD_WG workgroups more, past its rows', that load `ahead` (load_ahead).
@compute @workgroup_size(WG)
fn matvec_add_ahead(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) lid: u32) {
    if (!ahead_role(row_of(wid, nwg), lid)) {
        project_add(wid, nwg, lid);
    }
}

// ---- loads ahead (decode_choices.AHEADS) --------------------------------------------------

// Whether workgroup `v` (flat) of a ROWS-row matrix-vector kernel is one of the AHEAD_WG
// past its rows' workgroups; those load `ahead` (load_ahead) and do nothing else.
fn ahead_role(v: u32, lid: u32) -> bool {
    let own = (ROWS + WG / LANES - 1u) / (WG / LANES);
    if (v < own) {
        return false;
    }
    load_ahead(v - own, lid);
    return true;
}

// Workgroup i of AHEAD_WG reads its share of `ahead`'s two ranges (AHEAD_N vec4 each, from
// AHEAD_AT and AHEAD_AT + AHEAD_GAP), eight loads in flight a thread, so that they sit in
// the L2 cache when the kernel they belong to runs: their sum is written only where it is
// 3e38, which weights never sum to but no compiler can rule out, so no load is left out.
fn load_ahead(i: u32, lid: u32) {
    let threads = AHEAD_WG * WG;
    let last = AHEAD_N - 1u;
    var s = vec4<f32>(0.0);
    if (i < AHEAD_WG) {
        for (var c = i * WG + lid; c < AHEAD_N; c = c + 4u * threads) {
            let c1 = AHEAD_AT + min(c + threads, last);
            let c2 = AHEAD_AT + min(c + 2u * threads, last);
            let c3 = AHEAD_AT + min(c + 3u * threads, last);
            let a0 = vec4<f32>(ahead[AHEAD_AT + c]);
            let a1 = vec4<f32>(ahead[c1]);
            let a2 = vec4<f32>(ahead[c2]);
            let a3 = vec4<f32>(ahead[c3]);
            let b0 = vec4<f32>(ahead[AHEAD_AT + AHEAD_GAP + c]);
            let b1 = vec4<f32>(ahead[AHEAD_GAP + c1]);
            let b2 = vec4<f32>(ahead[AHEAD_GAP + c2]);
            let b3 = vec4<f32>(ahead[AHEAD_GAP + c3]);
            s = s + (a0 + a1) + (a2 + a3) + (b0 + b1) + (b2 + b3);
        }
    }
    if (total(s) == 3.0e38) {
        out0[0] = total(s);
    }
}

// matvec_add for the attention's output projection after attn_head (its own name, so that
// timestamps tell it from the down projection).
@compute @workgroup_size(WG)
fn o_proj(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    project_add(wid, nwg, lid);
}

// o_proj with AHEAD_WG workgroups more, past its rows', that load `ahead` (load_ahead).
@compute @workgroup_size(WG)
fn o_proj_ahead(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    if (!ahead_role(row_of(wid, nwg), lid)) {
        project_add(wid, nwg, lid);
    }
}

fn project_add(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) {
    let r = row_of(wid, nwg) * (WG / LANES) + lid / LANES;
    let lane = lid % LANES;
    let early = early_row(lane == 0u && r < ROWS, r);
    var s = 0.0;
    if (r < ROWS) {
        s = dot_share(r, lane, COLS / 4u);
    }
    red[lid] = vec4<f32>(s, 0.0, 0.0, 0.0);
    reduce_runs(lid, LANES);
    if (lane == 0u && r < ROWS) {
        out0[r] = then_row(r, early) + red[lid].x;
    }
}

// out0[r] = silu(gate_r . n) * (up_r . n), n the normed residual stream (x4) with the
// norm's weight y4; weights: gate rows then up rows. LANES threads per row r < F.
@compute @workgroup_size(WG)
fn gate_up(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let r = row_of(wid, nwg) * (WG / LANES) + lid / LANES;
    let lane = lid % LANES;
    var s = vec4<f32>(0.0);
    if (r < F) {
        s = norm_dot2(r, F + r, lane);
    }
    red[lid] = s;
    reduce_runs(lid, LANES);
    if (lane == 0u && r < F) {
        swiglu_out(r, red[lid]);
    }
}

// out0[r] = silu(gate) * up from row pair r's sums (norm_dot2's).
fn swiglu_out(r: u32, sums: vec4<f32>) {
    let inv = inv_rms(sums.z);
    let g = sums.x * inv;
    out0[r] = g / (1.0 + exp(-g)) * (sums.y * inv);
}

// out0[BASE + r] = w[r, :] . (x4 / rms(x4) * y4): the final norm folded into the LM head
// (BASE: the chunk's first row, all chunks writing one logits buffer).
@compute @workgroup_size(WG)
fn norm_matvec(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let r = row_of(wid, nwg) * (WG / LANES) + lid / LANES;
    let lane = lid % LANES;
    var s = vec4<f32>(0.0);
    if (r < ROWS) {
        s = norm_dot(r, lane);
    }
    red[lid] = s;
    reduce_runs(lid, LANES);
    if (lane == 0u && r < ROWS) {
        out0[BASE + r] = red[lid].x * inv_rms(red[lid].z);
    }
}

// os = x4 * y4 (the residual stream times the norm's weight, not yet divided by its RMS)
// in workgroup memory, made once for the whole workgroup; returns 1 / rms(x4).
fn normed_shared(lid: u32) -> f32 {
    var q = 0.0;
    for (var c = lid; c < H / 4u; c = c + WG) {
        let x = x4[c];
        os[c] = x * y4[c];
        q = q + dot(x, x);
    }
    redm[lid] = q;
    reduce_sum(lid);
    return inv_rms(redm[0]);
}

// Column c (a vec4) of the four weight rows that start at `rows` (offsets in vec4).
fn rows_at(rows: vec4<u32>, c: u32) -> mat4x4<f32> {
    return mat4x4<f32>(vec4<f32>(weights[rows.x + c]), vec4<f32>(weights[rows.y + c]),
                       vec4<f32>(weights[rows.z + c]), vec4<f32>(weights[rows.w + c]));
}

// A lane's shares of the four rows at `rows` (H columns) against os: two columns a batch,
// eight loads issued together; the first batch's weights given (loaded before os was made).
fn dot4_shared(rows: vec4<u32>, lane: u32, first: mat4x4<f32>, second: mat4x4<f32>) -> vec4<f32> {
    let h4 = H / 4u;
    var a = vec4<f32>(0.0);
    var w0 = first;
    var w1 = second;
    for (var c = lane; c < h4; c = c + 2u * LANES) {
        let c1 = c + LANES;
        if (c != lane) {
            w0 = rows_at(rows, c);
            w1 = rows_at(rows, min(c1, h4 - 1u));
        }
        a = a + os[c] * w0;
        a = a + select(vec4<f32>(0.0), os[min(c1, h4 - 1u)], c1 < h4) * w1;
    }
    return a;
}

// ---- fused, the LM head four rows a lane group (its normed vector made once per workgroup) --

// norm_matvec with four rows a lane group (LANES threads), WG / LANES groups a workgroup:
// the normed vector is made once per workgroup (norm_matvec reads x4 and y4 again for each
// row, a workgroup a row: 152k workgroups for Qwen2.5's head), and the first batch of
// weights is loaded before it. Rows past ROWS read the last row and write nothing.
@compute @workgroup_size(WG)
fn norm_matvec4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let r0 = 4u * (row_of(wid, nwg) * (WG / LANES) + lid / LANES);
    let lane = lid % LANES;
    let h4 = H / 4u;
    let last = ROWS - 1u;
    let rows = vec4<u32>(min(r0, last), min(r0 + 1u, last), min(r0 + 2u, last),
                         min(r0 + 3u, last)) * h4;
    let first = rows_at(rows, lane);
    let second = rows_at(rows, min(lane + LANES, h4 - 1u));
    let inv = normed_shared(lid);
    red[lid] = dot4_shared(rows, lane, first, second);
    reduce_runs(lid, LANES);
    if (lane == 0u) {
        let t = red[lid] * inv;
        for (var i = 0u; i < 4u; i = i + 1u) {
            if (r0 + i < ROWS) {
                out0[BASE + r0 + i] = t[i];
            }
        }
    }
}

// ---- a grid-wide barrier (decode_kernels.py: what one costs against a kernel boundary) -----

override ROUNDS: u32 = 0;     // grid_sync: barriers a dispatch
override SPIN: u32 = 4096;    // grid_barrier: loads of the counter a workgroup makes at most
                              // before it gives up (a workgroup not resident: counted)
override BARRIERS: u32 = 1;   // grid_sync: 0 leaves its barriers out (a dispatch a round: the
                              // boundary between dispatches is the barrier)

// No workgroup of the dispatch's `workgroups` (all resident at once) passes until every one
// has reached it: tickets[0] only grows, each workgroup adds 1 and waits until it reaches
// the next multiple of `workgroups` past its ticket (so it needs no reset between
// dispatches of one count); a storageBarrier (naga: device-scope acquire-release) before,
// for the workgroup's writes, and after, for the others'. A workgroup that waits SPIN loads
// gives up and adds 1 to tickets[1] (a grid whose workgroups are not all resident would
// otherwise never finish).
fn grid_barrier(lid: u32, workgroups: u32) {
    if (BARRIERS == 0u) {
        return;
    }
    storageBarrier();
    if (lid == 0u) {
        let ticket = atomicAdd(&tickets[0], 1u);
        let goal = (ticket / workgroups + 1u) * workgroups;
        var tries = 0u;
        loop {
            if (atomicLoad(&tickets[0]) >= goal) {
                break;
            }
            tries = tries + 1u;
            if (tries >= SPIN) {
                atomicAdd(&tickets[1], 1u);
                break;
            }
        }
    }
    storageBarrier();
}

// ROUNDS grid barriers, each after a value written for the next workgroup to read after it:
// at an address written once a dispatch (out0[k * workgroups + i]: no cache can hold it
// before) and at one written every round (out1[i]: a cache may hold the last round's); each
// value read that is not the round's adds 1 to tickets[2] and tickets[3].
@compute @workgroup_size(WG)
fn grid_sync(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let n = nwg.x * nwg.y;
    let i = row_of(wid, nwg);
    let next = (i + 1u) % n;
    for (var k = 0u; k < ROUNDS; k = k + 1u) {
        if (lid == 0u) {
            out0[k * n + i] = f32(k + 1u);
            out1[i] = f32(k + 1u);
        }
        grid_barrier(lid, n);
        if (lid == 0u) {
            if (out0[k * n + next] != f32(k + 1u)) {
                atomicAdd(&tickets[2], 1u);
            }
            if (out1[next] != f32(k + 1u)) {
                atomicAdd(&tickets[3], 1u);
            }
        }
        grid_barrier(lid, n);  // no round's write before every workgroup read the last's
    }
}

// ---- fused, the MLP in one dispatch of resident workgroups (decode_choices.Kernels.grid) ----

override LANES2: u32 = 32;    // mlp_grid: threads a row of down (LANES: of gate/up)
override GU_WG: u32 = 1;      // mlp_grid: gate/up's workgroups (gate_up's grid)
override DOWN_WG: u32 = 1;    // mlp_grid: down's workgroups (matvec_add's grid)

// gate_up then matvec_add in one dispatch whose workgroups (all resident at once: a grid
// barrier between the two, grid_barrier on tickets[0]) each take every n-th of gate_up's
// workgroups (GU_WG), then of down's (DOWN_WG): out0 = silu(gate) * up as gate_up's, then
// out1[r] = x4[r] + w_r . out0 with down's weights at `ahead` (binding 7 holds gate/up's).
// The residual stream goes to out1, not back to x4 (read-only here): the engine alternates
// two streams from layer to layer. out0 is written before the barrier and read only after
// it, so no cache holds a copy from before. Sums through workgroup memory.
@compute @workgroup_size(WG)
fn mlp_grid(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let n = nwg.x * nwg.y;
    for (var v = row_of(wid, nwg); v < GU_WG; v = v + n) {
        let r = v * (WG / LANES) + lid / LANES;
        var s = vec4<f32>(0.0);
        if (r < F) {
            s = norm_dot2(r, F + r, lid % LANES);
        }
        red[lid] = s;
        reduce_runs(lid, LANES);
        if (lid % LANES == 0u && r < F) {
            swiglu_out(r, red[lid]);
        }
        workgroupBarrier();
    }
    grid_barrier(lid, n);
    for (var v = row_of(wid, nwg); v < DOWN_WG; v = v + n) {
        let r = v * (WG / LANES2) + lid / LANES2;
        var s = 0.0;
        if (r < H) {
            s = down_share(r, lid % LANES2);
        }
        red[lid] = vec4<f32>(s, 0.0, 0.0, 0.0);
        reduce_runs(lid, LANES2);
        if (lid % LANES2 == 0u && r < H) {
            out1[r] = x4[r / 4u][r % 4u] + red[lid].x;
        }
        workgroupBarrier();
    }
}

// dot_share for mlp_grid's down: row `row` of `ahead` (F columns) against out0, a lane's
// share (lane, lane + LANES2, ...), four vec4 columns a batch.
fn down_share(row: u32, lane: u32) -> f32 {
    let cols4 = F / 4u;
    let base = row * cols4;
    let last = cols4 - 1u;
    var a = vec4<f32>(0.0);
    var b = vec4<f32>(0.0);
    for (var c = lane; c < cols4; c = c + 4u * LANES2) {
        let c1 = min(c + LANES2, last);
        let c2 = min(c + 2u * LANES2, last);
        let c3 = min(c + 3u * LANES2, last);
        let w0 = vec4<f32>(ahead[base + c]);
        let w1 = vec4<f32>(ahead[base + c1]);
        let w2 = vec4<f32>(ahead[base + c2]);
        let w3 = vec4<f32>(ahead[base + c3]);
        a = fma(w0, a_at(c), a);
        b = fma(w1, select(vec4<f32>(0.0), a_at(c1), c + LANES2 < cols4), b);
        a = fma(w2, select(vec4<f32>(0.0), a_at(c2), c + 2u * LANES2 < cols4), a);
        b = fma(w3, select(vec4<f32>(0.0), a_at(c3), c + 3u * LANES2 < cols4), b);
    }
    return total(a + b);
}

fn a_at(c: u32) -> vec4<f32> {
    return vec4<f32>(out0[4u * c], out0[4u * c + 1u], out0[4u * c + 2u], out0[4u * c + 3u]);
}

// The memory floor measured (workloads/read_floor.py): stream_fill gives every f32 of out0
// a hashed value in [0, 1) (no zero pages that a memory could compress); stream_read reads
// x4 once, each thread ROWS vec4, four loads in flight, and writes only where the sum is
// below zero (never: the reads cannot be left out). BLOCKED = 0: a thread's vec4 lie a
// stride of all threads apart (a grid-stride loop); 1: each workgroup reads one contiguous
// span of WG * ROWS vec4, as a matrix-vector kernel reads its rows. ROWS: a multiple of 4.
override BLOCKED: u32 = 1;

@compute @workgroup_size(WG)
fn stream_fill(@builtin(global_invocation_id) gid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    if (i < arrayLength(&out0)) {
        out0[i] = f32((i * 2654435761u) >> 8u) / 16777216.0;
    }
}

fn stream_at(i: u32, lid: u32, r: u32, threads: u32) -> u32 {
    if (BLOCKED == 1u) {
        return (i - lid) * ROWS + r * WG + lid;
    }
    return i + r * threads;
}

@compute @workgroup_size(WG)
fn stream_read(@builtin(global_invocation_id) gid: vec3<u32>,
               @builtin(local_invocation_index) lid: u32,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let threads = nwg.x * nwg.y * WG;
    let i = gid.x + gid.y * nwg.x * WG;
    var a = vec4<f32>(0.0);
    var b = vec4<f32>(0.0);
    for (var r = 0u; r < ROWS; r = r + 4u) {
        let w0 = x4[stream_at(i, lid, r, threads)];
        let w1 = x4[stream_at(i, lid, r + 1u, threads)];
        let w2 = x4[stream_at(i, lid, r + 2u, threads)];
        let w3 = x4[stream_at(i, lid, r + 3u, threads)];
        a = a + w0 + w2;
        b = b + w1 + w3;
    }
    let s = total(a + b);
    if (s < 0.0) {
        out1[0] = s;
    }
}
