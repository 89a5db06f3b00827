// cuda_cpu_glue.h — templates for the launchers build.py appends after a kernel source:
// call a kernel with its arguments taken from a `void** args` array (one pointer to each
// argument's value, as cuLaunchKernel takes them), and describe its compiled parameter types.
#pragma once
#include <string>
#include <type_traits>
#include <utility>

namespace kc_glue {
// A type's code for the Python side: numpy-like (f2, f4, i4, u8, ...), vectors as base x n,
// "raw" for byte-container vectors (uint4 ...) that any array may back, "?" for the rest.
template <class T> struct code { static std::string v() { return "?"; } };
#define KC_CODE(T, S) template <> struct code<T> { static std::string v() { return S; } };
KC_CODE(void, "void") KC_CODE(bool, "b1") KC_CODE(char, "i1") KC_CODE(signed char, "i1") KC_CODE(unsigned char, "u1")
KC_CODE(short, "i2") KC_CODE(unsigned short, "u2") KC_CODE(int, "i4") KC_CODE(unsigned, "u4")
KC_CODE(long, "i8") KC_CODE(unsigned long, "u8") KC_CODE(long long, "i8") KC_CODE(unsigned long long, "u8")
KC_CODE(float, "f4") KC_CODE(double, "f8") KC_CODE(__half, "f2") KC_CODE(__half2, "f2x2")
KC_CODE(float2, "f4x2") KC_CODE(float3, "f4x3") KC_CODE(float4, "f4x4") KC_CODE(double2, "f8x2")
KC_CODE(int2, "i4x2") KC_CODE(int3, "i4x3") KC_CODE(int4, "raw") KC_CODE(uint2, "raw") KC_CODE(uint4, "raw")
KC_CODE(char4, "raw") KC_CODE(uchar4, "raw") KC_CODE(short2, "i2x2") KC_CODE(ushort2, "u2x2")
KC_CODE(longlong2, "raw") KC_CODE(ulonglong2, "raw")
#undef KC_CODE

template <class T> std::string one() {
    if constexpr (std::is_pointer<T>::value) {
        using P = std::remove_cv_t<std::remove_pointer_t<T>>;
        std::string c = code<P>::v();
        if constexpr (std::is_void<P>::value) return "*void:1";
        else return (std::is_const<std::remove_pointer_t<T>>::value ? "*const " : "*") + c + ":" + std::to_string(alignof(P));
    } else {
        return code<std::remove_cv_t<T>>::v() + ":" + std::to_string(sizeof(T));
    }
}
template <class... P> std::string sig(void (*)(P...)) {
    std::string s;
    ((s += one<P>() + ","), ...);
    return s;
}
template <class... P, std::size_t... I> void call_(void (*f)(P...), void** a, std::index_sequence<I...>) {
    f(*static_cast<std::remove_cv_t<P>*>(a[I])...);
}
template <class... P> void call(void (*f)(P...), void** a) { call_(f, a, std::index_sequence_for<P...>{}); }
}  // namespace kc_glue
