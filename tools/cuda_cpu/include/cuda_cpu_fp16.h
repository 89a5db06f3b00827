// cuda_cpu_fp16.h — __half / __half2 and the cuda_fp16.h functions kernels use, on the CPU.
// Storage is IEEE binary16; conversions go through GCC's _Float16, which rounds to nearest
// even like __float2half. Arithmetic is done in float and rounded once to fp16, which for
// +, -, *, / of fp16 operands gives the correctly rounded fp16 result, as the GPU's HADD/HMUL.
// As in cuda_fp16.h, -D__CUDA_NO_HALF_OPERATORS__ / __CUDA_NO_HALF_CONVERSIONS__ /
// __CUDA_NO_HALF2_OPERATORS__ remove the operators and implicit conversions.
#pragma once
#include <cstring>

namespace kc {
// fp16 -> fp32 for all 65536 bit patterns (exact), built once: a table read instead of a libgcc
// call for every load of a half.
struct HalfTable {
    float v[65536];
    HalfTable() {
        for (unsigned i = 0; i < 65536; ++i) {
            unsigned short u = (unsigned short)i; _Float16 h; std::memcpy(&h, &u, 2); v[i] = (float)h;
        }
    }
};
inline const HalfTable half_table;
}  // namespace kc

struct __half_raw { unsigned short x; };
struct __half2_raw { unsigned short x, y; };

struct alignas(2) __half {
    unsigned short __x;
    __half() = default;
    constexpr __half(__half_raw r) : __x(r.x) {}
    operator __half_raw() const { return __half_raw{__x}; }
    static __half from_float(float f) {
        _Float16 h = (_Float16)f; __half r; std::memcpy(&r.__x, &h, 2); return r;
    }
    float to_float() const { return kc::half_table.v[__x]; }
#if !defined(__CUDA_NO_HALF_CONVERSIONS__)
    __half(float f) : __x(from_float(f).__x) {}
    __half(double f) : __x(from_float((float)f).__x) {}   // CUDA rounds double -> half in one step; equal except at rare ties
    __half(int i) : __x(from_float((float)i).__x) {}
    __half(unsigned i) : __x(from_float((float)i).__x) {}
    __half(long long i) : __x(from_float((float)i).__x) {}
    __half(unsigned long long i) : __x(from_float((float)i).__x) {}
    __half(short i) : __x(from_float((float)i).__x) {}
    __half(unsigned short i) : __x(from_float((float)i).__x) {}
    operator float() const { return to_float(); }
    __half& operator=(float f) { __x = from_float(f).__x; return *this; }
#endif
};
struct alignas(4) __half2 {
    __half x, y;
    __half2() = default;
    constexpr __half2(__half a, __half b) : x(a), y(b) {}
    __half2(__half2_raw r) { x.__x = r.x; y.__x = r.y; }
    operator __half2_raw() const { return __half2_raw{x.__x, y.__x}; }
};
typedef __half half;
typedef __half2 half2;

inline float __half2float(__half h) { return h.to_float(); }
inline __half __float2half(float f) { return __half::from_float(f); }
inline __half __float2half_rn(float f) { return __half::from_float(f); }
inline __half __double2half(double d) { return __half::from_float((float)d); }
inline __half __int2half_rn(int i) { return __half::from_float((float)i); }
inline int __half2int_rn(__half h) { return (int)nearbyintf(h.to_float()); }
inline int __half2int_rz(__half h) { return (int)h.to_float(); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline short __half_as_short(__half h) { return (short)h.__x; }
inline __half __ushort_as_half(unsigned short u) { __half h; h.__x = u; return h; }
inline __half __short_as_half(short u) { __half h; h.__x = (unsigned short)u; return h; }
inline __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
inline __half2 __half2half2(__half a) { return __half2(a, a); }
inline __half2 __float2half2_rn(float a) { return __half2(__float2half(a), __float2half(a)); }
inline __half2 __floats2half2_rn(float a, float b) { return __half2(__float2half(a), __float2half(b)); }
inline __half2 __float22half2_rn(float2 f) { return __half2(__float2half(f.x), __float2half(f.y)); }
inline float2 __half22float2(__half2 h) { return make_float2(h.x.to_float(), h.y.to_float()); }
inline float __low2float(__half2 h) { return h.x.to_float(); }
inline float __high2float(__half2 h) { return h.y.to_float(); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
inline __half2 __low2half2(__half2 a) { return __half2(a.x, a.x); }
inline __half2 __high2half2(__half2 a) { return __half2(a.y, a.y); }
inline __half2 __lowhigh2highlow(__half2 a) { return __half2(a.y, a.x); }

#define KC_H(a) ((a).to_float())
#define KC_HF(e) __half::from_float(e)
inline __half __hadd(__half a, __half b) { return KC_HF(KC_H(a) + KC_H(b)); }
inline __half __hsub(__half a, __half b) { return KC_HF(KC_H(a) - KC_H(b)); }
inline __half __hmul(__half a, __half b) { return KC_HF(KC_H(a) * KC_H(b)); }
inline __half __hdiv(__half a, __half b) { return KC_HF(KC_H(a) / KC_H(b)); }
inline __half __hfma(__half a, __half b, __half c) { return KC_HF((float)((double)KC_H(a) * KC_H(b) + KC_H(c))); }
inline __half __hneg(__half a) { return __ushort_as_half(a.__x ^ 0x8000u); }
inline __half __habs(__half a) { return __ushort_as_half(a.__x & 0x7FFFu); }
inline __half __hmax(__half a, __half b) { return KC_HF(fmaxf(KC_H(a), KC_H(b))); }
inline __half __hmin(__half a, __half b) { return KC_HF(fminf(KC_H(a), KC_H(b))); }
inline bool __heq(__half a, __half b) { return KC_H(a) == KC_H(b); }
inline bool __hne(__half a, __half b) { return KC_H(a) != KC_H(b); }
inline bool __hlt(__half a, __half b) { return KC_H(a) < KC_H(b); }
inline bool __hle(__half a, __half b) { return KC_H(a) <= KC_H(b); }
inline bool __hgt(__half a, __half b) { return KC_H(a) > KC_H(b); }
inline bool __hge(__half a, __half b) { return KC_H(a) >= KC_H(b); }
inline bool __hisnan(__half a) { return (a.__x & 0x7FFFu) > 0x7C00u; }
inline int __hisinf(__half a) { return (a.__x & 0x7FFFu) == 0x7C00u ? ((a.__x & 0x8000u) ? -1 : 1) : 0; }
inline __half hexp(__half a) { return KC_HF(expf(KC_H(a))); }
inline __half hlog(__half a) { return KC_HF(logf(KC_H(a))); }
inline __half hsqrt(__half a) { return KC_HF(sqrtf(KC_H(a))); }
inline __half hrsqrt(__half a) { return KC_HF(1.0f / sqrtf(KC_H(a))); }
inline __half hrcp(__half a) { return KC_HF(1.0f / KC_H(a)); }
#define KC_H2(F, OP) inline __half2 F(__half2 a, __half2 b) { return __half2(OP(a.x, b.x), OP(a.y, b.y)); }
KC_H2(__hadd2, __hadd) KC_H2(__hsub2, __hsub) KC_H2(__hmul2, __hmul) KC_H2(__h2div, __hdiv)
KC_H2(__hmax2, __hmax) KC_H2(__hmin2, __hmin)
#undef KC_H2
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return __half2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }
inline __half2 __hneg2(__half2 a) { return __half2(__hneg(a.x), __hneg(a.y)); }
inline __half2 __habs2(__half2 a) { return __half2(__habs(a.x), __habs(a.y)); }
inline __half2 h2exp(__half2 a) { return __half2(hexp(a.x), hexp(a.y)); }
inline __half2 h2sqrt(__half2 a) { return __half2(hsqrt(a.x), hsqrt(a.y)); }

#if !defined(__CUDA_NO_HALF_OPERATORS__)
inline __half operator+(const __half& a, const __half& b) { return __hadd(a, b); }
inline __half operator-(const __half& a, const __half& b) { return __hsub(a, b); }
inline __half operator*(const __half& a, const __half& b) { return __hmul(a, b); }
inline __half operator/(const __half& a, const __half& b) { return __hdiv(a, b); }
inline __half& operator+=(__half& a, const __half& b) { return a = __hadd(a, b); }
inline __half& operator-=(__half& a, const __half& b) { return a = __hsub(a, b); }
inline __half& operator*=(__half& a, const __half& b) { return a = __hmul(a, b); }
inline __half& operator/=(__half& a, const __half& b) { return a = __hdiv(a, b); }
inline __half operator-(const __half& a) { return __hneg(a); }
inline __half operator+(const __half& a) { return a; }
inline bool operator==(const __half& a, const __half& b) { return __heq(a, b); }
inline bool operator!=(const __half& a, const __half& b) { return __hne(a, b); }
inline bool operator<(const __half& a, const __half& b) { return __hlt(a, b); }
inline bool operator<=(const __half& a, const __half& b) { return __hle(a, b); }
inline bool operator>(const __half& a, const __half& b) { return __hgt(a, b); }
inline bool operator>=(const __half& a, const __half& b) { return __hge(a, b); }
#endif
#if !defined(__CUDA_NO_HALF2_OPERATORS__)
inline __half2 operator+(const __half2& a, const __half2& b) { return __hadd2(a, b); }
inline __half2 operator-(const __half2& a, const __half2& b) { return __hsub2(a, b); }
inline __half2 operator*(const __half2& a, const __half2& b) { return __hmul2(a, b); }
inline __half2 operator/(const __half2& a, const __half2& b) { return __h2div(a, b); }
inline __half2& operator+=(__half2& a, const __half2& b) { return a = __hadd2(a, b); }
inline __half2& operator*=(__half2& a, const __half2& b) { return a = __hmul2(a, b); }
inline __half2 operator-(const __half2& a) { return __hneg2(a); }
#endif
#undef KC_H
#undef KC_HF

inline __half2 atomicAdd(__half2* p, __half2 v) { __half2 o = *p; *p = __hadd2(o, v); return o; }
inline __half atomicAdd(__half* p, __half v) { __half o = *p; *p = __hadd(o, v); return o; }
