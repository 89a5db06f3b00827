// y = W x in fp16 storage with fp32 accumulation: W [M, K] row-major, x [K], y [M].
// One warp per output row, 128-bit loads (8 halves per uint4), __half2 unpacking, a shuffle
// reduction. K % 8 == 0 and W, x 16-byte aligned (as cupy allocations are).
#include <cuda_fp16.h>

extern "C" __global__ void __launch_bounds__(256)
gemv_f16(const __half* __restrict__ W, const __half* __restrict__ x, __half* __restrict__ y, int M, int K)
{
    const int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (row >= M) return;                                   // whole warps leave together
    const uint4* w4 = reinterpret_cast<const uint4*>(W + (size_t)row * K);
    const uint4* x4 = reinterpret_cast<const uint4*>(x);
    float acc = 0.f;
    for (int i = lane; i < K / 8; i += 32) {
        const uint4 wv = __ldg(w4 + i), xv = __ldg(x4 + i);
        const __half2* wh = reinterpret_cast<const __half2*>(&wv);
        const __half2* xh = reinterpret_cast<const __half2*>(&xv);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const float2 a = __half22float2(wh[j]), b = __half22float2(xh[j]);
            acc = fmaf(a.x, b.x, acc);
            acc = fmaf(a.y, b.y, acc);
        }
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) y[row] = __float2half(acc);
}
