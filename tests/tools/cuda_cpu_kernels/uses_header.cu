// A kernel whose helper (and dynamic shared array) lives in a quoted #include.
#include "block_sum.cuh"

extern "C" __global__ void block_totals(const float* x, float* y)
{
    y[blockIdx.x * blockDim.x + threadIdx.x] = block_sum(x[blockIdx.x * blockDim.x + threadIdx.x]);
}
