import torch
import torch_mlu  # noqa: F401


class M:
	def f(self, x):
		if torch.mlu.is_available():
			return x.mlu()
		return x
