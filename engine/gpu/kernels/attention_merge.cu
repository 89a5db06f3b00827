#include "common.cuh"
// attention_merge: flash-decoding, part 2. For query head h, the splits c0 .. c1 that hold
// positions start .. stop-1 (stop = length[0], read on the device) are merged by
// log-sum-exp: with M = max_c mx[h, c],
//     out[h] = sum_c exp(mx[h,c] - M) acc[h,c] / sum_c exp(mx[h,c] - M) sm[h,c]
// which is softmax over all the scores times V, however the positions were split.
// out [H * hd] head-major (what wo expects). grid: H, block: hd rounded up to 32.
template <class T>
__device__ void attention_merge(const float* __restrict__ acc, const float* __restrict__ mx,
                                const float* __restrict__ sm, const int* __restrict__ length,
                                T* __restrict__ out, int hd, int C, int P, int window) {
    const int h = blockIdx.x, d = threadIdx.x;
    if (d >= hd) return;
    const int stop = length[0];
    const int start = window > 0 ? max(0, stop - window) : 0;
    const int c0 = start / P, c1 = (stop - 1) / P;
    float m = -__int_as_float(0x7f800000);
    for (int c = c0; c <= c1; ++c) m = fmaxf(m, mx[(size_t)h * C + c]);
    float num = 0.f, den = 0.f;
    for (int c = c0; c <= c1; ++c) {
        const float w = expf(mx[(size_t)h * C + c] - m);
        num = fmaf(w, acc[((size_t)h * C + c) * hd + d], num);
        den = fmaf(w, sm[(size_t)h * C + c], den);
    }
    st(out + (size_t)h * hd + d, num / den);
}
extern "C" __global__ void attention_merge_f16(const float* acc, const float* mx, const float* sm,
                                               const int* length, __half* out, int hd, int C, int P, int window) {
    attention_merge(acc, mx, sm, length, out, hd, C, P, window);
}
extern "C" __global__ void attention_merge_f32(const float* acc, const float* mx, const float* sm,
                                               const int* length, float* out, int hd, int C, int P, int window) {
    attention_merge(acc, mx, sm, length, out, hd, C, P, window);
}
