#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

#include "kernels/common.cuh"

// One warp per row: assumes a warp of 32 lanes.
__global__ void row_sum_kernel(const float* x, float* out, int rows, int cols) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float acc = 0.f;
  for (int c = lane; c < cols; c += 32) acc += x[row * cols + c];
  acc = warp_reduce_sum(acc);
  if (lane == 0) out[row] = acc;
}

at::Tensor row_sum_cuda(const at::Tensor& x) {
  auto out = at::empty({x.size(0)}, x.options());
  const int rows = x.size(0);
  auto stream = c10::cuda::getCurrentCUDAStream();
  row_sum_kernel<<<(rows + 7) / 8, 256, 0, stream>>>(x.data_ptr<float>(), out.data_ptr<float>(), rows, x.size(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
