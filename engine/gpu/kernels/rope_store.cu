#include "common.cuh"
// rope_store: RoPE on the new position's q and k, and the cache write of k and v.
// The position is length[0] - 1 (embed already claimed the slot), read on the device.
// qkv [(H+2KV)*hd] is q | k | v; cos, sin [max_seq_len, hd]; k_cache, v_cache [KV, M, hd];
// q_out [H, hd]. rotate_half pairs dimension j with j + hd/2 (the engine's HF convention).
// grid: H + 2KV (one block per head: H query heads, KV key heads, KV value heads),
// block: hd/2 rounded up to a multiple of 32; thread j handles the pair (j, j + hd/2).
template <class T>
__device__ void rope_store(const T* __restrict__ qkv, const T* __restrict__ cos_t, const T* __restrict__ sin_t,
                           const int* __restrict__ length, T* __restrict__ k_cache, T* __restrict__ v_cache,
                           T* __restrict__ q_out, int H, int KV, int hd, int M) {
    const int head = blockIdx.x, j = threadIdx.x, half = hd / 2;
    if (j >= half) return;
    const int pos = length[0] - 1;
    const T* src = qkv + (size_t)head * hd;
    if (head >= H + KV) {  // a value head: copied into its slot, not rotated
        T* dst = v_cache + ((size_t)(head - H - KV) * M + pos) * hd;
        dst[j] = src[j];
        dst[j + half] = src[j + half];
        return;
    }
    const float a = ld(src + j), b = ld(src + j + half);
    const T* c = cos_t + (size_t)pos * hd;
    const T* s = sin_t + (size_t)pos * hd;
    const float ra = a * ld(c + j) - b * ld(s + j);                  // x*cos + rotate_half(x)*sin
    const float rb = b * ld(c + j + half) + a * ld(s + j + half);
    T* dst = head < H ? q_out + (size_t)head * hd : k_cache + ((size_t)(head - H) * M + pos) * hd;
    st(dst + j, ra);
    st(dst + j + half, rb);
}
extern "C" __global__ void rope_store_f16(const __half* qkv, const __half* cos_t, const __half* sin_t,
                                          const int* length, __half* k_cache, __half* v_cache, __half* q_out,
                                          int H, int KV, int hd, int M) {
    rope_store(qkv, cos_t, sin_t, length, k_cache, v_cache, q_out, H, KV, hd, M);
}
extern "C" __global__ void rope_store_f32(const float* qkv, const float* cos_t, const float* sin_t,
                                          const int* length, float* k_cache, float* v_cache, float* q_out,
                                          int H, int KV, int hd, int M) {
    rope_store(qkv, cos_t, sin_t, length, k_cache, v_cache, q_out, H, KV, hd, M);
}
