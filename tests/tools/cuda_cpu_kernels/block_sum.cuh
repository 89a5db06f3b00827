// A device helper in a header, with its own extern __shared__ array (uses_header.cu includes it).
#pragma once
__device__ float block_sum(float v) {
    extern __shared__ float scratch[];
    scratch[threadIdx.x] = v;
    __syncthreads();
    float t = 0.f;
    for (int i = 0; i < blockDim.x; ++i) t += scratch[i];
    return t;
}
