// Smaller pieces a decode kernel leans on, each checked against NumPy by test_cuda_cpu.py.
#include <cuda_fp16.h>
#include <math_constants.h>

// fp32 -> fp16 -> fp32 with __float2half (round to nearest even) and half2 arithmetic.
extern "C" __global__ void half_round(const float* __restrict__ x, __half* __restrict__ h, float* __restrict__ back,
                                      __half2* __restrict__ sum2, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        h[i] = __float2half(x[i]);
        back[i] = __half2float(h[i]);
    }
    if (2 * i + 1 < n) sum2[i] = __hadd2(__floats2half2_rn(x[2 * i], x[2 * i + 1]), __float2half2_rn(1.0f));
}

// Histogram with atomicAdd into global memory, over a 2D grid (blockIdx.y picks a row).
extern "C" __global__ void histogram(const int* __restrict__ v, unsigned* __restrict__ counts, int n, int bins)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&counts[(size_t)blockIdx.y * bins + v[(size_t)blockIdx.y * n + i]], 1u);
}

// Inclusive prefix sum over a block: warp scans with __shfl_up_sync, then the warp totals.
extern "C" __global__ void block_scan(const int* __restrict__ x, int* __restrict__ y, int* __restrict__ count_pos)
{
    __shared__ int warp_total[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int v0 = x[blockIdx.x * blockDim.x + threadIdx.x];
    int v = v0;
    for (int d = 1; d < 32; d <<= 1) {
        const int up = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += up;
    }
    if (lane == 31) warp_total[warp] = v;
    __syncthreads();
    int offset = 0;
    for (int k = 0; k < warp; ++k) offset += warp_total[k];
    y[blockIdx.x * blockDim.x + threadIdx.x] = v + offset;
    const int npos = __syncthreads_count(v0 > 0);
    if (threadIdx.x == 0) count_pos[blockIdx.x] = npos;
}

// Softmax of one row per block with float4 loads: max, sum of exp, normalise.
extern "C" __global__ void softmax_f4(const float4* __restrict__ x, float4* __restrict__ y, int n4)
{
    __shared__ float red[32];
    __shared__ float bcast;
    const float4* row = x + (size_t)blockIdx.x * n4;
    float m = -CUDART_INF_F;
    for (int i = threadIdx.x; i < n4; i += blockDim.x) {
        const float4 v = row[i];
        m = fmaxf(fmaxf(m, fmaxf(v.x, v.y)), fmaxf(v.z, v.w));
    }
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = red[0];
        for (int k = 1; k < blockDim.x / 32; ++k) t = fmaxf(t, red[k]);
        bcast = t;
    }
    __syncthreads();
    m = bcast;
    float s = 0.f;
    for (int i = threadIdx.x; i < n4; i += blockDim.x) {
        const float4 v = row[i];
        s += __expf(v.x - m) + __expf(v.y - m) + __expf(v.z - m) + __expf(v.w - m);
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    __syncthreads();                                        // everyone has read bcast and red
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.f;
        for (int k = 0; k < blockDim.x / 32; ++k) t += red[k];
        bcast = 1.0f / t;
    }
    __syncthreads();
    const float inv = bcast;
    for (int i = threadIdx.x; i < n4; i += blockDim.x) {
        const float4 v = row[i];
        y[(size_t)blockIdx.x * n4 + i] = make_float4(__expf(v.x - m) * inv, __expf(v.y - m) * inv,
                                                     __expf(v.z - m) * inv, __expf(v.w - m) * inv);
    }
}

// Every built-in index, written out: out[block linear][thread linear] = (blockIdx, threadIdx, dims).
extern "C" __global__ void indices(int* __restrict__ out)
{
    const int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int* o = out + ((size_t)b * (blockDim.x * blockDim.y * blockDim.z) + t) * 8;
    o[0] = blockIdx.x; o[1] = blockIdx.y; o[2] = blockIdx.z;
    o[3] = threadIdx.x; o[4] = threadIdx.y; o[5] = threadIdx.z;
    o[6] = blockDim.x * blockDim.y * blockDim.z; o[7] = gridDim.x * gridDim.y * gridDim.z;
}
