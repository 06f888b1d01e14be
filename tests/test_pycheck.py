"""core.pycheck: the names a rewrite brings in that the written file reads without defining."""
from torchport.core.pycheck import undefined_after

OLD = ("import os\n\n\ndef setup():\n    from torch.utils.cpp_extension import CUDA_HOME\n    return CUDA_HOME\n\n\n"
       "def detect(CUDA_HOME, so):\n    return os.path.join(CUDA_HOME, so)\n")


def test_a_rename_that_leaves_a_name_undefined_is_found():
    new = OLD.replace("join(CUDA_HOME", "join(MUSA_HOME")
    assert undefined_after(OLD, new, [("CUDA_HOME", "MUSA_HOME")]) == ["MUSA_HOME"]


def test_a_rename_bound_where_it_is_read_is_not():
    new = OLD.replace("CUDA_HOME", "MUSA_HOME")
    assert undefined_after(OLD, new, [("CUDA_HOME", "MUSA_HOME")]) == []


def test_renaming_a_name_the_old_text_did_not_define_either_is_the_projects_business():
    old, new = "old_func(1)\n", "new_func(1)\n"
    assert undefined_after(old, new, [("old_func", "new_func")]) == []


def test_names_in_strings_and_attributes_bring_nothing():
    old = "import torch\nx = torch.cuda.is_available()\nd = 'cuda'\n"
    new = "import torch\nx = torch.npu.is_available()\nd = 'npu'\n"
    assert undefined_after(old, new, [("torch.cuda.is_available", "torch.npu.is_available"), ("'cuda'", "'npu'")]) == []


def test_a_star_import_or_a_syntax_error_tells_nothing():
    new = "from m import *\nprint(MUSA_HOME)\n"
    assert undefined_after("from m import *\nprint(CUDA_HOME)\n", new, [("CUDA_HOME", "MUSA_HOME")]) == []
    assert undefined_after("x = (\n", "y = (\n", [("x", "y")]) == []
