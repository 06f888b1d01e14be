import torch
import torch_musa  # noqa: F401


class M:
	def f(self, x):
		if torch.musa.is_available():
			return x.musa()
		return x
