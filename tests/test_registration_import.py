"""The target's package is imported at the module level of a converted file (TP001): an import of it inside a
function does not count, since the file's other lines need the device whether or not that function runs."""
import ast

import pytest

from torchport.converter.run import Converter

# accelerate 1.15.0 src/accelerate/utils/imports.py: its only `import torch_npu` is inside is_npu_available()
IN_A_FUNCTION = '''import torch


def npu_installed():
    try:
        import torch_npu  # noqa: F401
    except ImportError:
        return False
    return True


x = torch.zeros(2).cuda()
'''


@pytest.mark.parametrize("target", ["npu", "mlu", "musa"])
def test_an_import_inside_a_function_does_not_register_the_device(target):
    text = IN_A_FUNCTION.replace("torch_npu", f"torch_{target}")
    new, findings, _ = Converter(target).convert_text("m.py", text.encode(), "python")
    out = new.decode()
    assert out.splitlines()[1] == f"import torch_{target}  # noqa: F401" and f".{target}()" in out
    assert [f.line for f in findings if f.rule == "TP001"] == [1]
    # a second pass (what check does on the output) finds nothing more to add
    again, more, _ = Converter(target).convert_text("m.py", new, "python")
    assert again is None and not [f for f in more if f.rule == "TP001"]


def test_an_import_at_module_level_counts_even_under_try():
    text = "import torch\ntry:\n    import torch_npu\nexcept ImportError:\n    pass\nx = torch.zeros(2).cuda()\n"
    new, findings, _ = Converter("npu").convert_text("m.py", text.encode(), "python")
    assert new.decode().count("import torch_npu") == 1 and not [f for f in findings if f.rule == "TP001"]


def test_a_file_that_imports_torch_only_in_a_function_keeps_its_own_registration_there():
    """The import beside torch's, in the one function that imports torch, does register: nothing is added (a
    second one would be added on every pass)."""
    text = "def f():\n    import torch\n    import torch_npu\n    return torch.zeros(1).cuda()\n"
    new, findings, _ = Converter("npu").convert_text("m.py", text.encode(), "python")
    assert new.decode().count("import torch_npu") == 1 and not [f for f in findings if f.rule == "TP001"]


# ---------------------------------------------------------------- where the registration import runs
def _registration_place(out: str, module: str = "torch_npu") -> tuple:
    """(the statement list holding `import <module>`, its index there, the module's tree) of a converted file."""
    tree = ast.parse(out)
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                for i, stmt in enumerate(block):
                    if isinstance(stmt, ast.Import) and [a.name for a in stmt.names] == [module]:
                        return block, i, tree
    raise AssertionError(f"no `import {module}` in:\n{out}")


def _npu(text: str) -> tuple:
    new, findings, _ = Converter("npu").convert_text("m.py", text.encode(), "python")
    assert new is not None
    return new.decode(), findings


NEVER_RUNS = ["from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n", "import typing\n\nif typing.TYPE_CHECKING:\n",
              "if False:\n", "if 0:\n"]


@pytest.mark.parametrize("head", NEVER_RUNS)
def test_the_registration_import_is_never_written_in_a_block_that_never_runs(head):
    """pytorch-ignite 0.5.5's shape: the first torch import is a typing-only one; the registration goes after the
    import that runs."""
    text = head + "    from torch.amp import GradScaler\n\nimport torch\n\nx = torch.zeros(2).cuda()\n"
    out, _ = _npu(text)
    block, i, tree = _registration_place(out)
    assert block is tree.body and isinstance(block[i - 1], ast.Import) and block[i - 1].names[0].name == "torch"


def test_an_import_rewritten_to_the_target_under_type_checking_is_not_where_the_registration_goes():
    text = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from torch.cuda.amp import GradScaler\n"
            "import torch\n\n\ndef f(s: 'GradScaler'):\n    return torch.zeros(1).cuda()\n")
    out, _ = _npu(text)
    block, i, tree = _registration_place(out)
    assert block is tree.body and out.splitlines()[4] == "import torch_npu  # noqa: F401"


def test_a_user_registration_import_under_type_checking_does_not_count():
    text = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch_npu\nimport torch\nx = torch.zeros(1).cuda()\n"
    out, findings = _npu(text)
    assert out.count("import torch_npu") == 2 and [f.line for f in findings if f.rule == "TP001"] == [4]
    block, _i, tree = _registration_place(out.replace("    import torch_npu\n", "    pass\n"))
    assert block is tree.body


def test_an_optional_torch_submodule_first_leaves_the_registration_to_the_import_that_always_runs():
    text = ("try:\n    from torch.utils.tensorboard import SummaryWriter\nexcept ImportError:\n    SummaryWriter = None\n"
            "import torch\nx = torch.zeros(1).cuda()\n")
    out, _ = _npu(text)
    block, i, tree = _registration_place(out)
    assert block is tree.body and block[i - 1].names[0].name == "torch"


@pytest.mark.parametrize("text", [
    # torch is surely loaded after the statement (every path imports it, or raises): after the whole statement
    "try:\n    import torch\nexcept ImportError:\n    raise SystemExit('needs torch')\n",
    "import sys\nif sys.version_info >= (3, 8):\n    import torch\nelse:\n    import torch\n",
    "try:\n    from torch.cuda.amp import autocast\nexcept ImportError:\n    from torch.amp import autocast\nimport os\n",
])
def test_a_statement_that_loads_torch_on_every_path_gets_the_registration_after_it(text):
    out, _ = _npu(text + "x = __import__('torch').zeros(1).cuda()\n")
    block, i, tree = _registration_place(out)
    assert block is tree.body and isinstance(block[i - 1], (ast.Try, ast.If))


def test_optional_torch_gets_the_registration_beside_it():
    """`try: import torch` / `except ImportError: torch = None`: the file works without torch; the registration
    runs exactly when torch was imported (after it in the try), not unconditionally after the statement."""
    text = "try:\n    import torch\nexcept ImportError:\n    torch = None\n\n\ndef f():\n    return torch.zeros(1).cuda()\n"
    out, _ = _npu(text)
    block, i, tree = _registration_place(out)
    assert block is tree.body[0].body and i == 1


def test_a_module_level_import_counts_before_an_earlier_one_in_a_function():
    text = "def f():\n    import torch\n    return torch.zeros(1).cuda()\n\n\nimport torch\nx = torch.zeros(1)\n"
    out, _ = _npu(text)
    block, _i, tree = _registration_place(out)
    assert block is tree.body
