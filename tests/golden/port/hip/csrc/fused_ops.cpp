#include <torch/extension.h>
#include <torch/library.h>

at::Tensor bias_gelu_cuda(const at::Tensor& x, const at::Tensor& bias);
at::Tensor row_sum_cuda(const at::Tensor& x);

// Accumulate and cudaAccumulate below are our own names: a porter must not touch them.
static int Accumulate = 0;

at::Tensor bias_gelu(const at::Tensor& x, const at::Tensor& bias) {
  TORCH_CHECK(x.device().type() == at::kCUDA, "bias_gelu runs on CUDA only");
  Accumulate += 1;
  return bias_gelu_cuda(x, bias);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("bias_gelu", &bias_gelu, R"doc(GELU(x + bias); see cudaLaunchKernel docs)doc");
}

TORCH_LIBRARY(fused_ops, m) { m.def("row_sum(Tensor x) -> Tensor"); }

TORCH_LIBRARY_IMPL(fused_ops, CUDA, m) { m.impl("row_sum", &row_sum_cuda); }
