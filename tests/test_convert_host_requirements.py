"""TP209 on the targets that may run on the CPU (cpu; accelerator, where there is none): an assertion goes only
when it requires CUDA (true only where CUDA is there), and `if <...>: raise` is reported only when it raises
whenever CUDA is not there.  Before, any assert that mentioned is_available or device_count became `pass`: on
cpu `assert not (use_cuda_kernel and not torch.cuda.is_available())`, which holds on the CPU unless the project
asks for its CUDA kernel, was dropped with "an assertion that CUDA is there fails on the CPU"."""
import textwrap

import pytest

from torchport.converter.run import Converter

# (the test of an assert, whether it requires CUDA)
ASSERTS = [
    ("torch.cuda.is_available()", True),
    ('torch.cuda.is_available(), "needs a GPU"', True),
    ("is_available()", True),                                  # from torch.cuda import is_available
    ("use_kernel and torch.cuda.is_available()", True),
    ("torch.cuda.device_count() > 0", True),
    ("torch.cuda.device_count()", True),
    ("torch.cuda.device_count() >= n", True),
    ("n <= torch.cuda.device_count()", True),
    ("torch.cuda.device_count() == n", True),
    ("torch.cuda.is_initialized()", True),
    ("not (use_kernel and not torch.cuda.is_available())", False),
    ("torch.cuda.is_available() or not use_kernel", False),
    ("not use_kernel or torch.cuda.is_available()", False),
    ("not torch.cuda.is_available()", False),
    ("not torch.cuda.is_available() or n > 0", False),
    ("torch.cuda.device_count() < 8", False),
    ("torch.cuda.device_count() == 0 or n == 0", False),
    ("n >= torch.cuda.device_count()", False),
    ("torch.cuda.is_available() == False", False),
]


@pytest.mark.parametrize("target", ["cpu", "accelerator"])
@pytest.mark.parametrize("test,requires", ASSERTS, ids=[a for a, _ in ASSERTS])
def test_only_an_assert_that_requires_cuda_goes(target, test, requires):
    source = f"import torch\nfrom torch.cuda import is_available\n\n\ndef f(use_kernel, n):\n    assert {test}\n"
    new, findings, _ = Converter(target).convert_text("m.py", source.encode(), "python")
    text = new.decode() if new is not None else source
    removed = text.endswith("    pass\n")
    assert removed == requires, text
    assert any(f.rule == "TP209" for f in findings) == requires


RAISES = [
    ("not torch.cuda.is_available()", True),
    ("torch.cuda.device_count() < 1", True),
    ("torch.cuda.device_count() == 0", True),
    ("use_kernel and not torch.cuda.is_available()", False),
    ("torch.cuda.is_available()", False),
    ("not torch.cuda.is_available() and n > 0", False),
]


@pytest.mark.parametrize("test,reported", RAISES, ids=[a for a, _ in RAISES])
def test_a_raise_is_reported_only_when_it_raises_wherever_cuda_is_not_there(test, reported):
    source = f"import torch\n\n\ndef f(use_kernel, n):\n    if {test}:\n        raise RuntimeError('GPU')\n"
    _, findings, _ = Converter("cpu").convert_text("m.py", source.encode(), "python")
    assert [f.line for f in findings if f.rule == "TP209"] == ([5] if reported else [])


@pytest.mark.torch
def test_the_kept_conditional_assert_still_checks_on_the_cpu():
    """Run here (CPU torch): the converted check passes where the project asks for no CUDA kernel and still stops
    it where it asks for one, as the original does; `pass` let both through."""
    import torch

    source = textwrap.dedent('''
        import torch


        def check(use_cuda_kernel):
            assert not (use_cuda_kernel and not torch.cuda.is_available()), "the CUDA kernel needs a GPU"
            return "ok"
    ''')
    assert not torch.cuda.is_available()
    new, _, _ = Converter("cpu").convert_text("m.py", source.encode(), "python")
    for text in (source, new.decode() if new is not None else source):
        space: dict = {}
        exec(compile(text, "m.py", "exec"), space)
        assert space["check"](False) == "ok"
        with pytest.raises(AssertionError, match="the CUDA kernel needs a GPU"):
            space["check"](True)
