// cuda_cpu.h — the CUDA C names a kernel uses, for g++ on the CPU (tools/cuda_cpu).
//
// The loader force-includes this header before a kernel source, so the same .cu that NVRTC
// compiles for sm_90 compiles here unchanged: qualifiers, built-in variables, barriers and warp
// collectives (through the fiber scheduler of cuda_cpu_runtime.h), fp16, vector types, math
// intrinsics and atomics. A name a kernel needs and this header lacks is a g++ error, never a
// silent difference. `__KV_CUDA_CPU__` is defined; `__CUDACC__`, `__CUDA_ARCH__` are not.
#pragma once
#include <cmath>
#include <math.h>     // expf, fmaxf, sqrtf ... in the global namespace, as CUDA has them
#include <cstdio>     // printf in kernels
#include <limits.h>
#include <stdint.h>
#include <type_traits>
#include <utility>
#include "cuda_cpu_runtime.h"

#define __KV_CUDA_CPU__ 1

// NVRTC has no <math.h>, so INFINITY and NAN are undefined there: a kernel that used them would
// compile here and fail on the GPU. Remove them; kernels write CUDART_INF_F / CUDART_NAN_F from
// <math_constants.h> (the CUDA toolkit's header, mirrored in this folder) or __int_as_float(..).
#undef INFINITY
#undef NAN
#undef HUGE_VAL
#undef HUGE_VALF

// ------------------------------------------------------------------ qualifiers
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
// Static __shared__ variables are function-scope statics in one linker section, which the
// scheduler fills with 0xFF (NaN in fp16/fp32) before every block. `extern __shared__` arrays
// are rewritten by the loader into a pointer to the launch's dynamic shared memory.
#define __shared__ static __attribute__((section("kc_shared"), aligned(16)))
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __grid_constant__

// ------------------------------------------------------------------ built-in variables
#define threadIdx (::kc::G().cur->tid)
#define blockIdx (::kc::G().bidx)
#define blockDim (static_cast<const dim3&>(::kc::G().bdim))
#define gridDim (static_cast<const dim3&>(::kc::G().gdim))
#define warpSize 32

namespace kc {
inline void* dyn_shared() { return G().dyn; }

inline void wait_barrier(const char* file, int line, int pred, WOp op) {
    Fiber& F = *G().cur;
    F.file = file; F.line = line; F.pred = pred; F.op = op; F.st = BAR;
    to_sched();
}
inline uint64_t warp_op(const char* file, int line, WOp op, unsigned mask, uint64_t v, int arg, int width) {
    Fiber& F = *G().cur;
    if (width <= 0 || width > 32 || (width & (width - 1)))
        fail(std::string(wop_name(op)) + " at " + file + ":" + std::to_string(line) + ": width " + std::to_string(width) +
             " is not a power of two from 1 to 32");
    if (!((mask >> (F.lin % 32)) & 1)) {
        char b[64]; std::snprintf(b, sizeof b, "0x%08x", mask);
        fail(std::string(wop_name(op)) + " at " + file + ":" + std::to_string(line) + ": lane " + std::to_string(F.lin % 32) +
             " calls it with mask " + b + ", which does not name the lane itself");
    }
    F.file = file; F.line = line; F.op = op; F.mask = mask; F.val = v; F.arg = arg; F.width = width; F.st = WARP;
    to_sched();
    return F.res;
}
template <class T> inline uint64_t bits(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "warp shuffle of a type wider than 8 bytes");
    uint64_t u = 0; std::memcpy(&u, &v, sizeof(T)); return u;
}
template <class T> inline T unbits(uint64_t u) { T v; std::memcpy(&v, &u, sizeof(T)); return v; }
template <class T> inline T shfl(const char* f, int l, WOp op, unsigned m, T v, int a, int w) {
    return unbits<T>(warp_op(f, l, op, m, bits(v), a, w));
}
template <class T> inline T reduce(const char* f, int l, WOp op, unsigned m, T v) {
    static_assert(std::is_integral<T>::value && sizeof(T) == 4, "__reduce_*_sync takes 32-bit integers");
    return (T)(uint32_t)warp_op(f, l, op, m, (uint32_t)v, std::is_signed<T>::value, 32);
}
[[noreturn]] inline void assert_fail(const char* e, const char* file, int line) {
    fail(std::string("assert(") + e + ") failed at " + file + ":" + std::to_string(line));
}
}  // namespace kc

// ------------------------------------------------------------------ barriers, warp collectives
// Macros, so each wait knows its source line (messages name it; barriers are matched by it).
#define __syncthreads() ::kc::wait_barrier(__FILE__, __LINE__, 0, ::kc::W_SYNC)
#define __syncthreads_count(p) ((int)(::kc::wait_barrier(__FILE__, __LINE__, (p) != 0, ::kc::W_RADD), ::kc::G().cur->res))
#define __syncthreads_and(p) ((int)(::kc::wait_barrier(__FILE__, __LINE__, (p) != 0, ::kc::W_ALL), ::kc::G().cur->res))
#define __syncthreads_or(p) ((int)(::kc::wait_barrier(__FILE__, __LINE__, (p) != 0, ::kc::W_ANY), ::kc::G().cur->res))
#define __syncwarp(...) ((void)::kc::warp_op(__FILE__, __LINE__, ::kc::W_SYNC, ::kc::syncwarp_mask(__VA_ARGS__), 0, 0, 32))
namespace kc {
inline unsigned syncwarp_mask(unsigned m = 0xffffffffu) { return m; }
}
#define __shfl_sync(m, v, s, ...) ::kc::shfl(__FILE__, __LINE__, ::kc::W_IDX, (m), (v), (int)(s), ::kc::width_(__VA_ARGS__))
#define __shfl_xor_sync(m, v, s, ...) ::kc::shfl(__FILE__, __LINE__, ::kc::W_XOR, (m), (v), (int)(s), ::kc::width_(__VA_ARGS__))
#define __shfl_down_sync(m, v, s, ...) ::kc::shfl(__FILE__, __LINE__, ::kc::W_DOWN, (m), (v), (int)(s), ::kc::width_(__VA_ARGS__))
#define __shfl_up_sync(m, v, s, ...) ::kc::shfl(__FILE__, __LINE__, ::kc::W_UP, (m), (v), (int)(s), ::kc::width_(__VA_ARGS__))
#define __ballot_sync(m, p) ((unsigned)::kc::warp_op(__FILE__, __LINE__, ::kc::W_BALLOT, (m), (p) != 0, 0, 32))
#define __any_sync(m, p) ((int)::kc::warp_op(__FILE__, __LINE__, ::kc::W_ANY, (m), (p) != 0, 0, 32))
#define __all_sync(m, p) ((int)::kc::warp_op(__FILE__, __LINE__, ::kc::W_ALL, (m), (p) != 0, 0, 32))
#define __reduce_add_sync(m, v) ::kc::reduce(__FILE__, __LINE__, ::kc::W_RADD, (m), (v))
#define __reduce_min_sync(m, v) ::kc::reduce(__FILE__, __LINE__, ::kc::W_RMIN, (m), (v))
#define __reduce_max_sync(m, v) ::kc::reduce(__FILE__, __LINE__, ::kc::W_RMAX, (m), (v))
namespace kc {
inline int width_(int w = 32) { return w; }
}
// Lanes of the caller's warp that have not exited (the CPU has no notion of convergence).
inline unsigned __activemask() {
    kc::Global& g = kc::G();
    unsigned base = g.cur->lin / 32 * 32, m = 0;
    for (unsigned j = 0; j < 32 && base + j < g.f.size(); ++j)
        if (g.f[base + j].st != kc::DONE) m |= 1u << j;
    return m;
}
inline unsigned __lanemask_lt() { return (1u << (kc::G().cur->lin % 32)) - 1u; }
inline void __threadfence() { __asm__ volatile("" ::: "memory"); }
inline void __threadfence_block() { __asm__ volatile("" ::: "memory"); }
inline void __threadfence_system() { __asm__ volatile("" ::: "memory"); }
// A thread that sleeps lets the others run: a spin-wait with __nanosleep makes progress here.
inline void __nanosleep(unsigned) { kc::to_sched(); }
[[noreturn]] inline void __trap() { kc::fail("__trap() called"); }
inline long long clock64() { static long long t = 0; return t += 1000; }
#undef assert
#define assert(e) ((e) ? (void)0 : ::kc::assert_fail(#e, __FILE__, __LINE__))

// ------------------------------------------------------------------ vector types
#define KC_VEC2(T, N, A) struct alignas(A) N { T x, y; }; \
    inline N make_##N(T a, T b) { return N{a, b}; }
#define KC_VEC3(T, N) struct N { T x, y, z; }; \
    inline N make_##N(T a, T b, T c) { return N{a, b, c}; }
#define KC_VEC4(T, N, A) struct alignas(A) N { T x, y, z, w; }; \
    inline N make_##N(T a, T b, T c, T d) { return N{a, b, c, d}; }
KC_VEC2(float, float2, 8) KC_VEC3(float, float3) KC_VEC4(float, float4, 16)
KC_VEC2(int, int2, 8) KC_VEC3(int, int3) KC_VEC4(int, int4, 16)
KC_VEC2(unsigned, uint2, 8) KC_VEC4(unsigned, uint4, 16)
KC_VEC2(double, double2, 16)
KC_VEC2(short, short2, 4) KC_VEC2(unsigned short, ushort2, 4)
KC_VEC4(signed char, char4, 4) KC_VEC4(unsigned char, uchar4, 4)
KC_VEC2(long long, longlong2, 16) KC_VEC2(unsigned long long, ulonglong2, 16)
inline uint3 make_uint3(unsigned a, unsigned b, unsigned c) { return uint3{a, b, c}; }
#undef KC_VEC2
#undef KC_VEC3
#undef KC_VEC4

// ------------------------------------------------------------------ math
inline float rsqrtf(float x) noexcept { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) noexcept { return 1.0 / sqrt(x); }
inline float __expf(float x) noexcept { return expf(x); }
inline float __exp10f(float x) noexcept { return exp10f(x); }
inline float __logf(float x) noexcept { return logf(x); }
inline float __log2f(float x) noexcept { return log2f(x); }
inline float __log10f(float x) noexcept { return log10f(x); }
inline float __powf(float a, float b) noexcept { return powf(a, b); }
inline float __sinf(float x) noexcept { return sinf(x); }
inline float __cosf(float x) noexcept { return cosf(x); }
inline float __tanf(float x) noexcept { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) noexcept { *s = sinf(x); *c = cosf(x); }
inline float __fdividef(float a, float b) noexcept { return a / b; }
inline float __fdiv_rn(float a, float b) noexcept { return a / b; }
inline float __frcp_rn(float x) noexcept { return 1.0f / x; }
inline float __fsqrt_rn(float x) noexcept { return sqrtf(x); }
inline float __frsqrt_rn(float x) noexcept { return 1.0f / sqrtf(x); }
inline float __fadd_rn(float a, float b) noexcept { return a + b; }
inline float __fsub_rn(float a, float b) noexcept { return a - b; }
inline float __fmul_rn(float a, float b) noexcept { return a * b; }
inline float __fmaf_rn(float a, float b, float c) noexcept { return fmaf(a, b, c); }
inline float __saturatef(float x) noexcept { return x < 0.f ? 0.f : x > 1.f ? 1.f : x != x ? 0.f : x; }
inline int __float2int_rn(float x) noexcept { return (int)nearbyintf(x); }
inline int __float2int_rz(float x) noexcept { return (int)x; }
inline int __float2int_rd(float x) noexcept { return (int)floorf(x); }
inline int __float2int_ru(float x) noexcept { return (int)ceilf(x); }
inline unsigned __float2uint_rn(float x) noexcept { return (unsigned)nearbyintf(x); }
inline float __int2float_rn(int x) noexcept { return (float)x; }
inline float __uint2float_rn(unsigned x) noexcept { return (float)x; }
inline float __int_as_float(int i) noexcept { float f; std::memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) noexcept { int i; std::memcpy(&i, &f, 4); return i; }
inline float __uint_as_float(unsigned i) noexcept { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) noexcept { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline long long __double_as_longlong(double d) noexcept { long long i; std::memcpy(&i, &d, 8); return i; }
inline double __longlong_as_double(long long i) noexcept { double d; std::memcpy(&d, &i, 8); return d; }
inline int __clz(int x) noexcept { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long x) noexcept { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __popc(unsigned x) noexcept { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) noexcept { return __builtin_popcountll(x); }
inline int __ffs(int x) noexcept { return __builtin_ffs(x); }
inline int __ffsll(long long x) noexcept { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) noexcept {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1); x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4); return __builtin_bswap32(x);
}
inline int __mul24(int a, int b) noexcept { return (int)((long long)(a << 8 >> 8) * (b << 8 >> 8)); }
inline unsigned __umul24(unsigned a, unsigned b) noexcept { return (a & 0xFFFFFFu) * (b & 0xFFFFFFu); }
inline int __mulhi(int a, int b) noexcept { return (int)(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) noexcept { return (unsigned)(((unsigned long long)a * b) >> 32); }

// CUDA's global min/max overloads (mixed signed/unsigned ones return unsigned, as CUDA's do).
#define KC_MINMAX(R, A, B) \
    inline R min(A a, B b) noexcept { return (R)a < (R)b ? (R)a : (R)b; } \
    inline R max(A a, B b) noexcept { return (R)a > (R)b ? (R)a : (R)b; }
KC_MINMAX(int, int, int)
KC_MINMAX(unsigned, unsigned, unsigned)
KC_MINMAX(unsigned, int, unsigned)
KC_MINMAX(unsigned, unsigned, int)
KC_MINMAX(long, long, long)
KC_MINMAX(unsigned long, unsigned long, unsigned long)
KC_MINMAX(long long, long long, long long)
KC_MINMAX(unsigned long long, unsigned long long, unsigned long long)
KC_MINMAX(unsigned long long, long long, unsigned long long)
KC_MINMAX(unsigned long long, unsigned long long, long long)
#undef KC_MINMAX
inline float min(float a, float b) noexcept { return fminf(a, b); }
inline float max(float a, float b) noexcept { return fmaxf(a, b); }
inline double min(double a, double b) noexcept { return fmin(a, b); }
inline double max(double a, double b) noexcept { return fmax(a, b); }
inline double min(float a, double b) noexcept { return fmin(a, b); }
inline double max(float a, double b) noexcept { return fmax(a, b); }
inline double min(double a, float b) noexcept { return fmin(a, b); }
inline double max(double a, float b) noexcept { return fmax(a, b); }

// ------------------------------------------------------------------ loads, stores
// A GPU loads a T only from an address aligned to alignof(T) (a uint4 / float4 load is one
// 128-bit instruction): a misaligned one is cudaErrorMisalignedAddress there, an error here.
// x86-64 would load it anyway, so the check is explicit.
namespace kc {
template <class T> inline const T* aligned(const T* p, const char* what) {
    if (reinterpret_cast<uintptr_t>(p) % alignof(T))
        fail(std::string("misaligned ") + what + " of a " + std::to_string(sizeof(T)) + "-byte value at an address "
             + std::to_string(reinterpret_cast<uintptr_t>(p) % alignof(T)) + " bytes past a multiple of "
             + std::to_string(alignof(T)) + " (a GPU stops with cudaErrorMisalignedAddress)");
    return p;
}
}  // namespace kc
template <class T> inline T __ldg(const T* p) { return *kc::aligned(p, "__ldg"); }
template <class T> inline T __ldca(const T* p) { return *kc::aligned(p, "__ldca"); }
template <class T> inline T __ldcg(const T* p) { return *kc::aligned(p, "__ldcg"); }
template <class T> inline T __ldcs(const T* p) { return *kc::aligned(p, "__ldcs"); }
template <class T> inline T __ldlu(const T* p) { return *kc::aligned(p, "__ldlu"); }
template <class T> inline T __ldcv(const T* p) { return *kc::aligned(p, "__ldcv"); }
template <class T> inline void __stwb(T* p, T v) { *p = v; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stwt(T* p, T v) { *p = v; }

// ------------------------------------------------------------------ atomics
// One OS thread runs every CUDA thread and a fiber is never interrupted inside a call, so a
// plain read-modify-write is atomic here.
#define KC_ATOMIC(NAME, T, EXPR) inline T NAME(T* p, T v) { T o = *p; *p = (EXPR); return o; }
KC_ATOMIC(atomicAdd, int, o + v) KC_ATOMIC(atomicAdd, unsigned, o + v)
KC_ATOMIC(atomicAdd, unsigned long long, o + v) KC_ATOMIC(atomicAdd, float, o + v) KC_ATOMIC(atomicAdd, double, o + v)
KC_ATOMIC(atomicSub, int, o - v) KC_ATOMIC(atomicSub, unsigned, o - v)
KC_ATOMIC(atomicExch, int, v) KC_ATOMIC(atomicExch, unsigned, v) KC_ATOMIC(atomicExch, unsigned long long, v)
KC_ATOMIC(atomicExch, float, v)
KC_ATOMIC(atomicMax, int, o > v ? o : v) KC_ATOMIC(atomicMax, unsigned, o > v ? o : v)
KC_ATOMIC(atomicMax, long long, o > v ? o : v) KC_ATOMIC(atomicMax, unsigned long long, o > v ? o : v)
KC_ATOMIC(atomicMin, int, o < v ? o : v) KC_ATOMIC(atomicMin, unsigned, o < v ? o : v)
KC_ATOMIC(atomicMin, long long, o < v ? o : v) KC_ATOMIC(atomicMin, unsigned long long, o < v ? o : v)
KC_ATOMIC(atomicAnd, int, o & v) KC_ATOMIC(atomicAnd, unsigned, o & v) KC_ATOMIC(atomicAnd, unsigned long long, o & v)
KC_ATOMIC(atomicOr, int, o | v) KC_ATOMIC(atomicOr, unsigned, o | v) KC_ATOMIC(atomicOr, unsigned long long, o | v)
KC_ATOMIC(atomicXor, int, o ^ v) KC_ATOMIC(atomicXor, unsigned, o ^ v) KC_ATOMIC(atomicXor, unsigned long long, o ^ v)
KC_ATOMIC(atomicInc, unsigned, o >= v ? 0u : o + 1u) KC_ATOMIC(atomicDec, unsigned, (o == 0u || o > v) ? v : o - 1u)
#undef KC_ATOMIC
inline int atomicCAS(int* p, int c, int v) { int o = *p; if (o == c) *p = v; return o; }
inline unsigned atomicCAS(unsigned* p, unsigned c, unsigned v) { unsigned o = *p; if (o == c) *p = v; return o; }
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long c, unsigned long long v) {
    unsigned long long o = *p; if (o == c) *p = v; return o;
}
inline unsigned short atomicCAS(unsigned short* p, unsigned short c, unsigned short v) {
    unsigned short o = *p; if (o == c) *p = v; return o;
}

#include "cuda_cpu_fp16.h"

// NVRTC has no <stdint.h> either: fixed-width names used by a kernel would compile here and
// fail on the GPU. (The loader refuses `std::` in kernel sources for the same reason.)
#pragma GCC poison int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t
