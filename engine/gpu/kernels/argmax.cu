#include "common.cuh"
// argmax: token[0] = the index of the largest logit (the first one on ties, as np.argmax),
// written on the device so that greedy decoding never waits for the host. The eager path's
// argmax: a captured greedy step has it in the LM head's epilogue (gemv_argmax_*).
// One block of 1024 threads reads the logits in 16-byte pieces, ARGMAX_DEPTH = 4 in flight
// per lane (128,256 float16 logits: 16,032 pieces, four rounds); the V % 8 values past the
// last whole piece are read one by one. Each thread keeps its best as a 64-bit key
// (common.cuh: argmax_key, larger value first, then the smaller index), the block reduces it.
// grid: 1, block: 1024.
#define ARGMAX_DEPTH 4
template <class T>
__device__ void argmax(const T* __restrict__ logits, int* __restrict__ token, int V) {
    constexpr int E = Vec16<T>::N;
    __shared__ unsigned long long best_w[32];
    const int tid = threadIdx.x, T_ = blockDim.x, n_vec = V / E;
    const uint4* lv = reinterpret_cast<const uint4*>(logits);
    unsigned long long best = 0ull;
    // software-pipelined as gemv.cu: the next round's loads are issued, in a block of code of
    // their own, before this round's compares (ptxas would otherwise sink them to their uses)
    uint4 raw[ARGMAX_DEPTH];
    if (n_vec > 0)
#pragma unroll
        for (int u = 0; u < ARGMAX_DEPTH; ++u) raw[u] = raw16(lv + min(tid + u * T_, n_vec - 1));
    for (int v0 = tid; v0 - tid < n_vec; v0 += T_ * ARGMAX_DEPTH) {  // the same trip count in every lane
        uint4 cur[ARGMAX_DEPTH];
#pragma unroll
        for (int u = 0; u < ARGMAX_DEPTH; ++u) cur[u] = raw[u];
        if (v0 - tid + T_ * ARGMAX_DEPTH < n_vec)
#pragma unroll
            for (int u = 0; u < ARGMAX_DEPTH; ++u) raw[u] = raw16(lv + min(v0 + (ARGMAX_DEPTH + u) * T_, n_vec - 1));
#pragma unroll
        for (int u = 0; u < ARGMAX_DEPTH; ++u) {
            const int v = v0 + u * T_;
            float f[E];
            widen16<T>(cur[u], f);
#pragma unroll
            for (int e = 0; e < E; ++e) {
                const unsigned long long k = argmax_key(f[e], v * E + e);
                best = (v < n_vec && k > best) ? k : best;
            }
        }
    }
    for (int i = n_vec * E + tid; i < V; i += T_) {
        const unsigned long long k = argmax_key(ld(logits + i), i);
        best = k > best ? k : best;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long other = __shfl_xor_sync(0xffffffffu, best, o);
        best = other > best ? other : best;
    }
    const int lane = tid & 31, warp = tid >> 5;
    if (lane == 0) best_w[warp] = best;
    __syncthreads();
    if (tid == 0) {
        for (int w = 1; w < (T_ >> 5); ++w) best = best_w[w] > best ? best_w[w] : best;
        token[0] = V > 0 ? argmax_index(best) : 0;
    }
}
extern "C" __global__ void __launch_bounds__(1024) argmax_f16(const __half* logits, int* token, int V) {
    argmax(logits, token, V);
}
extern "C" __global__ void __launch_bounds__(1024) argmax_f32(const float* logits, int* token, int V) {
    argmax(logits, token, V);
}
