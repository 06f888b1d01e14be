"""core.pycheck: the names a rewrite brings in that the written file reads without defining."""
from torchport.core.pycheck import undefined_after

OLD = ("import os\n\n\ndef setup():\n    from torch.utils.cpp_extension import CUDA_HOME\n    return CUDA_HOME\n\n\n"
       "def detect(CUDA_HOME, so):\n    return os.path.join(CUDA_HOME, so)\n")


def test_a_rename_that_leaves_a_name_undefined_is_found():
    new = OLD.replace("join(CUDA_HOME", "join(MUSA_HOME")
    at = OLD.index("join(CUDA_HOME") + 5
    assert undefined_after(OLD, new, [(at, at + 9, "MUSA_HOME")]) == ["MUSA_HOME"]


def test_a_rename_bound_where_it_is_read_is_not():
    new = OLD.replace("CUDA_HOME", "MUSA_HOME")
    edits = [(i, i + 9, "MUSA_HOME") for i in range(len(OLD)) if OLD.startswith("CUDA_HOME", i)]
    assert undefined_after(OLD, new, edits) == []


def test_renaming_a_name_the_old_text_did_not_define_either_is_the_projects_business():
    old, new = "old_func(1)\n", "new_func(1)\n"
    assert undefined_after(old, new, [(0, 8, "new_func")]) == []


def test_names_in_strings_attributes_and_keywords_bring_nothing():
    old = "import torch\nx = torch.cuda.is_available()\nd = 'cuda'\ny = f(1)\n"
    new = "import torch\nx = torch.npu.is_available()\nd = 'npu'\ny = f(1, map_location='cpu')\n"
    at, quote, call = old.index("cuda."), old.index("'cuda'"), old.index("f(1)") + 3
    assert undefined_after(old, new, [(at, at + 4, "npu"), (quote, quote + 6, "'npu'"),
                                      (call, call, ", map_location='cpu'")]) == []
    assert undefined_after(old, new.replace("torch.npu", "npu_lib"), [(old.index("torch.cuda"), at + 4, "npu_lib")]) \
        == ["npu_lib"]


def test_a_star_import_or_a_syntax_error_tells_nothing():
    new = "from m import *\nprint(MUSA_HOME)\n"
    assert undefined_after("from m import *\nprint(CUDA_HOME)\n", new, [(22, 31, "MUSA_HOME")]) == []
    assert undefined_after("x = (\n", "y = (\n", [(0, 1, "y")]) == []
