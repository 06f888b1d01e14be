"""The target's package is imported at the module level of a converted file (TP001): an import of it inside a
function does not count, since the file's other lines need the device whether or not that function runs."""
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
