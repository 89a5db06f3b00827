// The decode step's gemv before issue 27, kept as a regression sample for sass_check: four 128-bit
// loads of W written in a row, which ptxas interleaves with the FMAs, so a lane has 2 in flight.
#include "common.cuh"
// gemv: y [N] = W [N, K] . x [K], every projection of the step and the LM head (no cuBLAS).
// W is the engine's [K, N] weight transposed once, when the decoder is built, so that each
// output row is K contiguous values. One warp per row: lane i reads 16-byte pieces i, i+32,
// ... (a warp reads 512 contiguous bytes per load), four loads in flight before the first
// multiply; float32 accumulation, warp-shuffle reduction. At batch 1 the step is a stream
// over the weights, so what matters is that every byte is read once, with wide coalesced
// loads and enough warps in flight (N warps: 4,096 or more for every Llama-3-8B projection).
// Needs K a multiple of 16 bytes' worth of values (8 float16, 4 float32) and 16-byte rows.
// grid: ceil(N / 8), block: 256 (8 warps, 8 rows).
template <class T>
__device__ void gemv(const T* __restrict__ x, const T* __restrict__ W, T* __restrict__ y, int N, int K) {
    constexpr int E = Vec16<T>::N;
    const int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (row >= N) return;  // the whole warp leaves together (row is the same for its lanes)
    const T* w = W + (size_t)row * K;
    const int n_vec = K / E;
    float acc = 0.f;
    int v = lane;
    for (; v + 96 < n_vec; v += 128) {  // four 128-bit loads of W in flight per lane
        float wf[4][E], xf[4][E];
#pragma unroll
        for (int u = 0; u < 4; ++u) load16(w + (size_t)(v + 32 * u) * E, wf[u]);
#pragma unroll
        for (int u = 0; u < 4; ++u) load16(x + (size_t)(v + 32 * u) * E, xf[u]);
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
            for (int e = 0; e < E; ++e) acc = fmaf(wf[u][e], xf[u][e], acc);
    }
    for (; v < n_vec; v += 32) {
        float wf[E], xf[E];
        load16(w + (size_t)v * E, wf);
        load16(x + (size_t)v * E, xf);
#pragma unroll
        for (int e = 0; e < E; ++e) acc = fmaf(wf[e], xf[e], acc);
    }
    acc = warp_sum(acc);
    if (lane == 0) st(y + row, acc);
}
extern "C" __global__ void __launch_bounds__(256) gemv_f16(const __half* x, const __half* W, __half* y, int N, int K) {
    gemv(x, W, y, N, K);
}
extern "C" __global__ void __launch_bounds__(256) gemv_f32(const float* x, const float* W, float* y, int N, int K) {
    gemv(x, W, y, N, K);
}
