// gpuoverhead: fusion=mlp
// A small MLP at batch 1: y = W2 relu(W1 x + b1) + b2, x and y of D values, the hidden
// layer of H = 4 D (D a multiple of 4); f32, weights row-major. Both matrices lie in `w`
// (W1, H x D, then W2, D x H, read as vec4), both biases in `bias` (b1, then b2), x and the
// hidden vector in `acts` (x, then the H hidden values).
// Every output row is computed the same way in both forms: a group of LANES threads, lane l
// summing the 4-column blocks l, l + LANES, ... of its row (adjacent lanes read adjacent
// weights), the lanes' sums added by a tree in workgroup memory; a workgroup holds
// WG / LANES such groups.
// Unfused: two dispatches, `layer1` (the hidden vector) and `layer2` (y), each spreading its
// rows over as many workgroups as they take. Fused: `fused`, the mega-kernel: ONE dispatch
// of ONE workgroup whose groups step through layer 1's rows, then, after a storageBarrier
// (legal here: every thread that wrote the hidden vector is in this one workgroup), through
// layer 2's. The hidden vector stays in storage: 4 D floats pass WebGPU's default 16 KiB of
// workgroup memory from D = 1024, and the same memory keeps the two forms' work the same.
// vec4 loads also keep the fused kernel's threads under lavapipe's limit of 65,535 loop
// iterations an invocation (llvmpipe counts every loop's iterations together and silently
// ends the loops there): 8 D^2 / WG multiply-adds a thread in a quarter as many iterations,
// under the limit up to D = 2048 at WG = 256 (at WG = 128 there the output check fails).
override WG: u32 = 256;
override LANES: u32 = 32;
override D: u32 = 64;
override H: u32 = 256;
const MAX_WG: u32 = 1024u;

@group(0) @binding(0) var<storage, read> w: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> bias: array<f32>;
@group(0) @binding(2) var<storage, read_write> acts: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
// Units of work done: the last dispatch of each unit adds 1, so the output check sees a
// missing unit (y is the same after one unit or many).
@group(0) @binding(4) var<storage, read_write> units_done: atomic<u32>;

var<workgroup> red: array<f32, MAX_WG>;

// Row `row` (of `rows`, each `cols` long, the first starting at w[w0], in vec4s) times
// acts[a0 ..]: the sum ends in red[lid] of the row's first lane, and that lane alone gets
// true. Every thread of the workgroup calls it (it holds barriers), its row past the end
// or not.
fn dot_row(row: u32, rows: u32, cols: u32, w0: u32, a0: u32, lid: u32) -> bool {
    let lane = lid % LANES;
    let n4 = cols / 4u;
    var acc = vec4<f32>(0.0);
    if (row < rows) {
        for (var c = lane; c < n4; c = c + LANES) {
            let j = a0 + 4u * c;
            let v = vec4<f32>(acts[j], acts[j + 1u], acts[j + 2u], acts[j + 3u]);
            acc = fma(w[w0 + row * n4 + c], v, acc);
        }
    }
    red[lid] = acc.x + acc.y + acc.z + acc.w;
    workgroupBarrier();
    for (var s = LANES / 2u; s > 0u; s = s / 2u) {
        if (lane < s) {
            red[lid] = red[lid] + red[lid + s];
        }
        workgroupBarrier();
    }
    return lane == 0u && row < rows;
}

// Layer 1 for the rows from `first`, one a lane group: hidden = relu(W1 x + b1).
fn hidden_rows(first: u32, lid: u32) {
    let row = first + lid / LANES;
    if (dot_row(row, H, D, 0u, 0u, lid)) {
        acts[D + row] = max(red[lid] + bias[row], 0.0);
    }
}

// Layer 2 for the rows from `first`: y = W2 hidden + b2.
fn output_rows(first: u32, lid: u32) {
    let row = first + lid / LANES;
    if (dot_row(row, D, H, H * D / 4u, D, lid)) {
        y[row] = red[lid] + bias[H + row];
    }
}

@compute @workgroup_size(WG)
fn layer1(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    hidden_rows(wid.x * (WG / LANES), lid);
}

@compute @workgroup_size(WG)
fn layer2(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    output_rows(wid.x * (WG / LANES), lid);
    if (wid.x == 0u && lid == 0u) {
        atomicAdd(&units_done, 1u);
    }
}

@compute @workgroup_size(WG)
fn fused(@builtin(local_invocation_index) lid: u32) {
    for (var first = 0u; first < H; first = first + WG / LANES) {
        hidden_rows(first, lid);
    }
    storageBarrier();
    for (var first = 0u; first < D; first = first + WG / LANES) {
        output_rows(first, lid);
    }
    if (lid == 0u) {
        atomicAdd(&units_done, 1u);
    }
}
