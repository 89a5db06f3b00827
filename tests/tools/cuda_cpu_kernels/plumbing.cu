// Kernels that check the launch plumbing of tools/cuda_cpu rather than any maths.
#include <cuda_fp16.h>
#include <math_constants.h>

// b aliases a when the caller passes one array twice (or overlapping views).
extern "C" __global__ void alias_probe(float* a, const float* b, float* c)
{
    a[0] = 5.f;
    c[0] = b[0];
    c[1] = b[1];
}

// One parameter of each scalar type, written back as floats.
extern "C" __global__ void scalars(float* out, unsigned a, long long b, double c, __half d, size_t e, bool f)
{
    out[0] = (float)a; out[1] = (float)b; out[2] = (float)c; out[3] = __half2float(d); out[4] = (float)e;
    out[5] = f ? 1.f : 0.f;
}

extern "C" __global__ void fill(float* y) { y[threadIdx.x] = 1.f; }

extern "C" __global__ void minus_infinity(float* y) { y[0] = -CUDART_INF_F; }

// Not extern "C": its name is mangled, so get_function('not_exported') fails (on a GPU too).
__global__ void not_exported(float* y) { y[0] = 1.f; }

// A per-thread array of 256 KiB: more than a fiber's default stack (a GPU puts it in local memory).
extern "C" __global__ void big_local(float* y, int n)
{
    float big[65536];
    for (int i = 0; i < n; ++i) big[i] = (float)i;
    y[threadIdx.x] = big[n - 1];
}
