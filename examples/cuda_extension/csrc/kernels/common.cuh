// Helpers shared by the kernels.  Mentions of cudaMalloc or cudaStream_t in comments stay as
// they are: only code is ported.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#define CUDA_KERNEL_LOOP(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

constexpr int CUDA_NUM_THREADS = 256;

inline int blocks_for(int n) { return (n + CUDA_NUM_THREADS - 1) / CUDA_NUM_THREADS; }

template <typename T>
__device__ __forceinline__ T warp_reduce_sum(T value) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value += __shfl_down_sync(0xffffffff, value, offset);
  }
  return value;
}

template <typename T>
__device__ __forceinline__ T fast_tanh(T x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(float(x)));
  return T(y);
#else
  return tanh(x);
#endif
}
