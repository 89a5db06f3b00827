// common.cuh: included by every kernel source of this folder (cupy.RawModule and the
// project's CPU execution of CUDA C both get -I<this folder>, engine/gpu/kernels_cuda.py).
#pragma once
//
// Storage is float16 (__half) or float32; arithmetic is always float32 in registers, and a
// value is rounded once, when it is stored. Each kernel has an _f16 and an _f32 entry point,
// instances of one template.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#if !defined(KV_NO_CUDA_FP16) && __has_include(<cuda_fp16.h>)
#include <cuda_fp16.h>
#else
// No CUDA headers where NVRTC runs (a CuPy install without them): the two conversions the
// kernels use, as the PTX instructions cuda_fp16.h wraps (round to nearest even).
struct __align__(2) __half { unsigned short x; };
__device__ __forceinline__ float __half2float(__half h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.x));
    return f;
}
__device__ __forceinline__ __half __float2half_rn(float f) {
    __half h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
    return h;
}
#endif
#endif

__device__ __forceinline__ float ld(const float* p) { return *p; }
__device__ __forceinline__ float ld(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ void st(float* p, float v) { *p = v; }
__device__ __forceinline__ void st(__half* p, float v) { *p = __float2half_rn(v); }

// The value a float becomes once stored as T and read back (what the next kernel sees).
__device__ __forceinline__ float rounded(float v, const float*) { return v; }
__device__ __forceinline__ float rounded(float v, const __half*) { return __half2float(__float2half_rn(v)); }
template <class T> __device__ __forceinline__ float rnd(float v) { return rounded(v, (const T*)0); }

// 16 bytes (one 128-bit load): 8 float16 or 4 float32 values. A kernel issues its raw loads
// first (uint4 registers, nothing depends on them yet) and widens them to float32 after, so
// that the loads are in flight together: what keeps HBM busy at batch 1.
template <class T> struct Vec16 { static constexpr int N = 16 / sizeof(T); };
__device__ __forceinline__ uint4 raw16(const void* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }
// Data read once per step (weights, the KV cache): the streaming hint (evict first), so it
// does not push the small vectors every block rereads (x, q) out of L1.
__device__ __forceinline__ uint4 stream16(const void* p) { return __ldcs(reinterpret_cast<const uint4*>(p)); }
template <class T>
__device__ __forceinline__ void widen16(const uint4& u, float* f) {
    const T* e = reinterpret_cast<const T*>(&u);
#pragma unroll
    for (int i = 0; i < Vec16<T>::N; ++i) f[i] = ld(e + i);
}
template <class T>
__device__ __forceinline__ void load16(const T* p, float* f) { widen16<T>(raw16(p), f); }

// argmax by one 64-bit atomicMax: the float's bits made to order as unsigned integers (sign
// flipped for positives, all bits for negatives), the index below them inverted, so that the
// larger value wins and, between equal values, the smaller index (np.argmax's first one).
__device__ __forceinline__ unsigned long long argmax_key(float v, int i) {
    const unsigned b = __float_as_uint(v);
    const unsigned ordered = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    return ((unsigned long long)ordered << 32) | (unsigned long long)(0xffffffffu - (unsigned)i);
}
__device__ __forceinline__ int argmax_index(unsigned long long key) { return (int)(0xffffffffu - (unsigned)key); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the sum.
// red: 32 floats of shared memory. Called by all threads of the block (it has barriers).
__device__ __forceinline__ float block_sum(float v, float* red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = warp_sum(v);
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float total = 0.f;
    for (int w = 0; w < n_warps; ++w) total += red[w];
    __syncthreads();  // red may be reused by the caller
    return total;
}
