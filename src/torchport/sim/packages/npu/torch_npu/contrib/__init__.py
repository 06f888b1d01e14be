"""Stand-in for torch_npu.contrib on torchport's simulated device: only `transfer_to_npu` is modelled."""
