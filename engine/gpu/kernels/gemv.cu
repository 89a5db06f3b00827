#include "common.cuh"
// gemv: every projection of the step and the LM head, y = W x with W [N, K] (the engine's
// [K, N] weight transposed once, when the decoder is built, so that a row is K contiguous
// values), each fused with what comes right before and after it in the step:
//
//   gemv_*          y = W x                                    a lone projection (benchmarks)
//   gemv_norm_*     y = W (x / rms(x))                         the LM head without argmax
//   gemv_residual_* x[n] += (W a)[n]                           wo and w_down: the residual add
//   gemv_swiglu_*   h[j] = silu(g_j) u_j,  g | u = W (x / rms(x))      w_gate_up, then SwiGLU
//   gemv_rope_*     q | k | v = W (x / rms(x)); q, k rotated by RoPE at the new position,
//                   k, v written into their cache slot                 wqkv
//   gemv_argmax_*   logits = W (x / rms(x)), token = argmax(logits)    the greedy LM head
//
// RMSNorm's weight is folded into W's columns when the decoder is built (prepare_weight with
// norm=), so the norm needs only sum(x^2): each block accumulates it from the very x pieces
// its dot products read, and scales the dots by 1 / rms(x) at the end.
//
// A block computes one tile of GEMV_ROWS = 4 rows over the whole of K. Its threads split K:
// thread t reads 16-byte pieces t, t + T, t + 2T, ... of each row (T = blockDim.x, so a warp
// reads 512 contiguous bytes of a row per load). Each round has GEMV_UNROLL = 2 pieces of
// each of the 4 rows, 8 independent 128-bit loads of W, and the 2 pieces of x the 4 rows
// share, in flight before the first FMA (the next round's are issued before this round's
// arithmetic); one float32 sum per row.
// Dots are summed over the warp by shuffles and over the block in shared memory; thread 0
// runs the epilogue. Small tiles and many blocks (N / 4: 1,024 for wo at 4,096 rows) keep all
// 132 SMs busy, with no long tail: the K split across the block is the split-K.
// Rows past N (N % 4) read row 0 of the tile and are never written. K must be a multiple
// of 16 bytes' worth of values; rows 16-byte aligned.
// grid: one block per tile (kernels_cuda.gemv_grid), block: gemv_block(K) threads, <= 256.
#define GEMV_ROWS 4
#define GEMV_UNROLL 2
#define GEMV_MAX_THREADS 256

// One round's loads: pieces base + u*T of the R rows and of x (a piece past the row rereads
// the thread's first one, and ok[u] says to add 0 for it).
template <class T>
__device__ __forceinline__ void gemv_fetch(const uint4* const* w, const uint4* xv, int base, int first, int n_vec,
                                           int T_, uint4 (&wr)[GEMV_UNROLL][GEMV_ROWS], uint4 (&xr)[GEMV_UNROLL],
                                           bool (&ok)[GEMV_UNROLL]) {
#pragma unroll
    for (int u = 0; u < GEMV_UNROLL; ++u) {
        const int v = base + u * T_;
        ok[u] = v < n_vec;
        const int at = ok[u] ? v : first;
#pragma unroll
        for (int r = 0; r < GEMV_ROWS; ++r) wr[u][r] = stream16(w[r] + at);
        xr[u] = raw16(xv + at);
    }
}

template <class T, bool NORM, class Epi>
__device__ __forceinline__ void gemv_tile(const T* __restrict__ x, const T* __restrict__ W, int K, float eps,
                                          const Epi& epi) {
    constexpr int E = Vec16<T>::N, R = GEMV_ROWS, U = GEMV_UNROLL;
    __shared__ float red[GEMV_MAX_THREADS / 32][R + 1];
    int rows[R];
    bool valid[R];
    epi.rows(blockIdx.x, rows, valid);
    const uint4* w[R];
#pragma unroll
    for (int r = 0; r < R; ++r) w[r] = reinterpret_cast<const uint4*>(W + (size_t)(valid[r] ? rows[r] : rows[0]) * K);
    const uint4* xv = reinterpret_cast<const uint4*>(x);
    const int n_vec = K / E, T_ = blockDim.x, first = threadIdx.x;
    float acc[R], ss = 0.f;
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = 0.f;
    // Software-pipelined: the next round's 4 x U loads of W (and U of x) are issued before
    // this round's FMAs, in a block of code of their own, so ptxas cannot interleave them
    // with the arithmetic (it does, inside one block, and then keeps only 2 or 3 in flight).
    uint4 wr[U][R], xr[U];
    bool ok[U];
    if (first < n_vec) gemv_fetch<T>(w, xv, first, first, n_vec, T_, wr, xr, ok);
    for (int v0 = first; v0 < n_vec; v0 += T_ * U) {
        uint4 cw[U][R], cx[U];
        bool cok[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            cx[u] = xr[u];
            cok[u] = ok[u];
#pragma unroll
            for (int r = 0; r < R; ++r) cw[u][r] = wr[u][r];
        }
        if (v0 + T_ * U < n_vec) gemv_fetch<T>(w, xv, v0 + T_ * U, first, n_vec, T_, wr, xr, ok);
#pragma unroll
        for (int u = 0; u < U; ++u) {
            float xf[E];
            widen16<T>(cx[u], xf);
#pragma unroll
            for (int e = 0; e < E; ++e) xf[e] = cok[u] ? xf[e] : 0.f;
            if (NORM)
#pragma unroll
                for (int e = 0; e < E; ++e) ss = fmaf(xf[e], xf[e], ss);
#pragma unroll
            for (int r = 0; r < R; ++r) {
                float wf[E];
                widen16<T>(cw[u][r], wf);
#pragma unroll
                for (int e = 0; e < E; ++e) acc[r] = fmaf(wf[e], xf[e], acc[r]);
            }
        }
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = (T_ + 31) >> 5;
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = warp_sum(acc[r]);
    if (NORM) ss = warp_sum(ss);
    if (lane == 0) {
#pragma unroll
        for (int r = 0; r < R; ++r) red[warp][r] = acc[r];
        red[warp][R] = ss;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float y[R], total = 0.f;
#pragma unroll
        for (int r = 0; r < R; ++r) y[r] = 0.f;
        for (int i = 0; i < n_warps; ++i) {
#pragma unroll
            for (int r = 0; r < R; ++r) y[r] += red[i][r];
            total += red[i][R];
        }
        const float scale = NORM ? 1.0f / sqrtf(total / (float)K + eps) : 1.0f;
#pragma unroll
        for (int r = 0; r < R; ++r) y[r] *= scale;
        epi.store(rows, valid, y);
    }
}

// ---------------------------------------------------------------- epilogues: which rows, what is written

// rows 4t .. 4t+3 of y [N]
template <class T>
struct Rows4 {
    int N;
    __device__ void rows(int t, int* r, bool* ok) const {
#pragma unroll
        for (int i = 0; i < GEMV_ROWS; ++i) {
            r[i] = GEMV_ROWS * t + i;
            ok[i] = r[i] < N;
        }
    }
};

template <class T>
struct Store : Rows4<T> {
    T* y;
    __device__ void store(const int* r, const bool* ok, const float* v) const {
        for (int i = 0; i < GEMV_ROWS; ++i)
            if (ok[i]) st(y + r[i], v[i]);
    }
};

// x[n] += y[n], y rounded to T first, as the engine adds a rounded block output to x
template <class T>
struct Residual : Rows4<T> {
    T* x;
    __device__ void store(const int* r, const bool* ok, const float* v) const {
        for (int i = 0; i < GEMV_ROWS; ++i)
            if (ok[i]) st(x + r[i], ld(x + r[i]) + rnd<T>(v[i]));
    }
};

// tile t: gate rows 2t, 2t+1 and up rows F+2t, F+2t+1 of W [2F, K]; h[2t + i] = silu(g) * u
template <class T>
struct SwiGLU {
    T* h;
    int F;
    __device__ void rows(int t, int* r, bool* ok) const {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            r[i] = 2 * t + i;
            r[2 + i] = F + 2 * t + i;
            ok[i] = ok[2 + i] = 2 * t + i < F;
        }
    }
    __device__ void store(const int* r, const bool* ok, const float* v) const {
        for (int i = 0; i < 2; ++i)
            if (ok[i]) {
                const float g = rnd<T>(v[i]), u = rnd<T>(v[2 + i]);  // gu as the engine stores it
                st(h + r[i], g / (1.0f + expf(-g)) * u);
            }
    }
};

// wqkv's rows are H query heads, KV key heads and KV value heads of hd rows each. Tile t:
// in head t / (hd/4), the rotate_half pairs (j, j + hd/2) for j = 2s, 2s + 1 (s = t % (hd/4)),
// so the RoPE of a pair happens where both halves are. The position is length[0] - 1 (embed
// already claimed the slot), read on the device.
template <class T>
struct Rope {
    const T* cos_t;
    const T* sin_t;
    const int* length;
    T* q;
    T* k_cache;
    T* v_cache;
    int H, KV, hd, M;
    __device__ void rows(int t, int* r, bool* ok) const {
        const int quarter = hd / 4, head = t / quarter, j = 2 * (t % quarter);
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            r[i] = head * hd + j + i;
            r[2 + i] = head * hd + j + i + hd / 2;
            ok[i] = ok[2 + i] = true;
        }
    }
    __device__ void store(const int* r, const bool*, const float* v) const {
        const int half = hd / 2, head = r[0] / hd, pos = length[0] - 1;
        for (int i = 0; i < 2; ++i) {
            const int j = r[i] - head * hd;
            const float a = rnd<T>(v[i]), b = rnd<T>(v[2 + i]);  // qkv as the engine stores it
            if (head >= H + KV) {  // a value head: into its slot, not rotated
                T* dst = v_cache + ((size_t)(head - H - KV) * M + pos) * hd;
                st(dst + j, a);
                st(dst + j + half, b);
                continue;
            }
            const T* c = cos_t + (size_t)pos * hd;
            const T* s = sin_t + (size_t)pos * hd;
            T* dst = head < H ? q + (size_t)head * hd : k_cache + ((size_t)(head - H) * M + pos) * hd;
            st(dst + j, a * ld(c + j) - b * ld(s + j));  // x*cos + rotate_half(x)*sin
            st(dst + j + half, b * ld(c + j + half) + a * ld(s + j + half));
        }
    }
};

// logits, and the greedy token: each block's best (value as stored, lowest index on ties)
// goes into one 64-bit atomicMax; the last block to finish (a ticket) writes the token and
// resets best and the ticket for the next launch.
template <class T>
struct Argmax : Rows4<T> {
    T* y;
    unsigned long long* best;
    unsigned* tickets;
    int* token;
    __device__ void store(const int* r, const bool* ok, const float* v) const {
        unsigned long long key = 0ull;
        for (int i = 0; i < GEMV_ROWS; ++i)
            if (ok[i]) {
                st(y + r[i], v[i]);
                const unsigned long long k = argmax_key(rnd<T>(v[i]), r[i]);
                key = k > key ? k : key;
            }
        atomicMax(best, key);
        __threadfence();  // this block's atomicMax before its ticket
        if (atomicAdd(tickets, 1u) == gridDim.x - 1) {
            token[0] = argmax_index(atomicExch(best, 0ull));
            atomicExch(tickets, 0u);
        }
    }
};

// ---------------------------------------------------------------- entry points
template <class T> __device__ void gemv_plain(const T* x, const T* W, T* y, int N, int K) {
    Store<T> e; e.N = N; e.y = y;
    gemv_tile<T, false>(x, W, K, 0.f, e);
}
template <class T> __device__ void gemv_norm(const T* x, const T* W, T* y, int N, int K, float eps) {
    Store<T> e; e.N = N; e.y = y;
    gemv_tile<T, true>(x, W, K, eps, e);
}
template <class T> __device__ void gemv_residual(const T* a, const T* W, T* x, int N, int K) {
    Residual<T> e; e.N = N; e.x = x;
    gemv_tile<T, false>(a, W, K, 0.f, e);
}
template <class T> __device__ void gemv_swiglu(const T* x, const T* W, T* h, int F, int K, float eps) {
    SwiGLU<T> e; e.h = h; e.F = F;
    gemv_tile<T, true>(x, W, K, eps, e);
}
template <class T>
__device__ void gemv_rope(const T* x, const T* W, const T* cos_t, const T* sin_t, const int* length, T* q,
                          T* k_cache, T* v_cache, int H, int KV, int hd, int M, int K, float eps) {
    Rope<T> e; e.cos_t = cos_t; e.sin_t = sin_t; e.length = length; e.q = q; e.k_cache = k_cache;
    e.v_cache = v_cache; e.H = H; e.KV = KV; e.hd = hd; e.M = M;
    gemv_tile<T, true>(x, W, K, eps, e);
}
template <class T>
__device__ void gemv_argmax(const T* x, const T* W, T* y, unsigned long long* best, unsigned* tickets, int* token,
                            int N, int K, float eps) {
    Argmax<T> e; e.N = N; e.y = y; e.best = best; e.tickets = tickets; e.token = token;
    gemv_tile<T, true>(x, W, K, eps, e);
}
extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS) gemv_f16(const __half* x, const __half* W, __half* y, int N, int K) {
    gemv_plain(x, W, y, N, K);
}
extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS) gemv_f32(const float* x, const float* W, float* y, int N, int K) {
    gemv_plain(x, W, y, N, K);
}
extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS) gemv_norm_f16(const __half* x, const __half* W, __half* y, int N, int K, float eps) {
    gemv_norm(x, W, y, N, K, eps);
}
extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS) gemv_norm_f32(const float* x, const float* W, float* y, int N, int K, float eps) {
    gemv_norm(x, W, y, N, K, eps);
}
extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS) gemv_residual_f16(const __half* a, const __half* W, __half* x, int N, int K) {
    gemv_residual(a, W, x, N, K);
}
extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS) gemv_residual_f32(const float* a, const float* W, float* x, int N, int K) {
    gemv_residual(a, W, x, N, K);
}
extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS) gemv_swiglu_f16(const __half* x, const __half* W, __half* h, int F, int K, float eps) {
    gemv_swiglu(x, W, h, F, K, eps);
}
extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS) gemv_swiglu_f32(const float* x, const float* W, float* h, int F, int K, float eps) {
    gemv_swiglu(x, W, h, F, K, eps);
}
extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS) gemv_rope_f16(const __half* x, const __half* W, const __half* cos_t,
                                            const __half* sin_t, const int* length, __half* q, __half* k_cache,
                                            __half* v_cache, int H, int KV, int hd, int M, int K, float eps) {
    gemv_rope(x, W, cos_t, sin_t, length, q, k_cache, v_cache, H, KV, hd, M, K, eps);
}
extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS) gemv_rope_f32(const float* x, const float* W, const float* cos_t, const float* sin_t,
                                            const int* length, float* q, float* k_cache, float* v_cache, int H,
                                            int KV, int hd, int M, int K, float eps) {
    gemv_rope(x, W, cos_t, sin_t, length, q, k_cache, v_cache, H, KV, hd, M, K, eps);
}
extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS) gemv_argmax_f16(const __half* x, const __half* W, __half* y, unsigned long long* best,
                                              unsigned* tickets, int* token, int N, int K, float eps) {
    gemv_argmax(x, W, y, best, tickets, token, N, K, eps);
}
extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS) gemv_argmax_f32(const float* x, const float* W, float* y, unsigned long long* best,
                                              unsigned* tickets, int* token, int N, int K, float eps) {
    gemv_argmax(x, W, y, best, tickets, token, N, K, eps);
}
