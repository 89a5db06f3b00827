// Planted bugs: each kernel sums x[0:n] into out[0] with one block of NT threads (or does a
// small copy) and gets one thing wrong that a GPU would not forgive. test_cuda_cpu_bugs.py
// checks that the CPU execution reports each one. sum_ok is the correct version.
#include <cuda_fp16.h>
#define NT 128

extern "C" __global__ void sum_ok(const float* x, int n, float* out)
{
    __shared__ float red[NT];
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += NT) s += x[i];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int k = NT / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = red[0];
}

// The barrier inside the halving loop is missing: a thread may read red[i + k] before the
// thread that owns it has added into it.
extern "C" __global__ void sum_missing_barrier(const float* x, int n, float* out)
{
    __shared__ float red[NT];
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += NT) s += x[i];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int k = NT / 2; k > 0; k >>= 1)
        if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
    if (threadIdx.x == 0) out[0] = red[0];
}

// The first barrier is missing: the halving starts before every thread has stored its sum.
extern "C" __global__ void sum_missing_first_barrier(const float* x, int n, float* out)
{
    __shared__ float red[NT];
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += NT) s += x[i];
    red[threadIdx.x] = s;
    for (int k = NT / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = red[0];
}

// The barrier sits inside the `if`: only the threads below k ever reach it.
extern "C" __global__ void sum_barrier_in_if(const float* x, int n, float* out)
{
    __shared__ float red[NT];
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += NT) s += x[i];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int k = NT / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) {
            red[threadIdx.x] += red[threadIdx.x + k];
            __syncthreads();
        }
    }
    if (threadIdx.x == 0) out[0] = red[0];
}

// Two different barriers in the two arms of a branch.
extern "C" __global__ void sum_barrier_if_else(const float* x, int n, float* out)
{
    __shared__ float red[NT];
    red[threadIdx.x] = threadIdx.x < n ? x[threadIdx.x] : 0.f;
    if (threadIdx.x % 2 == 0) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    if (threadIdx.x == 0) { float s = 0.f; for (int i = 0; i < NT; ++i) s += red[i]; out[0] = s; }
}

// Half of each warp skips a full-mask shuffle that reads from it.
extern "C" __global__ void sum_divergent_shuffle(const float* x, int n, float* out)
{
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += NT) s += x[i];
    if (threadIdx.x % 32 < 16)
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) out[0] = s;
}

// Shared memory slots nobody wrote are read (only 64 of NT are filled).
extern "C" __global__ void sum_uninit_shared(const float* x, int n, float* out)
{
    __shared__ float red[NT];
    if (threadIdx.x < 64) red[threadIdx.x] = threadIdx.x < n ? x[threadIdx.x] : 0.f;
    __syncthreads();
    if (threadIdx.x == 0) { float s = 0.f; for (int i = 0; i < NT; ++i) s += red[i]; out[0] = s; }
}

// Writes one element past the end of out.
extern "C" __global__ void sum_oob_write(const float* x, int n, float* out)
{
    if (threadIdx.x == 0) { float s = 0.f; for (int i = 0; i < n; ++i) s += x[i]; out[0] = s; out[1] = s; }
}

// Reads one element past the end of x (`<=` for `<`).
extern "C" __global__ void sum_oob_read(const float* x, int n, float* out)
{
    if (threadIdx.x == 0) { float s = 0.f; for (int i = 0; i <= n; ++i) s += x[i]; out[0] = s; }
}

// Reads x[-1].
extern "C" __global__ void sum_negative_index(const float* x, int n, float* out)
{
    if (threadIdx.x == 0) { float s = 0.f; for (int i = -1; i < n; ++i) s += x[i]; out[0] = s; }
}

// Writes into the input through a cast that drops const.
extern "C" __global__ void sum_writes_input(const float* x, int n, float* out)
{
    if (threadIdx.x == 0) { const_cast<float*>(x)[0] = 0.f; out[0] = 0.f; }
}

// Dynamic shared memory indexed past what the launch asked for (shared_mem = NT floats).
extern "C" __global__ void sum_dyn_shared_oob(const float* x, int n, float* out)
{
    extern __shared__ float buf[];
    buf[threadIdx.x + NT] = 1.f;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = buf[0];
}

// Thread 0 waits for a flag that thread 1 sets, with no barrier: a spin the CPU never leaves.
extern "C" __global__ void sum_spin_wait(const float* x, int n, float* out)
{
    __shared__ volatile int flag;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    if (threadIdx.x == 0) { while (flag == 0) { } out[0] = 1.f; }
    if (threadIdx.x == 1) flag = 1;
}

// A device-side assert that fails.
extern "C" __global__ void sum_assert(const float* x, int n, float* out)
{
    assert(n < 0);
}

// A 128-bit load from x + 1: 4 bytes past a 16-byte boundary (a misaligned vector load).
extern "C" __global__ void sum_misaligned_vector_load(const float* x, int n, float* out)
{
    if (threadIdx.x == 0) {
        const uint4 u = __ldg(reinterpret_cast<const uint4*>(x + 1));
        out[0] = __uint_as_float(u.x);
    }
}
