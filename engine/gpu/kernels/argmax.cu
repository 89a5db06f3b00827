#include "common.cuh"
// argmax: token[0] = the index of the largest logit (the first one on ties, as np.argmax),
// written on the device so that greedy decoding never waits for the host.
// grid: 1, block: 1024.
template <class T>
__device__ void argmax(const T* __restrict__ logits, int* __restrict__ token, int V) {
    __shared__ float best_v[32];
    __shared__ int best_i[32];
    float bv = -__int_as_float(0x7f800000);
    int bi = 0x7fffffff;
    for (int i = threadIdx.x; i < V; i += blockDim.x) {
        const float v = ld(logits + i);
        if (v > bv) { bv = v; bi = i; }  // i grows: the first of equal values stays
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (ov > bv || (ov == bv && oi < bi)) { bv = ov; bi = oi; }
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) { best_v[warp] = bv; best_i[warp] = bi; }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x >> 5); ++w)
            if (best_v[w] > bv || (best_v[w] == bv && best_i[w] < bi)) { bv = best_v[w]; bi = best_i[w]; }
        token[0] = bi == 0x7fffffff ? 0 : bi;
    }
}
extern "C" __global__ void argmax_f16(const __half* logits, int* token, int V) { argmax(logits, token, V); }
extern "C" __global__ void argmax_f32(const float* logits, int* token, int V) { argmax(logits, token, V); }
