"""Device choices (converter/rules/devices.py device_choice, asked_beside): "cuda" beside another device's string
in a list, tuple or set (`parametrize("device", ["cpu", "cuda"])`, `choices=[...]`, `for d in ("cpu", "cuda")`),
a pytest.param whose marks ask whether CUDA is there, and "cuda" compared beside that question are devices
(TP207) on device targets; on the host, and without a device sibling, they stay for review (TP206)."""
import ast

import pytest

from torchport.converter.run import Converter, kind_of

DEVICE_TARGETS = ["npu", "mlu", "musa", "xpu", "mps"]

# timm 1.0.31 tests/test_layers_pos_embed.py:232-235, tests/test_utils.py:336-337, tests/test_multilabel.py:999-1000
TIMM = '''import pytest
import torch


@pytest.fixture(params=['cpu', 'cuda'])
def rope_device(request):
    if request.param == 'cuda' and not torch.cuda.is_available():
        pytest.skip('CUDA unavailable')
    return torch.device(request.param)


@pytest.mark.parametrize('device', [
    'cpu', pytest.param('cuda', marks=pytest.mark.skipif(not torch.cuda.is_available(), reason='CUDA required')),
])
def test_rng(device):
    pass


@pytest.mark.parametrize('source,flag,device', [
    pytest.param('hfds', True, 'cuda', marks=pytest.mark.skipif(
        not torch.cuda.is_available(), reason='requires CUDA')),
])
def test_loader(source, flag, device):
    pass
'''


def _convert(text: str, target: str):
    """(converted text, [(line, rule, action)] of the device-string findings)."""
    new, findings, _ = Converter(target).convert_text("m.py", text.encode(), kind_of("m.py"))
    out = text if new is None else new.decode()
    return out, sorted((f.line, f.rule, f.action) for f in findings if f.rule in ("TP206", "TP207"))


def _strings(text: str) -> list:
    return [n.value for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _asked(node) -> set:
    """The namespaces a test asks about: `torch.npu.is_available()` -> {"npu"}."""
    return {n.value.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
            and n.attr in ("is_available", "device_count") and isinstance(n.value, ast.Attribute)}


@pytest.mark.parametrize("target", DEVICE_TARGETS)
def test_timm_device_parameters_follow_their_question(target):
    """Each device parameter guarded by a device question names the device the question asks about."""
    out, found = _convert(TIMM, target)
    assert "cuda" not in _strings(out)
    assert [f for f in found if f[1] == "TP206"] == []
    tree = ast.parse(out)
    params = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and getattr(c.func, "attr", "") == "param"]
    assert len(params) == 2
    for call in params:
        marks = next(k.value for k in call.keywords if k.arg == "marks")
        devices = {a.value for a in call.args if isinstance(a, ast.Constant) and a.value in (target, "cuda")}
        assert devices == {target} and _asked(marks) == {target}
    skip = next(n for n in ast.walk(tree) if isinstance(n, ast.BoolOp))  # request.param == X and not ...
    assert skip.values[0].comparators[0].value == target and _asked(skip) == {target}


def test_the_host_keeps_the_choices_for_review():
    """On cpu the list would hold "cpu" twice: the strings stay, reported as before."""
    out, found = _convert(TIMM, "cpu")
    assert _strings(out).count("cuda") == 4
    assert [f for f in found if f[1] == "TP207"] == []
    assert [line for line, rule, _ in found if rule == "TP206"] == [5, 7, 13, 20]


def test_accelerator_asks_at_run_time():
    out, _ = _convert(TIMM, "accelerator")
    assert "cuda" not in _strings(out)
    assert "pytest.param((torch.accelerator.current_accelerator() or torch.device(\"cpu\")).type, marks" in out


@pytest.mark.parametrize("form,line", [
    ("@pytest.mark.parametrize('device', ['cpu', 'cuda'])\ndef test(device):\n    pass\n", 4),
    ("@pytest.mark.parametrize('d', ('mps', 'cuda:0'))\ndef test(d):\n    pass\n", 4),
    ("CHOICES = {'cpu', 'cuda'}\n", 4),
    ("for device in ('cpu', 'cuda'):\n    print(device)\n", 4),
    ("for d in ['cuda', 'cpu', 'auto']:\n    print(d)\n", 4),
    ("P = [pytest.param('cuda', id='gpu'), 'cpu']\n", 4),
    ("P = [pytest.param('cuda', 1), pytest.param('cpu', 2)]\n", 4),
    ("P = pytest.param('cuda', marks=pytest.mark.skipif(torch.cuda.device_count() < 2, reason='2 GPUs'))\n", 4),
    ("def f(x):\n    return x == 'cuda' or torch.cuda.is_available()\n", 5),
])
def test_device_choices_are_devices(form, line):
    out, found = _convert("import pytest\nimport torch\n\n" + form, "npu")
    assert (line, "TP207", "modify") in found
    assert "cuda" not in _strings(out) and ("npu" in _strings(out) or "npu:0" in _strings(out))


@pytest.mark.parametrize("target", DEVICE_TARGETS)
def test_an_option_with_device_choices_takes_its_default_along(target):
    text = "import argparse\np = argparse.ArgumentParser()\n" \
           "p.add_argument('--accel', choices=['cpu', 'cuda'], default='cuda')\n"
    out, found = _convert(text, target)
    assert f"choices=['cpu', '{target}'], default='{target}'" in out
    assert found == [(3, "TP207", "modify"), (3, "TP207", "modify")]


@pytest.mark.parametrize("form", [
    "B = ['cuda', 'nccl']\n",  # a backend, no other device
    "L = ('cuda', 'other')\n",
    "F = ['cuda', 'cpu.txt']\n",  # file names
    "N = ['cuda', 'cuda:1']\n",  # only CUDA
    "import os\nD = [os.path.join('csrc', s) for s in ('cpu', 'cuda')]\n",  # folder names
    "import os\nfor s in ['cpu', 'cuda']:\n    os.path.join('src', s)\n",
    "P = pytest.param('cuda', marks=pytest.mark.slow)\n",  # marks ask nothing about the device
    "P = pytest.param('x', marks=pytest.mark.skipif(not torch.cuda.is_available(), reason='cuda'))\n",
    "def f(x):\n    return x == 'cuda' or y\n",  # compared beside no device question
])
def test_other_lists_stay_for_review(form):
    text = "import pytest\nimport torch\n\n" + form
    out, found = _convert(text, "npu")
    assert [f for f in found if f[1] == "TP207"] == []
    assert _strings(out).count("cuda") == _strings(text).count("cuda")


def test_a_default_that_is_no_choice_stays_for_review():
    text = "import argparse\np = argparse.ArgumentParser()\n" \
           "p.add_argument('--accel', choices=['cpu', 'cuda'], default='cuda:1')\n"
    out, found = _convert(text, "npu")
    assert "choices=['cpu', 'npu'], default='cuda:1'" in out
    assert found == [(3, "TP206", "advice"), (3, "TP207", "modify")]


def test_a_list_that_names_the_target_already_stays_for_review():
    """On mps, ["cpu", "mps", "cuda"] would hold "mps" twice."""
    text = "import argparse\np = argparse.ArgumentParser()\n" \
           "p.add_argument('--accel', choices=['cpu', 'mps', 'cuda'], default='cuda')\n"
    out, found = _convert(text, "mps")
    assert out == text and found == [(3, "TP206", "advice"), (3, "TP206", "advice")]
    out, found = _convert(text, "npu")
    assert "choices=['cpu', 'mps', 'npu'], default='npu'" in out


@pytest.mark.parametrize("target", DEVICE_TARGETS)
def test_a_comparison_with_types_that_name_the_target_already_is_left(target):
    """ultralytics 8.4.190 torch_utils.py: `device.type not in {"cpu", "cuda", "npu", "xpu"}` became
    {"cpu", "npu", "npu", "xpu"} on npu. The test reads the same on the target with "cuda" left in; a
    collection without the target's type is still rewritten."""
    text = f"def f(device):\n    a = device.type not in {{'cpu', 'cuda', '{target}'}}\n" \
           "    b = device.type in ('cuda', 'cpu')\n"
    new, findings, _ = Converter(target).convert_text("m.py", text.encode(), "python")
    out = new.decode()
    assert f"{{'cpu', 'cuda', '{target}'}}" in out and f"('{target}', 'cpu')" in out
    assert sorted({f.line for f in findings if f.rule != "TP213"}) == [3], findings
    assert [f.line for f in findings if f.rule == "TP213"] == [2], "the file names the target itself"


def test_the_host_keeps_a_cuda_device_beside_the_cpu_in_one_list():
    """torchsde's tests: `[cpu, gpu] = [torch.device('cpu'), torch.device('cuda')]` and `if device == gpu and not
    torch.cuda.is_available(): skip`.  Rewritten, both were the CPU and the guard skipped the CPU half too."""
    source = ("import torch\ndevices = [cpu, gpu] = [torch.device('cpu'), torch.device('cuda')]\n"
              "other = torch.device('cuda')\n")
    new, findings, _ = Converter("cpu").convert_text("t.py", source.encode(), "python")
    lines = new.decode().splitlines()
    assert lines[1] == "devices = [cpu, gpu] = [torch.device('cpu'), torch.device('cuda')]"
    assert lines[2] == "other = torch.device('cpu')"
    assert [(f.line, f.rule) for f in findings] == [(2, "TP206"), (3, "TP201")]
    new, _, _ = Converter("npu").convert_text("t.py", source.encode(), "python")
    assert "[torch.device('cpu'), torch.device('npu')]" in new.decode()


@pytest.mark.parametrize("target", ["npu", "cpu"])
def test_a_partial_of_a_device_call_takes_its_device_argument(target):
    """vector-quantize-pytorch 1.32.0 finite_scalar_quantization.py:277: `partial(autocast, 'cuda', enabled=False)`
    is the fp32 guard of its codebook math; kept as "cuda", it guards nothing once the project's autocast is the
    target's."""
    text = ("import torch\nfrom functools import partial\nfrom torch import autocast\n"
            "guard = partial(autocast, 'cuda', enabled=False)\nmove = partial(torch.Tensor.to, 'cuda')\n"
            "other = partial(print, 'cuda')\n")
    new, findings, _ = Converter(target).convert_text("a.py", text.encode(), kind_of("a.py"))
    out = new.decode()
    device = "npu" if target == "npu" else "cpu"
    assert f"guard = partial(autocast, '{device}', enabled=False)" in out
    assert "other = partial(print, 'cuda')" in out, "print takes no device"


@pytest.mark.parametrize("target, expected, action", [
    ("npu", "if torch.npu._initialized:", "modify"), ("mlu", "if torch.mlu._initialized:", "modify"),
    ("musa", "if torch.cuda._initialized:", "unsupported"), ("cpu", "if torch.cuda._initialized:", None)])
def test_the_device_initialised_flag_libraries_read_is_the_vendors_own(target, expected, action):
    """A new-user trial (performer-pytorch 1.1.4 reversible.py:31): `if torch.cuda._initialized:` decides whether
    device RNG states are recorded for the backward replay of dropout.  Left as it was on npu it is always False,
    and the replayed masks differ: silently wrong gradients, listed only "to review".  torch_npu and torch_mlu keep
    the same flag; torch_musa's copy never changes (a failure to fix by hand); CPU torch's False is right."""
    src = "import torch\nx = torch.ones(2).cuda()\nif torch.cuda._initialized:\n    print('recorded')\n"
    new, findings, _ = Converter(target).convert_text("m.py", src.encode(), "python")
    assert expected in (new or src.encode()).decode()
    on_line = [f for f in findings if f.line == 3]
    assert [f.action for f in on_line] == ([action] if action else []), on_line


@pytest.mark.parametrize("line, expected", [
    ("g = partial(autocast, enabled=False)\n", 'g = partial(autocast, "cpu", enabled=False)\n'),
    ("h = functools.partial(torch.cuda.amp.autocast, True, torch.float16)\n",
     'h = functools.partial(torch.amp.autocast, "cpu", enabled=True, dtype=torch.float16)\n'),
    ("k = partial(custom_fwd, cast_inputs=torch.float32)\n",
     'k = partial(custom_fwd, cast_inputs=torch.float32, device_type="cpu")\n'),
])
def test_a_cuda_amp_callable_bound_by_partial_gets_the_device(line, expected):
    """A new-user trial (performer-pytorch 1.1.4 performer_pytorch.py:184): `partial(autocast, enabled=False)` with
    autocast from torch.cuda.amp was left and called a would-fail item ("autocast is also used for APIs cpu
    lacks"); the partial binds the callable's first arguments, so the device goes there."""
    src = ("import functools\nfrom functools import partial\nimport torch\n"
           "from torch.cuda.amp import autocast, custom_fwd\n" + line)
    new, findings, _ = Converter("cpu").convert_text("m.py", src.encode(), "python")
    text = new.decode() if isinstance(new, bytes) else str(new)
    assert text.endswith(expected), text
    assert not [f for f in findings if f.action == "unsupported"], findings
    compile(text, "m.py", "exec")


@pytest.mark.parametrize("form", [
    'd = "cuda"\nclass A(torch.nn.Module, foo=d):\n    pass\nx = torch.ones(1, device=d)\n',
    'class A(torch.nn.Module, choices=["cpu", "cuda"], default="cuda"):\n    pass\n',
    'class B(torch.nn.Module, device="cuda"):\n    pass\n',
])
def test_a_class_statements_keywords_are_not_taken_for_a_calls(form):
    """A keyword of a class statement (a metaclass's arguments) is no call's: reading it as one crashed the rule
    and the file was copied unconverted (found by typing rules/devices.py for mypy --strict)."""
    new, findings, _ = Converter("npu").convert_text("m.py", ("import torch\n" + form).encode(), "python")
    assert not [f for f in findings if f.rule == "TP000"], [f.message for f in findings]
    ast.parse(new or b"")
