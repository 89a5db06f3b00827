// Many values live at once: 72 registers on sm_90, so --maxrregcount=24 forces spills
// (test_nvrtc_check.py plants a spill with it).
extern "C" __global__ void many_live(const float* __restrict__ x, float* __restrict__ y, int n)
{
    float acc[48];
#pragma unroll
    for (int j = 0; j < 48; ++j) acc[j] = x[threadIdx.x + j * n];
#pragma unroll
    for (int k = 0; k < 8; ++k)
#pragma unroll
        for (int j = 0; j < 48; ++j) acc[j] = acc[j] * acc[(j + k + 1) % 48] + x[j];
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < 48; ++j) s += acc[j];
    y[threadIdx.x] = s;
}
