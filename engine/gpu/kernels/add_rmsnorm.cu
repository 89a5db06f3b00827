#include "common.cuh"
// add_rmsnorm: (add != 0) x += delta, rounded to x's dtype as the engine's residual add is;
// then out = x / sqrt(mean(x^2) + eps) * w, in float32, rounded once.
// grid: 1, block: D rounded up to 32, at most 1024 (one block reads the few thousand values).
template <class T>
__device__ void add_rmsnorm(T* __restrict__ x, const T* __restrict__ delta, const T* __restrict__ w,
                            float eps, T* __restrict__ out, int D, int add) {
    __shared__ float red[32];
    float ss = 0.f;
    for (int i = threadIdx.x; i < D; i += blockDim.x) {  // each thread owns elements i
        float v = ld(x + i);
        if (add) {
            st(x + i, v + ld(delta + i));
            v = ld(x + i);  // the rounded sum, as the next block reads it
        }
        ss += v * v;
    }
    const float inv = 1.0f / sqrtf(block_sum(ss, red) / (float)D + eps);
    for (int i = threadIdx.x; i < D; i += blockDim.x) st(out + i, ld(x + i) * inv * ld(w + i));
}
extern "C" __global__ void add_rmsnorm_f16(__half* x, const __half* delta, const __half* w, float eps,
                                           __half* out, int D, int add) {
    add_rmsnorm(x, delta, w, eps, out, D, add);
}
extern "C" __global__ void add_rmsnorm_f32(float* x, const float* delta, const float* w, float eps,
                                           float* out, int D, int add) {
    add_rmsnorm(x, delta, w, eps, out, D, add);
}
