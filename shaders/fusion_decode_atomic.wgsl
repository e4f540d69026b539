// gpuoverhead: appended to fusion_decode.wgsl where the device has shader-float32-atomic
// (wgpu-native's native feature; WebGPU has no float atomics): kernels that each sum over
// rows the workgroups share out, so each adds its rows' share into the residual stream with
// atomicAdd (in no fixed order: the sums' last bits vary from run to run).
// mlp_atomic: the fused step's MLP in one dispatch where the split MLP (gate_up, then
// matvec_add) takes two. It reads one stream for its norm and adds into another: a copy of
// it that attn_out_copy leaves, or (ADDX) a zeroed one that its first workgroup adds the
// stream into. attn_wo: the attention and the output projection in one dispatch where
// attn_part and attn_out take two, a workgroup per head and RC output rows, each working
// out its head's attention whole (no flash-decoding split: RC / D of the head's rows share
// it) and adding its head's share of its rows.
@group(0) @binding(12) var<storage, read_write> xa: array<atomic<f32>>;
@group(0) @binding(13) var<storage, read> weights2: array<vec4<W>>;

override RC: u32 = 64;   // attn_wo: output rows a workgroup (H a multiple of it; RC D / (4 WG)
                         // a multiple of 4 up to 8)
override ZERO: u32 = 0;  // attn_wo: 1, also zero out1 (where the atomic MLP adds next)
override ADDX: u32 = 0;  // mlp_atomic: 1, its first workgroup adds x4 too (into a zeroed xa)

// The MLP's activations of a workgroup's rows (2 WG / LANES of them, at most 64).
var<workgroup> acts: array<vec4<f32>, 16>;

// Workgroup i takes the MLP's rows m = 2 (WG / LANES) i ..: each lane group (LANES
// threads) two of them, silu(gate_m . n) * (up_m . n) with n = x4 normed by y4 (the
// weights: gate rows then up rows), then every thread whole rows r of the down projection
// (weights2: H rows of F), wdown[r, m ..] . those, added into xa[r].
@compute @workgroup_size(WG)
fn mlp_atomic(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let rows_wg = 2u * (WG / LANES);
    let m0 = rows_wg * row_of(wid, nwg);
    let m = m0 + 2u * (lid / LANES);
    let a = swiglu2(m, lid);
    if (lid % LANES == 0u) {
        let j = m - m0;
        acts[j / 4u][j % 4u] = a.x;
        acts[j / 4u][j % 4u + 1u] = a.y;
    }
    workgroupBarrier();
    for (var r = lid; r < H; r = r + WG) {
        let base = r * (F / 4u) + m0 / 4u;
        var d = 0.0;
        for (var q = 0u; q < rows_wg / 4u; q = q + 1u) {
            d = d + dot(vec4<f32>(weights2[base + q]), acts[q]);
        }
        atomicAdd(&xa[r], d + select(0.0, x4[r / 4u][r % 4u], ADDX == 1u && m0 == 0u));
    }
}

// attn_wo's head output, softmax(q k / sqrt(D)) v over the T positions.
var<workgroup> oh: array<vec4<f32>, MAX_D4>;

// Head h's attention over the T positions into oh, the whole workgroup: blocks of WG
// positions, a thread a position for the scores, its values as attn_values_wide shares them
// (thread lid: dimensions 4 (lid % (D / 4)) .. + 3 over every (WG / (D / 4))-th position),
// an online softmax across blocks. x4: q, y4: the key cache, z4: the value cache.
fn head_attention(h: u32, lid: u32) {
    let g = h / (NH / NKV);
    let d4 = D / 4u;
    let dl = lid % d4;
    let pl = lid / d4;
    let runs = WG / d4;
    if (lid < d4) {
        qs[lid] = x4[h * d4 + lid] / sqrt(f32(D));
    }
    var top = -3.0e38;
    var sum = 0.0;
    var o = vec4<f32>(0.0);
    for (var b = 0u; b < T; b = b + WG) {
        var vs: array<vec4<f32>, 4>;  // the first values, loaded before the scores' wait
        for (var i = 0u; i < 4u; i = i + 1u) {
            vs[i] = z4[value_row(b + pl + i * runs, g) + dl];
        }
        workgroupBarrier();  // qs made; the last block's red and redm read
        let t = b + lid;
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
        let m = max(top, redm[0]);
        ps[lid] = select(0.0, exp(s - m), t < T);
        workgroupBarrier();
        var ob = vec4<f32>(0.0);
        var e = 0.0;
        for (var i = 0u; i < d4; i = i + 1u) {  // WG / runs positions; ps is 0 past T
            var v = vec4<f32>(0.0);
            if (i < 4u) {
                v = vs[i];
            } else {
                v = z4[value_row(b + pl + i * runs, g) + dl];
            }
            let w = ps[pl + i * runs];
            ob = fma(vec4<f32>(w), v, ob);
            e = e + w;
        }
        red[lid] = ob;
        redm[lid] = e;
        workgroupBarrier();
        for (var st = runs / 2u; st > 0u; st = st / 2u) {
            if (pl < st) {
                red[lid] = red[lid] + red[lid + st * d4];
                redm[lid] = redm[lid] + redm[lid + st * d4];
            }
            workgroupBarrier();
        }
        let scale = exp(top - m);
        o = o * scale + red[dl];
        sum = sum * scale + redm[dl];
        top = m;
    }
    if (lid < d4) {
        oh[lid] = o / sum;
    }
    workgroupBarrier();
}

// The attention of head wid.y and the output projection of rows wid.x * RC .. + RC - 1
// (weights: wo, H rows of NH D) against it, added into xa (the residual stream): thread
// lid takes columns 4 (lid % (D / 4)) .. + 3 of the head's of every (WG / (D / 4))-th row,
// their weights loaded before the attention. With ZERO, the head-0 workgroups also zero
// their rows of out1, the stream the atomic MLP adds into after it (ADDX).
@compute @workgroup_size(WG)
fn attn_wo(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wid.y;
    let d4 = D / 4u;
    let slots = WG / d4;
    let lane = lid % d4;
    let r0 = wid.x * RC + lid / d4;
    var w: array<vec4<f32>, 8>;
    for (var i = 0u; i < RC / slots; i = i + 1u) {
        w[i] = vec4<f32>(weights[(r0 + i * slots) * (NH * d4) + h * d4 + lane]);
    }
    head_attention(h, lid);
    let o = oh[lane];
    for (var i = 0u; i < RC / slots; i = i + 4u) {
        red[lid] = vec4<f32>(dot(w[i], o), dot(w[i + 1u], o), dot(w[i + 2u], o),
                             dot(w[i + 3u], o));
        reduce_runs(lid, d4);
        if (lane == 0u) {
            for (var j = 0u; j < 4u; j = j + 1u) {
                atomicAdd(&xa[r0 + (i + j) * slots], red[lid][j]);
            }
        }
    }
    if (ZERO == 1u && h == 0u) {
        for (var r = lid; r < RC; r = r + WG) {
            out1[wid.x * RC + r] = 0.0;
        }
    }
}
