import glob
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension, CUDA_HOME

sources = ["csrc/fused_ops.cpp"] + glob.glob("csrc/*.hip")
use_cuda = CUDA_HOME is not None or os.getenv("FORCE_CUDA", "0") == "1"

if use_cuda:
    ext = CUDAExtension(
        "fused_ops._C",
        sources,
        extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3", "--use_fast_math"]},
    )
else:
    ext = CppExtension("fused_ops._C", ["csrc/fused_ops.cpp"])

setup(
    name="fused_ops",
    packages=["fused_ops"],
    ext_modules=[ext],
    cmdclass={"build_ext": BuildExtension},
)
