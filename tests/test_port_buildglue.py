"""Build glue for port-ext: setup.py / load() scripts and CMake files."""
import ast

from torchport.backends import load_target
from torchport.porting.buildglue import is_build_file, port_build_file

MUSA = load_target("musa").port
SUFFIXES = {".cu": ".mu", ".cuh": ".muh"}
FILES = {"csrc/a.cu", "csrc/b.cu"}


def exists(base, name):
    return (f"{base}/{name}" if base else name).lstrip("./") in FILES


def glue(text, rel="setup.py"):
    new, findings = port_build_file(rel, text, MUSA, SUFFIXES, exists)
    return new if new is not None else text, findings


def test_load_and_load_inline_move_with_their_keywords():
    text = ("from torch.utils.cpp_extension import load, load_inline\n"
            "ext = load(name='x', sources=['csrc/a.cu'], extra_cuda_cflags=['-O3'], with_cuda=True)\n"
            "inl = load_inline('y', cpp_sources=[s], cuda_sources=[c])\n")
    new, _ = glue(text, "build.py")
    assert new == ("from torch_musa.utils.musa_extension import load, load_inline\n"
                   "ext = load(name='x', sources=['csrc/a.mu'], extra_musa_cflags=['-O3'], with_musa=True)\n"
                   "inl = load_inline('y', cpp_sources=[s], musa_sources=[c])\n")


def test_aliases_and_split_imports_inside_blocks_keep_valid_python():
    text = ("import os\nif os.getenv(r'FORCE_CUDA', '0') == '1':\n"
            "    from torch.utils.cpp_extension import CppExtension, CUDAExtension as Ext\n"
            "    ext = Ext('m', ['csrc/b.cu', 'csrc/missing.cu'], extra_compile_args={'nvcc': []})\n")
    new, _ = glue(text)
    ast.parse(new)
    assert new == ("import os\nif os.getenv(r'FORCE_MUSA', '0') == '1':\n"
                   "    from torch.utils.cpp_extension import CppExtension\n"
                   "    from torch_musa.utils.musa_extension import MUSAExtension as Ext\n"
                   "    ext = Ext('m', ['csrc/b.mu', 'csrc/missing.cu'], extra_compile_args={'mcc': []})\n")


def test_names_not_imported_from_cpp_extension_are_the_users():
    text = "CUDA_HOME = '/opt/cuda'\nCUDAExtension = make_ext\nx = CUDAExtension('a', [])\n"
    new, findings = glue(text)
    assert new == text and findings == []


def test_attribute_uses_and_env_lookups_are_reported():
    text = ("import torch.utils.cpp_extension\nimport os\n"
            "e = torch.utils.cpp_extension.CUDAExtension('a', [])\nhome = os.environ['CUDA_HOME']\n")
    new, findings = glue(text)
    assert new == text
    assert [(f.line, f.action) for f in findings] == [(3, "advice"), (4, "advice")]
    assert "torch_musa.utils.musa_extension.MUSAExtension" in findings[0].message
    assert "MUSA_HOME" in findings[1].message


def test_cmake_renames_sources_and_reports_cuda_commands():
    text = ("project(x LANGUAGES CXX CUDA)\nfind_package(CUDAToolkit)\n"
            "add_library(k SHARED csrc/a.cu csrc/other.cu)\nset(CMAKE_CUDA_ARCHITECTURES 80)\n")
    new, findings = port_build_file("CMakeLists.txt", text, MUSA, SUFFIXES, exists)
    assert "csrc/a.mu csrc/other.cu" in new
    assert {f.line for f in findings if f.action == "advice"} == {1, 2, 4}


def test_which_files_are_build_files():
    assert is_build_file("setup.py", "from torch.utils.cpp_extension import CUDAExtension")
    assert is_build_file("cmake/cuda.cmake", "")
    assert not is_build_file("train.py", "import torch")


def test_syntax_error_is_reported_not_raised():
    new, findings = glue("from torch.utils.cpp_extension import (\n")
    assert new == "from torch.utils.cpp_extension import (\n" and "syntax error" in findings[0].message


def test_a_rename_never_crosses_into_a_function_that_binds_the_name_itself():
    """issue 30 class 6 (a collect_env.py): `def detect_compute_compatibility(CUDA_HOME, so_file)` keeps its
    parameter's uses; the module's own import and its reads elsewhere move to MUSA_HOME."""
    text = ("import os\nfrom torch.utils.cpp_extension import CUDA_HOME\n\n\n"
            "def detect_compute_compatibility(CUDA_HOME, so_file):\n"
            "    return os.path.join(CUDA_HOME, 'bin'), so_file\n\n\n"
            "def local():\n    CUDA_HOME = '/opt'\n    return CUDA_HOME\n\n\n"
            "def info():\n    return CUDA_HOME, detect_compute_compatibility(CUDA_HOME, 'x.so')\n")
    new, _ = glue(text, "collect_env.py")
    assert "def detect_compute_compatibility(CUDA_HOME, so_file):\n    return os.path.join(CUDA_HOME, 'bin')" in new
    assert "    CUDA_HOME = '/opt'\n    return CUDA_HOME\n" in new
    assert "import MUSA_HOME" in new and "return MUSA_HOME, detect_compute_compatibility(MUSA_HOME, 'x.so')" in new
    compile(new, "collect_env.py", "exec")
