// The decode step's matrix-vector kernels with each row's sums made by subgroup shuffles in
// registers, not in workgroup memory between barriers (reduce_runs: log2(LANES) barriers).
// Not a kernel of its own: suite/shaders.subgroup_kernel appends it to fusion_decode.wgsl,
// whose helpers it calls, for a device with subgroups (Dawn's `subgroups`, with `enable
// subgroups;`; wgpu-native's `subgroup`, naga taking subgroup builtins without it). Each
// entry point is its namesake's in fusion_decode.wgsl with run_sum for red and reduce_runs.
// A subgroup is taken to be a run of consecutive local_invocation_index starting at a
// multiple of its size (as on NVIDIA, AMD, Intel and lavapipe); where it is not, rows get
// other rows' sums and the logits' check against numpy fails.

// The sum of v over each aligned run of LANES threads, whole in every thread of the run: a
// butterfly of shuffles within the subgroup (log2 of the smaller of LANES and its size),
// then, where a run spans subgroups (LANES above the subgroup size), their sums through
// workgroup memory after one barrier. `sg` is uniform in a compute shader (Tint takes it so),
// so every thread takes the same branch.
fn run_sum(v: vec4<f32>, lid: u32, sg: u32) -> vec4<f32> {
    var s = v;
    for (var k = min(LANES, sg) / 2u; k > 0u; k = k / 2u) {
        s = s + subgroupShuffleXor(s, k);
    }
    if (LANES > sg) {
        red[lid] = s;
        workgroupBarrier();
        let first = lid - lid % LANES;
        s = vec4<f32>(0.0);
        for (var j = 0u; j < LANES; j = j + sg) {
            s = s + red[first + j];
        }
    }
    return s;
}

@compute @workgroup_size(WG)
fn qkv_rope_sg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32, @builtin(subgroup_size) sg: u32) {
    let p = row_of(wid, nwg) * (WG / LANES) + lid / LANES;
    let lane = lid % LANES;
    let block = p / (D / 2u);
    let j = p % (D / 2u);
    let early = early_qkv(lane == 0u && block < NH + 2u * NKV, block, j);
    var s = vec4<f32>(0.0);
    if (block < NH + 2u * NKV) {
        s = norm_dot2(block * D + j, block * D + j + D / 2u, lane);
    }
    let sums = run_sum(s, lid, sg);
    if (lane == 0u && block < NH + 2u * NKV) {
        qkv_normed(block, j, sums, early);
    }
}

@compute @workgroup_size(WG)
fn gate_up_sg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32, @builtin(subgroup_size) sg: u32) {
    let r = row_of(wid, nwg) * (WG / LANES) + lid / LANES;
    let lane = lid % LANES;
    var s = vec4<f32>(0.0);
    if (r < F) {
        s = norm_dot2(r, F + r, lane);
    }
    let sums = run_sum(s, lid, sg);
    if (lane == 0u && r < F) {
        swiglu_out(r, sums);
    }
}

@compute @workgroup_size(WG)
fn matvec_add_sg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32, @builtin(subgroup_size) sg: u32) {
    project_add_sg(wid, nwg, lid, sg);
}

// matvec_add_sg with AHEAD_WG workgroups more that load `ahead` (fusion_decode.wgsl's
// matvec_add_ahead).
@compute @workgroup_size(WG)
fn matvec_add_ahead_sg(@builtin(workgroup_id) wid: vec3<u32>,
                       @builtin(num_workgroups) nwg: vec3<u32>,
                       @builtin(local_invocation_index) lid: u32,
                       @builtin(subgroup_size) sg: u32) {
    if (!ahead_role(row_of(wid, nwg), lid)) {
        project_add_sg(wid, nwg, lid, sg);
    }
}

// o_proj_sg with AHEAD_WG workgroups more that load `ahead`.
@compute @workgroup_size(WG)
fn o_proj_ahead_sg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32, @builtin(subgroup_size) sg: u32) {
    if (!ahead_role(row_of(wid, nwg), lid)) {
        project_add_sg(wid, nwg, lid, sg);
    }
}

@compute @workgroup_size(WG)
fn o_proj_sg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32, @builtin(subgroup_size) sg: u32) {
    project_add_sg(wid, nwg, lid, sg);
}

fn project_add_sg(wid: vec3<u32>, nwg: vec3<u32>, lid: u32, sg: u32) {
    let r = row_of(wid, nwg) * (WG / LANES) + lid / LANES;
    let lane = lid % LANES;
    let early = early_row(lane == 0u && r < ROWS, r);
    var s = 0.0;
    if (r < ROWS) {
        s = dot_share(r, lane, COLS / 4u);
    }
    let sums = run_sum(vec4<f32>(s, 0.0, 0.0, 0.0), lid, sg);
    if (lane == 0u && r < ROWS) {
        out0[r] = then_row(r, early) + sums.x;
    }
}
