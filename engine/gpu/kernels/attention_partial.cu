#include "common.cuh"
// attention_partial: flash-decoding, part 1. The cache is cut into splits of P positions;
// block (kv head, split) reads each K and V row of its split once, 16 bytes per lane, for
// all G query heads of its group (grouped-query attention), and writes for each of them
//     mx = max score,  sm = sum exp(score - mx),  acc = sum exp(score - mx) * V   (float32)
// into acc [H, C, hd], mx [H, C], sm [H, C] at its split c. Positions start .. stop-1 are
// read, stop = length[0] (device memory), start = stop - window with a sliding window.
// The grid is sized for the cache's capacity (C = ceil(M / P) splits), so it is the same
// at every step; a split outside start .. stop-1 leaves at once and writes nothing (the
// merge reads only the splits that hold positions).
// grid: (KV, C), block: 128. Limits (checked on the host): hd / (16 bytes' values) a power
// of two <= 32, G <= 8, G * hd <= 2048, G * P <= 4096.
#define ATT_MAX_G 8
#define ATT_MAX_GHD 2048
#define ATT_MAX_GP 4096
template <class T>
__device__ void attention_partial(const T* __restrict__ q, const T* __restrict__ k_cache,
                                  const T* __restrict__ v_cache, const int* __restrict__ length,
                                  float* __restrict__ acc, float* __restrict__ mx, float* __restrict__ sm,
                                  int G, int hd, int M, int P, int window, float scale) {
    __shared__ float qs[ATT_MAX_GHD];   // the group's queries, scaled by 1/sqrt(hd)
    __shared__ float sc[ATT_MAX_GP];    // scores, then exp(score - max), [G, P]
    __shared__ float part[ATT_MAX_GHD]; // P.V summed over the warps, [G, hd]
    constexpr int E = Vec16<T>::N;
    const int kvh = blockIdx.x, c = blockIdx.y, C = gridDim.y;
    const int stop = length[0];
    const int start = window > 0 ? max(0, stop - window) : 0;
    const int lo = max(start, c * P), hi = min(stop, c * P + P);
    if (lo >= hi) return;  // an empty split: the whole block leaves before any barrier
    const int n = hi - lo;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, n_warps = blockDim.x >> 5;
    const int L = hd / E;  // lanes per K or V row: each reads one 16-byte piece
    const int piece = lane % L;

    for (int i = tid; i < G * hd; i += blockDim.x) qs[i] = ld(q + (size_t)kvh * G * hd + i) * scale;
    for (int i = tid; i < G * hd; i += blockDim.x) part[i] = 0.f;
    __syncthreads();

    // 1. scores: a warp takes 32 / L keys at a time, four such groups per round (four 16-byte
    //    loads in flight per lane before the first multiply); L lanes reduce each dot product
    const T* kb = k_cache + ((size_t)kvh * M + lo) * hd;
    const int stride = n_warps * (32 / L);
    for (int t0 = warp * (32 / L) + lane / L; t0 - lane / L < n; t0 += 4 * stride) {  // uniform in a warp
        float kf[4][E];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int t = t0 + u * stride;
            if (t < n) load16(kb + (size_t)t * hd + piece * E, kf[u]);
            else
#pragma unroll
                for (int e = 0; e < E; ++e) kf[u][e] = 0.f;
        }
        for (int g = 0; g < G; ++g) {
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                float s = 0.f;
#pragma unroll
                for (int e = 0; e < E; ++e) s = fmaf(kf[u][e], qs[g * hd + piece * E + e], s);
                for (int o = L / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
                const int t = t0 + u * stride;
                if (t < n && piece == 0) sc[g * P + t] = s;
            }
        }
    }
    __syncthreads();

    // 2. softmax statistics: warp g takes query head g of the group
    for (int g = warp; g < G; g += n_warps) {
        float m = -__int_as_float(0x7f800000);
        for (int t = lane; t < n; t += 32) m = fmaxf(m, sc[g * P + t]);
        m = warp_max(m);
        float s = 0.f;
        for (int t = lane; t < n; t += 32) {
            const float p = expf(sc[g * P + t] - m);
            sc[g * P + t] = p;
            s += p;
        }
        s = warp_sum(s);
        if (lane == 0) {
            const size_t o = (size_t)(kvh * G + g) * C + c;
            mx[o] = m;
            sm[o] = s;
        }
    }
    __syncthreads();

    // 3. P.V: thread (key group kg, piece) sums keys kg, kg + blockDim/L, ... of its piece
    const int kg = tid / L, n_kg = blockDim.x / L;
    float a[ATT_MAX_G][E];
#pragma unroll
    for (int g = 0; g < ATT_MAX_G; ++g)
#pragma unroll
        for (int e = 0; e < E; ++e) a[g][e] = 0.f;
    const T* vb = v_cache + ((size_t)kvh * M + lo) * hd;
#pragma unroll 4
    for (int t = kg; t < n; t += n_kg) {
        float vf[E];
        load16(vb + (size_t)t * hd + piece * E, vf);
#pragma unroll
        for (int g = 0; g < ATT_MAX_G; ++g)
            if (g < G) {
                const float p = sc[g * P + t];
#pragma unroll
                for (int e = 0; e < E; ++e) a[g][e] = fmaf(p, vf[e], a[g][e]);
            }
    }
    // within the warp: lanes with the same piece add up (xor over the key-group bits)
#pragma unroll
    for (int g = 0; g < ATT_MAX_G; ++g)
        if (g < G)  // G is the same for the whole block: no lane skips a shuffle
#pragma unroll
            for (int e = 0; e < E; ++e)
                for (int o = L; o < 32; o <<= 1) a[g][e] += __shfl_xor_sync(0xffffffffu, a[g][e], o);
    // across warps: one warp after the other adds its sums into shared memory
    for (int w = 0; w < n_warps; ++w) {
        if (warp == w && lane < L)
#pragma unroll
            for (int g = 0; g < ATT_MAX_G; ++g)
                if (g < G)
#pragma unroll
                    for (int e = 0; e < E; ++e) part[g * hd + piece * E + e] += a[g][e];
        __syncthreads();
    }
    for (int i = tid; i < G * hd; i += blockDim.x)
        acc[((size_t)(kvh * G + i / hd) * C + c) * hd + i % hd] = part[i];
}
extern "C" __global__ void __launch_bounds__(128)
attention_partial_f16(const __half* q, const __half* k_cache, const __half* v_cache, const int* length,
                      float* acc, float* mx, float* sm, int G, int hd, int M, int P, int window, float scale) {
    attention_partial(q, k_cache, v_cache, length, acc, mx, sm, G, hd, M, P, window, scale);
}
extern "C" __global__ void __launch_bounds__(128)
attention_partial_f32(const float* q, const float* k_cache, const float* v_cache, const int* length,
                      float* acc, float* mx, float* sm, int G, int hd, int M, int P, int window, float scale) {
    attention_partial(q, k_cache, v_cache, length, acc, mx, sm, G, hd, M, P, window, scale);
}
