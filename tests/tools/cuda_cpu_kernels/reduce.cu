// Row sums, two ways: warp shuffles + a static __shared__ array of per-warp partials, and a
// tree reduction over a dynamic (extern __shared__) array. One block per row of x [rows, n].
#include <cuda_fp16.h>
#include <math_constants.h>

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void __launch_bounds__(1024)
row_sum_shfl(const float* __restrict__ x, float* __restrict__ out, int n)
{
    __shared__ float partial[32];
    const float* row = x + (size_t)blockIdx.x * n;
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += row[i];
    s = warp_sum(s);
    const int warp = threadIdx.x / warpSize, lane = threadIdx.x % warpSize;
    if (lane == 0) partial[warp] = s;
    __syncthreads();
    if (warp == 0) {
        const int nwarps = (blockDim.x + warpSize - 1) / warpSize;
        float t = lane < nwarps ? partial[lane] : 0.f;
        t = warp_sum(t);
        if (lane == 0) out[blockIdx.x] = t;
    }
}

// blockDim.x must be a power of two; shared_mem = blockDim.x * sizeof(float).
extern "C" __global__ void row_sum_tree(const float* __restrict__ x, float* __restrict__ out, int n)
{
    extern __shared__ float buf[];
    const float* row = x + (size_t)blockIdx.x * n;
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += row[i];
    buf[threadIdx.x] = s;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) buf[threadIdx.x] += buf[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = buf[0];
}

// Row maxima with __shfl_down_sync, and the index of the first maximum through __ballot_sync.
extern "C" __global__ void row_argmax_warp(const float* __restrict__ x, int* __restrict__ out, int n)
{
    const float* row = x + (size_t)blockIdx.x * n;
    float best = -CUDART_INF_F;
    for (int i = threadIdx.x; i < n; i += warpSize) best = fmaxf(best, row[i]);
    for (int o = 16; o > 0; o >>= 1) best = fmaxf(best, __shfl_down_sync(0xffffffffu, best, o));
    best = __shfl_sync(0xffffffffu, best, 0);
    int first = n;
    for (int base = 0; base < n; base += warpSize) {
        const int i = base + threadIdx.x;
        const unsigned hit = __ballot_sync(0xffffffffu, i < n && row[i] == best);
        if (hit) { first = base + __ffs(hit) - 1; break; }
    }
    if (threadIdx.x == 0) out[blockIdx.x] = first;
}
