// gpuoverhead: fusion=matmul
// C = A * B for square M x M f32 matrices (row-major), 16 x 16 tiles through workgroup
// memory; M is a multiple of 16. One dispatch, grid (M/16, M/16): the GPU work grows as M^3
// while the cost of issuing the dispatch does not, which locates the crossover.
override M: u32 = 64;
const TILE: u32 = 16u;

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
// Matmuls done: each dispatch adds 1, so the output check sees a missing one (C is the same
// after one matmul or many).
@group(0) @binding(3) var<storage, read_write> units_done: atomic<u32>;

var<workgroup> ta: array<array<f32, 16>, 16>;
var<workgroup> tb: array<array<f32, 16>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let row = gid.y;
    let col = gid.x;
    var acc = 0.0;
    for (var k0 = 0u; k0 < M; k0 = k0 + TILE) {
        ta[lid.y][lid.x] = a[row * M + k0 + lid.x];
        tb[lid.y][lid.x] = b[(k0 + lid.y) * M + col];
        workgroupBarrier();
        for (var k = 0u; k < TILE; k = k + 1u) {
            acc = acc + ta[lid.y][k] * tb[k][lid.x];
        }
        workgroupBarrier();
    }
    c[row * M + col] = acc;
    if (row == 0u && col == 0u) {
        atomicAdd(&units_done, 1u);
    }
}
