import torch


class M:
	def f(self, x):
		if torch.accelerator.is_available():
			return x.to((torch.accelerator.current_accelerator() or torch.device("cpu")).type)
		return x
