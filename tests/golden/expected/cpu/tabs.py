import torch


class M:
	def f(self, x):
		if torch.cpu.is_available():
			return x.to("cpu")
		return x
