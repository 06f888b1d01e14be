import glob
import os

from setuptools import setup
from torch.utils.cpp_extension import CppExtension
from torch_musa.utils.musa_extension import BuildExtension, MUSAExtension, MUSA_HOME

sources = ["csrc/fused_ops.cpp"] + glob.glob("csrc/*.mu")
use_cuda = MUSA_HOME is not None or os.getenv("FORCE_MUSA", "0") == "1"

if use_cuda:
    ext = MUSAExtension(
        "fused_ops._C",
        sources,
        extra_compile_args={"cxx": ["-O3"], "mcc": ["-O3", "--use_fast_math"]},
    )
else:
    ext = CppExtension("fused_ops._C", ["csrc/fused_ops.cpp"])

setup(
    name="fused_ops",
    packages=["fused_ops"],
    ext_modules=[ext],
    cmdclass={"build_ext": BuildExtension},
)
