#include "common.cuh"
// embed: out [D] = table[token[0]] (the token id is read on the device), and the step claims
// its cache slot: length[0] += 1, so every later kernel of the step reads the new length
// from device memory and a captured graph needs no new arguments per token.
// grid: ceil(D / 256), block: 256.
template <class T>
__device__ void embed(const T* __restrict__ table, const int* __restrict__ token, int* __restrict__ length,
                      T* __restrict__ out, int D) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < D) out[i] = table[(size_t)token[0] * D + i];
    if (i == 0) length[0] += 1;
}
extern "C" __global__ void embed_f16(const __half* table, const int* token, int* length, __half* out, int D) {
    embed(table, token, length, out, D);
}
extern "C" __global__ void embed_f32(const float* table, const int* token, int* length, float* out, int D) {
    embed(table, token, length, out, D);
}
