"""converter/guards.py: what a test says about a device being there, and which code runs only with one; and
the cpu target leaving such code alone (it never runs on the CPU): yolov5's select_device and autobatch."""
import ast

import pytest

from torchport.converter.guards import implies_device, runs_only_with_device
from torchport.converter.run import Converter

CASES = '''\
import torch
if torch.cuda.is_available():
    torch.cuda.X()  # yes
else:
    torch.cuda.X()  # no
if not torch.cuda.is_available():
    torch.cuda.X()  # no
else:
    torch.cuda.X()  # yes
def f(device, cpu):
    torch.cuda.X()  # no
    if device.type == "cpu":
        return 1
    torch.cuda.X()  # yes
def g(cpu, flag):
    if not cpu and torch.cuda.is_available():
        for i in range(2):
            torch.cuda.X()  # yes
    y = torch.cuda.X() if torch.cuda.device_count() > 1 else 0  # yes
    z = torch.cuda.X() if torch.cuda.device_count() == 0 else 0  # no
    if not torch.cuda.is_available():
        print("no exit")
    torch.cuda.X()  # no
    while torch.npu.is_available():
        torch.cuda.X()  # yes
        break
    else:
        torch.cuda.X()  # no
    if torch.cuda.is_available() or flag:
        torch.cuda.X()  # no
    if flag and not torch.cuda.is_available():
        raise SystemExit
    torch.cuda.X()  # no
def h():
    if not torch.cuda.is_available():
        sys.exit(1)
    torch.cuda.X()  # yes
    def inner():
        torch.cuda.X()  # no
'''


def test_runs_only_with_device_reads_tests_branches_and_early_exits():
    tree = ast.parse(CASES)
    parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    lines = CASES.splitlines()
    seen = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "X":
            expected = lines[n.lineno - 1].rsplit("# ", 1)[1] == "yes"
            seen.append(n.lineno)
            assert runs_only_with_device(parents, n) is expected, lines[n.lineno - 1]
    assert len(seen) == 16


@pytest.mark.parametrize("test, if_true, if_false", [
    ("torch.cuda.is_available()", True, False), ("not torch.cuda.is_available()", False, True),
    ("torch.cuda.device_count() > 1", True, False), ("torch.cuda.device_count() >= 1", True, False),
    ("torch.cuda.device_count() >= 0", False, False), ("torch.cuda.device_count() == 0", False, True),
    ("torch.cuda.device_count() < 1", False, True), ("torch.cuda.device_count() != 0", True, False),
    ("torch.cuda.device_count() < 2", False, True), ("torch.cuda.device_count() == 2", True, False),
    ("flag and not torch.cuda.is_available()", False, False),
    ("a and torch.cuda.is_available()", True, False), ("a or torch.cuda.is_available()", False, False),
    ("not torch.cuda.is_available() or not flash", False, True),       # denoising-diffusion-pytorch attend.py
    ("device.type != 'cuda' or not has_l2", False, True),              # timm optim/_helpers.py
    ("device.type == 'cpu'", False, True), ("'cpu' != d.type", True, False), ("device == 'cuda'", True, False),
    ("device.type == 'mps'", False, False), ("'cuda' in str(device)", True, False),
    ("str(device).startswith('cuda:')", True, False), ("x.is_available", False, False), ("cpu", False, False)])
def test_what_a_test_value_says(test, if_true, if_false):
    expr = ast.parse(test, mode="eval").body
    assert (implies_device(expr, True), implies_device(expr, False)) == (if_true, if_false)


SKIPPED = """\
import pytest, unittest, torch

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a():
    torch.cuda.X()  # yes

@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="two GPUs")
def test_b():
    torch.cuda.X()  # yes

@pytest.mark.skipif(sys.platform == "win32", reason="posix")
def test_c():
    torch.cuda.X()  # no

@unittest.skipUnless(torch.cuda.is_available(), "cuda")
class T(unittest.TestCase):
    def test_d(self):
        torch.cuda.X()  # yes
"""


def test_tests_skipped_without_a_device():
    check_marked(SKIPPED, 4)
    check_marked("import pytest, torch\npytestmark = [pytest.mark.slow, pytest.mark.skipif(not "
                 "torch.cuda.is_available(), reason='gpu')]\ndef test_e():\n    torch.cuda.X()  # yes\n", 1)


def check_marked(source: str, count: int) -> None:
    tree = ast.parse(source)
    parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    lines = source.splitlines()
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "X"]
    for n in calls:
        assert runs_only_with_device(parents, n) is (lines[n.lineno - 1].rsplit("# ", 1)[1] == "yes"), \
            lines[n.lineno - 1]
    assert len(calls) == count


YOLOV5_SHAPES = '''\
import torch


def select_device(device=''):
    cpu = device == 'cpu'
    if not cpu and torch.cuda.is_available():
        for i, d in enumerate(device.split(',')):
            p = torch.cuda.get_device_properties(i)
            print(p.name)
        return torch.device('cuda:0')
    return torch.device('cpu')


def autobatch(model, batch_size=16):
    device = next(model.parameters()).device
    if device.type == 'cpu':
        return batch_size
    properties = torch.cuda.get_device_properties(device)
    return int(properties.total_memory / 1e9)


def profile():
    return torch.cuda.get_device_properties(0)
'''


@pytest.mark.torch
def test_cpu_target_leaves_code_that_runs_only_with_a_device():
    """On the cpu target these branches never run, so nothing there "would fail"; the same call outside any
    guard (profile) still does. On npu the guarded calls run on the device and are converted as before."""
    new, findings, _ = Converter("cpu").convert_text("u.py", YOLOV5_SHAPES.encode(), "python")
    unsupported = [(f.line, f.old) for f in findings if f.action == "unsupported"]
    assert unsupported == [(23, "torch.cuda.get_device_properties")], findings
    namespace: dict = {}
    exec(compile(new or YOLOV5_SHAPES.encode(), "u.py", "exec"), namespace)   # the CPU path runs
    import torch

    model = torch.nn.Linear(2, 2)
    assert namespace["autobatch"](model) == 16 and namespace["select_device"]("").type == "cpu"
    _, npu, _ = Converter("npu").convert_text("u.py", YOLOV5_SHAPES.encode(), "python")
    assert not [f for f in npu if f.action == "unsupported"]


VARIABLES = '''\
import pytest, torch
HAS_GPU = torch.cuda.is_available()
LATER = False
def autocast(device, dtype):
    bf16 = device == "cuda" and TORCH_1_13          # ultralytics torch_utils.autocast
    if bf16:
        bf16 = torch.cuda.X()  # yes
    if not bf16:
        raise RuntimeError
    torch.cuda.X()  # no
def main(args):
    args.cuda = not args.no_cuda and torch.cuda.is_available()    # pytorch/examples
    if args.cuda:
        torch.cuda.X()  # yes
    use = torch.cuda.is_available()
    use = False
    if use:
        torch.cuda.X()  # no
def train(args):
    if args.cuda:
        torch.cuda.X()  # yes
    if HAS_GPU:
        torch.cuda.X()  # yes
    if LATER:
        torch.cuda.X()  # no
def param(ok=torch.cuda.is_available()):
    if ok:
        torch.cuda.X()  # no
def looped(xs):
    ok = torch.cuda.is_available()
    for x in xs:
        if ok:
            torch.cuda.X()  # no
        ok = x
    for x in xs:
        fresh = torch.cuda.device_count() > 1
        if fresh:
            torch.cuda.X()  # yes
def branch(flag):
    if flag:
        maybe = torch.cuda.is_available()
    else:
        maybe = True
    if maybe:
        torch.cuda.X()  # no
    chain = torch.cuda.is_available()
    alias = chain
    if alias:
        torch.cuda.X()  # yes
    y = (lambda: torch.cuda.X() if alias else 0)  # yes
class Net:
    def __init__(self):
        self.use_gpu = torch.cuda.device_count() > 0
    def forward(self):
        if self.use_gpu:
            torch.cuda.X()  # yes
@pytest.mark.skipif(not HAS_GPU, reason="gpu")
def test_gpu():
    torch.cuda.X()  # yes
LATER = torch.cuda.is_available()
if LATER:
    torch.cuda.X()  # yes
if undefined_here:
    torch.cuda.X()  # no
'''


def test_a_test_through_a_variable_reads_the_assignment_that_reaches_it():
    """Before: `if bf16:` after `bf16 = device == "cuda" and ...` (ultralytics) and `if args.cuda:` after
    `args.cuda = ... torch.cuda.is_available()` (pytorch/examples) were not guards. A later assignment, a
    parameter, a loop that rebinds it, a binding in a branch, or a global bound twice tell nothing."""
    check_marked(VARIABLES, 17)


def test_a_variable_assigned_from_itself_does_not_loop():
    check_marked("import torch\na = b\nb = a\nif a:\n    torch.cuda.X()  # no\n"
                 "def f():\n    if c:\n        torch.cuda.X()  # no\nc = d\nd = c\n", 2)


PACKAGE_PATHS = '''\
import torch
import cupy
torch.cuda.X()  # cupy
def f():
    try:
        import tensorrt as trt
    except ImportError:
        raise SystemExit("needs TensorRT")
    torch.cuda.X()  # tensorrt
def g():
    try:
        import tensorrt
    except ImportError:
        tensorrt = None
    torch.cuda.X()  # cupy
class C:
    from pycuda import driver
    def m(self):
        torch.cuda.X()  # cupy
'''


def test_imported_before_names_the_package_whose_path_a_line_is_on():
    """An import for sure (or a try whose handlers import it again or leave) before the line in its function,
    or at the top of its module; not a try that goes on without it (g), nor a class body (C)."""
    from torchport.converter.guards import imported_before

    def which(module):
        return module.split(".")[0] if module.split(".")[0] in ("cupy", "tensorrt", "pycuda") else ""

    for source, expected in ((PACKAGE_PATHS, None), (PACKAGE_PATHS.replace("import cupy\n", "import os\n"), "")):
        tree = ast.parse(source)
        parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
        lines = source.splitlines()
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "X"]
        got = [imported_before(parents, n, which) for n in calls]
        want = [lines[n.lineno - 1].rsplit("# ", 1)[1] for n in calls]
        if expected == "":       # without the module's cupy import: only f's TensorRT path is one
            want = [w if w == "tensorrt" else "" for w in want]
        assert got == want and len(calls) == 4


PROBES = '''import torch


def a():
    if hasattr(torch._C, "_cuda_clearCublasWorkspaces"):
        torch._C._cuda_clearCublasWorkspaces()


def b():
    return not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] >= 8


def c(image):
    return image.is_cuda and torch.cuda.is_current_stream_capturing()


def d():
    saved = torch.cuda.get_rng_state_all()
    torch.cuda.set_rng_state_all(saved)


def e():
    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_capability()
'''


def test_guarded_probes_are_no_would_fail_items_on_the_cpu():
    """issue 30 class 9: a hasattr probe of a CUDA-only binding, the `or` after `not is_available()`, the `and`
    after `x.is_cuda` short-circuit on the CPU; CPU torch runs get/set_rng_state_all (no device: [])."""
    from torchport.converter.run import Converter

    _, findings, _ = Converter("cpu").convert_text("p.py", PROBES.encode(), "python")
    assert [(f.line, f.old) for f in findings if f.action == "unsupported"] == []


def test_on_a_vendor_target_the_or_and_the_early_exit_keep_cudas_question():
    """Rewritten to torch.npu.is_available(), `not q or get_device_capability()` and `if not q: return` would
    send the NPU into calls torch_npu lacks; kept, they answer no there (TP210), as a hasattr probe of a CUDA-only
    binding does: what they guard is listed to review, not as would-fail."""
    from torchport.converter.run import Converter

    new, findings, _ = Converter("npu").convert_text("p.py", PROBES.encode(), "python")
    text = new.decode()
    assert "return not torch.cuda.is_available() or torch.cuda.get_device_capability()" in text
    assert "    if not torch.cuda.is_available():\n        return None" in text
    assert sorted(f.line for f in findings if f.rule == "TP210") == [5, 10, 23]   # the hasattr probe: a CUDA build's
    assert not [f for f in findings if f.action == "unsupported" and f.rule != "TP210"
                and "guarded by a CUDA question convert kept" not in f.message], "every call behind them: to review"


def test_a_hasattr_probe_of_an_api_is_no_cuda_question():
    """`hasattr(torch.cuda, "nccl")` asks whether an API is there (every build has torch.cuda.nccl): its rewrite to
    the target's namespace stays, unlike a probe of torch._C's CUDA-only bindings."""
    from torchport.converter.run import Converter

    source = 'import torch\nif hasattr(torch.cuda, "nccl"):\n    print(torch.cuda.get_device_capability())\n'
    new, findings, _ = Converter("npu").convert_text("p.py", source.encode(), "python")
    assert 'hasattr(torch.npu, "nccl")' in new.decode() and not [f for f in findings if f.rule == "TP210"]
