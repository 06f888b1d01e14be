"""Stand-in for Ascend's zero-edit module (`from torch_npu.contrib import transfer_to_npu`): after the import,
CUDA spellings (torch.cuda.*, device="cuda", .cuda(), nccl) land on the simulated NPU.  It applies torchport's
own run-time mapping (torchport.runtime, what `torchport run --to npu` uses), with the policy of the vendors'
shims: every caller is told about the NPU."""
from torchport.runtime import patch

patch("npu", policy="always")
