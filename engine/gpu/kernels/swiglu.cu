#include "common.cuh"
// swiglu: out [F] = silu(gate) * up with gu = gate | up [2F]; float32 inside.
// grid: ceil(F / 256), block: 256.
template <class T>
__device__ void swiglu(const T* __restrict__ gu, T* __restrict__ out, int F) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= F) return;
    const float g = ld(gu + i), u = ld(gu + F + i);
    st(out + i, g / (1.0f + expf(-g)) * u);
}
extern "C" __global__ void swiglu_f16(const __half* gu, __half* out, int F) { swiglu(gu, out, F); }
extern "C" __global__ void swiglu_f32(const float* gu, float* out, int F) { swiglu(gu, out, F); }
