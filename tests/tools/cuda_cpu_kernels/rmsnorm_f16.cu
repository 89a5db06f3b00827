// Fused residual add + RMSNorm (the decode step's add_rmsnorm): x += delta in place (fp16),
// out = fp16(x / rms(x) * w) with fp32 maths. One block per row of x [rows, n].
#include <cuda_fp16.h>

#ifndef THREADS
#define THREADS 128
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
add_rmsnorm(__half* __restrict__ x, const __half* __restrict__ delta, const __half* __restrict__ w,
            float eps, __half* __restrict__ out, int n)
{
    __shared__ float partial[THREADS / 32];
    __shared__ float inv_rms;
    __half* xr = x + (size_t)blockIdx.x * n;
    const __half* dr = delta + (size_t)blockIdx.x * n;
    float ss = 0.f;
    for (int i = threadIdx.x; i < n; i += THREADS) {
        const __half v = __hadd(xr[i], dr[i]);              // the residual add rounds to fp16, as the engine's
        xr[i] = v;
        const float f = __half2float(v);
        ss += f * f;
    }
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.f;
        for (int k = 0; k < THREADS / 32; ++k) t += partial[k];
        inv_rms = rsqrtf(t / n + eps);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += THREADS)
        out[(size_t)blockIdx.x * n + i] = __float2half(__half2float(xr[i]) * inv_rms * __half2float(w[i]));
}
