import torch


class M:
	def f(self, x):
		if torch.cuda.is_available():
			return x.to("cpu")
		return x
