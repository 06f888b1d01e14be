import torch
s = torch.cuda.Stream()
x.record_stream(s)
