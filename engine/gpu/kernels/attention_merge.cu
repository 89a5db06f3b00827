#include "common.cuh"
// attention_merge: flash-decoding, part 2. For query head h, the splits c0 .. c1 that hold
// positions start .. stop-1 (stop = length[0], read on the device) are merged by
// log-sum-exp: with M = max_c mx[h, c],
//     out[h] = sum_c exp(mx[h,c] - M) acc[h,c] / sum_c exp(mx[h,c] - M) sm[h,c]
// which is softmax over all the scores times V, however the positions were split.
// out [H * hd] head-major (what wo expects).
// grid: H, block: 256 (8 warps). At 32768 positions a head has 256 splits: warp w merges
// splits c0 + w, c0 + w + 8, ... (lane j holds dimensions j, j + 32, ...: coalesced rows of
// acc), then the 8 partial merges are merged through shared memory. hd <= 256.
#define MERGE_WARPS 8
#define MERGE_MAX_HD 256
template <class T>
__device__ void attention_merge(const float* __restrict__ acc, const float* __restrict__ mx,
                                const float* __restrict__ sm, const int* __restrict__ length,
                                T* __restrict__ out, int hd, int C, int P, int window) {
    __shared__ float red[32];
    __shared__ float num_w[MERGE_WARPS][MERGE_MAX_HD];
    __shared__ float den_w[MERGE_WARPS];
    const int h = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int stop = length[0];
    const int start = window > 0 ? max(0, stop - window) : 0;
    const int c0 = start / P, c1 = (stop - 1) / P;
    const float* mxh = mx + (size_t)h * C;
    // the largest split maximum, over the block
    float m = -__int_as_float(0x7f800000);
    for (int c = c0 + tid; c <= c1; c += blockDim.x) m = fmaxf(m, mxh[c]);
    m = warp_max(m);
    if (lane == 0) red[warp] = m;
    __syncthreads();
    m = red[0];
    for (int w = 1; w < MERGE_WARPS; ++w) m = fmaxf(m, red[w]);
    // each warp: its splits, rescaled to m
    float num[MERGE_MAX_HD / 32];
#pragma unroll
    for (int j = 0; j < MERGE_MAX_HD / 32; ++j) num[j] = 0.f;
    float den = 0.f;
#pragma unroll 4
    for (int c = c0 + warp; c <= c1; c += MERGE_WARPS) {
        const float w = expf(mxh[c] - m);
        den = fmaf(w, sm[(size_t)h * C + c], den);
        const float* a = acc + ((size_t)h * C + c) * hd;
#pragma unroll
        for (int j = 0; j < MERGE_MAX_HD / 32; ++j)
            if (lane + 32 * j < hd) num[j] = fmaf(w, a[lane + 32 * j], num[j]);
    }
#pragma unroll
    for (int j = 0; j < MERGE_MAX_HD / 32; ++j)
        if (lane + 32 * j < hd) num_w[warp][lane + 32 * j] = num[j];
    if (lane == 0) den_w[warp] = den;
    __syncthreads();
    if (tid < hd) {
        float n = 0.f, d = 0.f;
        for (int w = 0; w < MERGE_WARPS; ++w) {
            n += num_w[w][tid];
            d += den_w[w];
        }
        st(out + (size_t)h * hd + tid, n / d);
    }
}
extern "C" __global__ void __launch_bounds__(256)
attention_merge_f16(const float* acc, const float* mx, const float* sm, const int* length, __half* out,
                    int hd, int C, int P, int window) {
    attention_merge(acc, mx, sm, length, out, hd, C, P, window);
}
extern "C" __global__ void __launch_bounds__(256)
attention_merge_f32(const float* acc, const float* mx, const float* sm, const int* length, float* out,
                    int hd, int C, int P, int window) {
    attention_merge(acc, mx, sm, length, out, hd, C, P, window);
}
