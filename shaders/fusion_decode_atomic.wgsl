// gpuoverhead: appended to fusion_decode.wgsl where the device has shader-float32-atomic
// (wgpu-native's native feature; WebGPU has no float atomics): the fused step's MLP in one
// dispatch, 4 a layer where the split MLP (gate_up, then matvec_add) takes two. Its down
// projection sums over the MLP's rows, which the workgroups share out, so each adds its
// rows' share into the residual stream with atomicAdd (in no fixed order: the sums' last
// bits vary from run to run). attn_out_copy leaves a copy of the stream for it to add into
// while every workgroup reads the original for its norm.
@group(0) @binding(12) var<storage, read_write> xa: array<atomic<f32>>;
@group(0) @binding(13) var<storage, read> weights2: array<vec4<W>>;

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
        atomicAdd(&xa[r], d);
    }
}
