#include "common.cuh"
// attention: flash-decoding in one launch. The cache is cut into splits of P positions;
// block (kv head, split c) reads each K and V row of its split once, 16 bytes per lane, for
// all G query heads of its group (grouped-query attention), and writes for each of them
//     mx = max score,  sm = sum exp(score - mx),  acc = sum exp(score - mx) * V   (float32)
// into acc [H, C, hd], mx [H, C], sm [H, C] at split c. The last block of a kv head to finish
// (a ticket in tickets[kv head], reset by that block for the next launch) merges the G heads'
// splits by log-sum-exp: with M = max_c mx[h, c],
//     out[h] = sum_c exp(mx[h,c] - M) acc[h,c] / sum_c exp(mx[h,c] - M) sm[h,c]
// which is softmax over all the scores times V however the positions were split.
// Positions start .. stop-1 are read, stop = length[0] (device memory), start = stop - window
// with a sliding window. The grid covers the cache's capacity (C = ceil(M / P) splits), the
// same at every step; a split outside start .. stop-1 leaves at once.
//
// G, hd and P are compile-time (-DATT_G=, -DATT_HD=, -DATT_P=; kernels_cuda.py passes the
// model's), so every loop below has a fixed trip count and unrolls: the scores' K loads and
// P.V's V loads are ATT_DEPTH = 4 deep per lane, predicated (a key past the split rereads the
// split's last row and counts 0), with no exit test between them, and a __syncwarp() after
// each group of loads: without it ptxas sinks each load to just before its first use (it
// did: one K load in flight), which a warp barrier's memory ordering forbids.
// grid: (KV, C), block: ATT_THREADS = 128. Limits (checked on the host): hd / (16 bytes'
// values) a power of two <= 32, G <= 8, G * hd <= 2048, G * P <= 4096.
#ifndef ATT_G
#define ATT_G 4
#endif
#ifndef ATT_HD
#define ATT_HD 128
#endif
#ifndef ATT_P
#define ATT_P 128
#endif
#define ATT_THREADS 128
#define ATT_DEPTH 4
#define ATT_MERGE_DEPTH 8  // the merge: float4 reads of acc in flight per thread

template <class T>
__device__ void attention(const T* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache,
                          const int* __restrict__ length, float* __restrict__ acc, float* __restrict__ mx,
                          float* __restrict__ sm, unsigned* __restrict__ tickets, T* __restrict__ out, int M,
                          int window, float scale) {
    constexpr int G = ATT_G, HD = ATT_HD, P = ATT_P, E = Vec16<T>::N, L = HD / E;  // L lanes per K or V row
    constexpr int WARPS = ATT_THREADS / 32, KPW = 32 / L, KEYS = WARPS * KPW;    // keys per block-wide load
    constexpr int QK_ROUNDS = (P + KEYS * ATT_DEPTH - 1) / (KEYS * ATT_DEPTH);
    constexpr int NKG = ATT_THREADS / L, PV_STEPS = (P + NKG - 1) / NKG;         // P.V: key groups, keys each
    static_assert(HD % E == 0 && L >= 1 && L <= 32 && (L & (L - 1)) == 0, "head_dim: 16 bytes x a power of two <= 32");
    static_assert(G >= 1 && G <= 8 && G * HD <= 2048 && G * P <= 4096, "the shared-memory bounds");
    __shared__ float qs[G * HD];    // the group's queries, scaled by 1/sqrt(hd)
    __shared__ float sc[G * P];     // scores, then exp(score - max), [G, P]
    __shared__ float part[G * HD];  // P.V summed over the warps, [G, hd]
    __shared__ float merge_m[G], merge_d[G];
    __shared__ int is_last;
    const int kvh = blockIdx.x, c = blockIdx.y, C = gridDim.y;
    const int stop = length[0];
    const int start = window > 0 ? max(0, stop - window) : 0;
    const int lo = max(start, c * P), hi = min(stop, c * P + P);
    if (lo >= hi) return;  // an empty split: the whole block leaves before any barrier
    const int n = hi - lo;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int piece = lane % L;

    for (int i = tid; i < G * HD; i += ATT_THREADS) qs[i] = ld(q + (size_t)kvh * G * HD + i) * scale;
    for (int i = tid; i < G * HD; i += ATT_THREADS) part[i] = 0.f;
    __syncthreads();

    // 1. scores: key t = round * KEYS * DEPTH + u * KEYS + warp * KPW + lane / L; L lanes
    //    reduce each dot product. A key past the split (t >= n) reads row n - 1 and is not stored.
    const T* kb = k_cache + ((size_t)kvh * M + lo) * HD;
#pragma unroll
    for (int rd = 0; rd < QK_ROUNDS; ++rd) {
        uint4 kr[ATT_DEPTH];
#pragma unroll
        for (int u = 0; u < ATT_DEPTH; ++u) {
            const int t = (rd * ATT_DEPTH + u) * KEYS + warp * KPW + lane / L;
            kr[u] = stream16(kb + (size_t)min(t, n - 1) * HD + piece * E);
        }
        __syncwarp();
#pragma unroll
        for (int u = 0; u < ATT_DEPTH; ++u) {
            const int t = (rd * ATT_DEPTH + u) * KEYS + warp * KPW + lane / L;
            float kf[E];
            widen16<T>(kr[u], kf);
#pragma unroll
            for (int g = 0; g < G; ++g) {
                float s = 0.f;
#pragma unroll
                for (int e = 0; e < E; ++e) s = fmaf(kf[e], qs[g * HD + piece * E + e], s);
#pragma unroll
                for (int o = L / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
                if (t < n && piece == 0) sc[g * P + t] = s;
            }
        }
    }
    __syncthreads();

    // 2. softmax statistics: warp w takes query heads w, w + WARPS, ...; past n, p = 0
    for (int g = warp; g < G; g += WARPS) {
        float m = -__int_as_float(0x7f800000);
        for (int t = lane; t < n; t += 32) m = fmaxf(m, sc[g * P + t]);
        m = warp_max(m);
        float s = 0.f;
        for (int t = lane; t < P; t += 32) {
            const float p = t < n ? expf(sc[g * P + t] - m) : 0.f;
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

    // 3. P.V: thread (key group kg, piece) sums keys kg, kg + NKG, ... of its piece, DEPTH V
    //    rows in flight; a key past the split rereads row n - 1 with weight 0
    const int kg = tid / L;
    float a[G][E];
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
        for (int e = 0; e < E; ++e) a[g][e] = 0.f;
    const T* vb = v_cache + ((size_t)kvh * M + lo) * HD;
#pragma unroll
    for (int s0 = 0; s0 < PV_STEPS; s0 += ATT_DEPTH) {
        uint4 vr[ATT_DEPTH];
#pragma unroll
        for (int u = 0; u < ATT_DEPTH; ++u)
            if (s0 + u < PV_STEPS) vr[u] = stream16(vb + (size_t)min(kg + (s0 + u) * NKG, n - 1) * HD + piece * E);
        __syncwarp();
#pragma unroll
        for (int u = 0; u < ATT_DEPTH; ++u)
            if (s0 + u < PV_STEPS) {
                const int t = kg + (s0 + u) * NKG;
                float vf[E];
                widen16<T>(vr[u], vf);
#pragma unroll
                for (int g = 0; g < G; ++g) {
                    const float p = t < n ? sc[g * P + min(t, P - 1)] : 0.f;
#pragma unroll
                    for (int e = 0; e < E; ++e) a[g][e] = fmaf(p, vf[e], a[g][e]);
                }
            }
    }
    // within the warp: lanes with the same piece add up (xor over the key-group bits)
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
        for (int e = 0; e < E; ++e)
#pragma unroll
            for (int o = L; o < 32; o <<= 1) a[g][e] += __shfl_xor_sync(0xffffffffu, a[g][e], o);
    // across warps: one warp after the other adds its sums into shared memory (a fixed order:
    // the result is the same at every run, so a graph replay matches an eager step bit for bit)
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
        if (warp == w && lane < L)
#pragma unroll
            for (int g = 0; g < G; ++g)
#pragma unroll
                for (int e = 0; e < E; ++e) part[g * HD + piece * E + e] += a[g][e];
        __syncthreads();
    }
    for (int i = tid; i < G * HD; i += ATT_THREADS)
        acc[((size_t)(kvh * G + i / HD) * C + c) * HD + i % HD] = part[i];

    // 4. the last block of this kv head merges its splits c0 .. c1 (read through L2: other
    //    blocks wrote them, on other SMs)
    __threadfence();
    __syncthreads();
    const int c0 = start / P, c1 = (stop - 1) / P;
    if (tid == 0) is_last = atomicAdd(tickets + kvh, 1u) == (unsigned)(c1 - c0);
    __syncthreads();
    if (!is_last) return;
    __threadfence();
    if (tid == 0) atomicExch(tickets + kvh, 0u);  // for the next launch
    for (int g = warp; g < G; g += WARPS) {  // per head: the largest split maximum, the denominator
        const float* mxh = mx + (size_t)(kvh * G + g) * C;
        const float* smh = sm + (size_t)(kvh * G + g) * C;
        float m = -__int_as_float(0x7f800000);
        for (int i = c0 + lane; i <= c1; i += 32) m = fmaxf(m, __ldcg(mxh + i));
        m = warp_max(m);
        float d = 0.f;
        for (int i = c0 + lane; i <= c1; i += 32) d = fmaf(expf(__ldcg(mxh + i) - m), __ldcg(smh + i), d);
        d = warp_sum(d);
        if (lane == 0) {
            merge_m[g] = m;
            merge_d[g] = d;
        }
    }
    __syncthreads();
    // numerators: thread i takes 4 dimensions (one float4 of acc) of one head, splits in
    // groups of ATT_MERGE_DEPTH loads in flight
    for (int i = tid; i < G * HD / 4; i += ATT_THREADS) {
        const int g = i / (HD / 4), d4 = i % (HD / 4), h = kvh * G + g;
        const float m = merge_m[g];
        const float4* ah = reinterpret_cast<const float4*>(acc + (size_t)h * C * HD) + d4;
        const float* mxh = mx + (size_t)h * C;
        float4 num = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int c2 = c0; c2 <= c1; c2 += ATT_MERGE_DEPTH) {
            float4 av[ATT_MERGE_DEPTH];
            float wv[ATT_MERGE_DEPTH];
#pragma unroll
            for (int u = 0; u < ATT_MERGE_DEPTH; ++u) {
                const int cc = min(c2 + u, c1);
                av[u] = __ldcg(ah + (size_t)cc * (HD / 4));
                wv[u] = c2 + u <= c1 ? expf(__ldcg(mxh + cc) - m) : 0.f;
            }
#pragma unroll
            for (int u = 0; u < ATT_MERGE_DEPTH; ++u) {
                num.x = fmaf(wv[u], av[u].x, num.x);
                num.y = fmaf(wv[u], av[u].y, num.y);
                num.z = fmaf(wv[u], av[u].z, num.z);
                num.w = fmaf(wv[u], av[u].w, num.w);
            }
        }
        const float inv = 1.0f / merge_d[g];
        T* o = out + (size_t)h * HD + 4 * d4;
        st(o + 0, num.x * inv);
        st(o + 1, num.y * inv);
        st(o + 2, num.z * inv);
        st(o + 3, num.w * inv);
    }
}
extern "C" __global__ void __launch_bounds__(ATT_THREADS)
attention_f16(const __half* q, const __half* k_cache, const __half* v_cache, const int* length, float* acc, float* mx,
              float* sm, unsigned* tickets, __half* out, int M, int window, float scale) {
    attention(q, k_cache, v_cache, length, acc, mx, sm, tickets, out, M, window, scale);
}
extern "C" __global__ void __launch_bounds__(ATT_THREADS)
attention_f32(const float* q, const float* k_cache, const float* v_cache, const int* length, float* acc, float* mx,
              float* sm, unsigned* tickets, float* out, int M, int window, float scale) {
    attention(q, k_cache, v_cache, length, acc, mx, sm, tickets, out, M, window, scale);
}
