#include <ATen/hip/HIPContext.h>
#include <c10/hip/HIPGuard.h>
#include <torch/extension.h>

#include "kernels/common.cuh"

template <typename scalar_t>
__global__ void bias_gelu_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ bias,
                                 scalar_t* __restrict__ out, int n, int cols) {
  CUDA_KERNEL_LOOP(i, n) {
    const float v = float(x[i]) + float(bias[i % cols]);
    out[i] = scalar_t(0.5f * v * (1.f + fast_tanh(0.7978845608f * (v + 0.044715f * v * v * v))));
  }
}

at::Tensor bias_gelu_cuda(const at::Tensor& x, const at::Tensor& bias) {
  TORCH_CHECK(x.is_cuda() && bias.is_cuda(), "bias_gelu: expected CUDA tensors (cudaStream_t in use)");
  at::cuda::CUDAGuard device_guard(x.device());
  auto out = at::empty_like(x);
  const int n = x.numel();
  hipStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "bias_gelu", [&] {
    bias_gelu_kernel<scalar_t><<<blocks_for(n), CUDA_NUM_THREADS, 0, stream>>>(
        x.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n, bias.numel());
  });
  AT_CUDA_CHECK(hipGetLastError());
  return out;
}
