"""The regexes made linear for crafted input (bench/redos_bench.py times them) still find what they found on
real input; the bench covers every regex of the modules that run one on user input."""
import ast
import importlib
import re
import sys
from types import SimpleNamespace

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import redos_bench

from torchport.converter import config, notebook, shell
from torchport.converter.rules import methods
from torchport.converter.run import Converter
from torchport.doctor import checks
from torchport.doctor.explain import explain
from torchport.porting import (
    buildglue,
    engine,
    lexer,
    native,
)
from torchport.porting.callsites import call_site_pattern, call_sites, receiver_before

# The modules with regexes that run on user input (files, names, logs, command lines, user maps).
MODULES = ["commands.analyze", "analyze.deps", "analyze.scan", "porting.callsites", "report.sarif", "ckpt", "converter.config", "converter.run",
           "converter.context", "converter.multicard", "converter.notebook", "converter.python", "converter.shell",
           "converter.userrules", "converter.rules.api", "converter.rules.apex", "converter.rules.devices", "converter.rules.distributed",
           "converter.rules.env", "converter.rules.imports", "converter.rules.messages", "converter.rules.methods",
           "core.command", "core.textfile", "doctor.checks", "doctor.explain", "doctor.families", "doctor.shapes", "doctor.stack", "doctor.vendor_checks", "kb.packages", "commands.port",
           "porting.buildglue", "porting.engine", "porting.native", "porting.lexer", "report.html", "report.html.diff",
           "report.html.migrate", "runtime.devices", "runtime.patches"]
RE_CALLS = {"compile", "search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split"}
# Literal patterns inside functions of modules other owners are changing now: to be hoisted to named
# constants (and given a bench case) there.
INLINE_ELSEWHERE = {("converter.userrules", r"\s*"), ("converter.userrules", r"\s*\[\[\s*(\w+)\s*\]\]"),
                    ("core.textfile", rb"\r\n?|\n")}


def _patterns_in(value, depth=0):
    if isinstance(value, re.Pattern):
        yield value
    elif depth < 3 and isinstance(value, (tuple, list)):
        for item in value:
            yield from _patterns_in(item, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for item in value.values():
            yield from _patterns_in(item, depth + 1)


# ----------------------------------------------------------------- the bench covers every regex
@pytest.mark.parametrize("name", MODULES)
def test_the_bench_times_every_compiled_regex(name):
    module = importlib.import_module(f"torchport.{name}")
    benched = {id(p) for case in redos_bench.CASES for p in case.patterns}
    missing = [attr for attr, value in vars(module).items()
               if any(id(p) not in benched for p in _patterns_in(value))]
    assert not missing, f"torchport.{name}: {missing} have no case in bench/redos_bench.py"


def test_the_bench_times_every_known_error_pattern():
    benched = {id(p) for case in redos_bench.CASES for p in case.patterns}
    from torchport.doctor.explain import known_errors

    assert all(id(rx) in benched for e in known_errors() for rx in e.regexes)


@pytest.mark.parametrize("name", MODULES)
def test_no_regex_is_written_inside_a_function(name):
    """A literal pattern is a named module constant (so the bench can import it); a pattern built at run time
    is built in a function the bench knows (redos_bench.DYNAMIC) and times an instance of."""
    path = ROOT / "src" / "torchport" / (name.replace(".", "/") + ".py")
    if not path.exists():  # a package
        path = path.with_suffix("") / "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []

    def visit(node, scope):
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{scope}.{child.name}" if scope else child.name
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) \
                    and isinstance(child.func.value, ast.Name) and child.func.value.id == "re" \
                    and child.func.attr in RE_CALLS and child.args and scope and _in_function(scope, tree):
                found.append((scope, child.args[0]))
            visit(child, inner)

    visit(tree, "")
    for scope, arg in found:
        if isinstance(arg, ast.Constant):
            assert (name, arg.value) in INLINE_ELSEWHERE, \
                f"torchport.{name}.{scope}: a literal regex inside a function; make it a module constant"
        else:
            assert f"torchport.{name}.{scope}" in redos_bench.DYNAMIC, \
                f"torchport.{name}.{scope} builds a regex: add a case for it to bench/redos_bench.py (and DYNAMIC)"


def _in_function(scope, tree) -> bool:
    """Is `scope` (a dotted path of classes and functions) inside a function, not only a class?"""
    node = tree
    for part in scope.split("."):
        node = next(n for n in ast.iter_child_nodes(node)
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == part)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return True
    return False


def test_the_bench_runs(capsys):
    """On small texts, only to see it run (the times are the bench's business)."""
    redos_bench.main(["--size", "20000", "--no-commands", "--timeout", "0"])
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(redos_bench.CASES) + 1
    assert all(line.split()[-1] in ("ok", "SLOW") for line in out[:-1])


# ----------------------------------------------------------------- analyze/native.py
def _kernels(code):
    flat = native._LAUNCH_BOUNDS.sub(lambda m: " " * len(m.group(0)), native.blank_comments(code))
    return [m.group(2) for m in native._KERNEL.finditer(flat)]


def test_kernels_still_found():
    code = """
template <typename T>
__global__ void add(const T* a, T* b) {}
__global__ static void __launch_bounds__(256, 2) scale(float* x) {}
extern "C" __global__ void
  plain_kernel (int n);
template <> __global__ void spec<float>(float* x);
template <> __global__ void nested<Pair<int>, 4>(int* x);
__global__ void /* the name */ commented(int n);
__global__ void __launch_bounds__(
    Kernel<cutlass::arch::Sm70, cutlass::half_t, true, false, false, 64, 64, 32, true>::kNumThreads,
    Kernel<cutlass::arch::Sm70, cutlass::half_t, true, false, false, 64, 64, 32, true>::kMinBlocksPerSm)
long_bounds(typename Kernel<cutlass::arch::Sm70>::Params p);
"""
    assert _kernels(code) == ["add", "scale", "plain_kernel", "spec", "nested", "commented", "long_bounds"]


def test_blank_comments_keeps_strings_and_lines():
    code = 'a = "/* not */"; // gone\nb = \'/\'; /* gone\ntoo */ c("x\\"y");\n'
    assert native.blank_comments(code) == 'a = "/* not */";        \nb = \'/\';        \n       c("x\\"y");\n'


def test_a_comment_never_closed_is_not_one():
    code = 'x = a /* open\n__global__ void k(int n); // note\ns = "q";'
    assert native.blank_comments(code) == 'x = a /* open\n__global__ void k(int n);        \ns = "q";'
    assert _kernels(code) == ["k"]


def test_scan_native_lines_and_library_ops():
    code = ('#include <torch/extension.h>\n__global__ void k1(int n) {}\n\nTORCH_LIBRARY(ns, m) {\n'
            '  m.def("first(Tensor x) -> Tensor");\n'
            '  m.def( TORCH_SELECTIVE_SCHEMA( "ns::second(Tensor x) -> Tensor"));\n'
            '}\nTORCH_LIBRARY_FRAGMENT(other, m) {\n  m.def("third(Tensor x) -> Tensor");\n}\n'
            '__global__ void k2() { asm("mov.u32 %0, 0;"); }\n')
    out = native.NativeScan()
    native.scan_native("ops.cu", code, out)
    assert out.kernels == [("ops.cu", 2, "k1"), ("ops.cu", 11, "k2")]
    assert out.library_ops == {"ns": {"first", "second"}, "other": {"third"}}
    assert [(f.rule, f.line) for f in out.findings if f.rule in ("TP902", "TP903")] == \
        [("TP902", 2), ("TP902", 11), ("TP903", 11)]


# ----------------------------------------------------------------- porting/callsites.py
def test_receiver_before():
    text = "y = torch.ops.my_ns.nms(x)\nz = self._C.roi(x)\nw = a..b.c(1)\nv = (x)\n"
    assert receiver_before(text, text.index(".nms")) == "torch.ops.my_ns"
    assert receiver_before(text, text.index(".roi")) == "self._C"
    assert receiver_before(text, text.index(".c(")) == "b"
    assert receiver_before(text, text.index(")\n") + 1) == ""
    assert receiver_before("ext\n.op", 4) == "ext", "a name that ends the line before"
    assert receiver_before("x" * 200, 200) == "x" * 120, "looked for 120 characters back"


def test_call_sites_found():
    pattern = call_site_pattern(("ms_deform_attn_forward", "nms"), (("my_ns", ("roi_align",)),))
    text = "import torch\ny = ext_module.nms(a)\nz = torch.ops.my_ns.roi_align(x)\nw = np.nms(q)\n"
    assert [(f.line, f.old) for f in call_sites("a.py", text, pattern)] == \
        [(2, "ext_module.nms"), (3, "torch.ops.my_ns.roi_align")]


# ----------------------------------------------------------------- converter/
@pytest.mark.parametrize("text, found", [
    ("device: cuda\n", [("device", "cuda")]),
    ("  - backend: 'nccl'  # the default\n", [("backend", "nccl")]),
    ("--train.device = cuda:0 ,\n", [("train.device", "cuda:0")]),
    ("model: {device: cuda, dist_backend: nccl}\n", [("device", "cuda"), ("dist_backend", "nccl")]),
    ('{"accelerator": "cuda:1", "x": 1}\n', [("accelerator", "cuda:1")]),
    ("device: cpu\nname: cuda\n", []),
])
def test_config_values_still_found(text, found):
    matches = sorted([*config._SETTING.finditer(text), *config._PAIR.finditer(text), *config._FLOW.finditer(text)],
                     key=lambda m: m.start())
    assert sorted({(m.group("key"), m.group("value")) for m in matches}) == sorted(found)


@pytest.mark.parametrize("line, flag, value", [
    ("python train.py --dist-backend nccl\n", "--dist-backend", "nccl"),
    ("torchrun x.py --backend='nccl' --lr 1\n", "--backend", "nccl"),
    ("run ---backend nccl\n", "---backend", "nccl"),
    ("x --device cuda:0\n", "--device", "cuda:0"),
    ("x --train-device=cuda\n", "--train-device", "cuda"),
])
def test_shell_flags_still_found(line, flag, value):
    regex = shell._BACKEND_FLAG if value == "nccl" else shell._DEVICE_FLAG
    m = regex.search(line)
    assert m.group(1) == flag and line[m.end() - len(value) - len(m.group(3)):m.end() - len(m.group(3))] == value


def test_shell_flags_not_found():
    assert not shell._BACKEND_FLAG.search("--backend ncclx\n")
    assert not shell._DEVICE_FLAG.search("--dev cuda\n")


def test_notebook_lines_still_masked():
    lines = ["%matplotlib inline", "  !pip install x", "files = !ls", "x.shape?", "  %time y = x.cuda()",
             "y = x.cuda()"]
    masked = [notebook.mask(line) for line in lines]
    assert [notebook._MASK in m for m in masked] == [True, True, True, True, False, False]
    assert notebook.unmask(notebook.mask("\n".join(lines))) == "\n".join(lines)


def test_is_cuda_assignments():
    source = "self.is_cuda = True\nother.is_cuda: bool = False\nx.is_cuda == y\nm.model.is_cuda = 1\n"
    ctx = SimpleNamespace(source=source, memo={})
    assert [methods.assigns_is_cuda(ctx, r) for r in ("self", "other", "x", "m.model", "model")] == \
        [True, True, False, True, False]


# ----------------------------------------------------------------- doctor/
def test_doctor_patterns():
    version_py = "__version__ = '2.1.0'\ncuda: Optional[str] = '12.1'\nhip: Optional[str] = None\n"
    assert checks._BUILD_FIELDS["cuda"].search(version_py).group(1) == "12.1"
    assert checks._BUILD_FIELDS["hip"].search(version_py) is None
    assert [checks._TORCH_PIN.match(r).groups() for r in ("torch==2.1.0", "torch (>=2.1)", "torch  ~= 2.1")] == \
        [("==", "2.1.0"), (">=", "2.1"), ("~=", "2.1")]


def test_explain_patterns_rewritten():
    log = "epoch 1\nRuntimeError: nms_impl: implementation for device musa:0 not found.\n"
    assert [(m.error.id, m.line) for m in explain(log)[0]] == [("musa-extension-impl-not-found", 2)]
    log = "x\ny\nRuntimeError: malloc:/x/pytorch/c10/npu/NPUCachingAllocator.cpp:293 NPU fault\n"
    assert [(m.error.id, m.line) for m in explain(log)[0]] == [("npu-caching-allocator-oom", 3)]
    assert explain("malloc: a\nNPUCachingAllocator")[0] == [], "both on one line"


# ----------------------------------------------------------------- porting/
def test_lexer_regions():
    text = 'a = R"x(raw /* )x"; b = 1\'000\'000; // c\n#include <cuda.h>\nc = u8\'q\';\n'
    regions, includes, comments = lexer.scan(text)
    assert [text[s:e] for s, e in includes] == ["#include <cuda.h>"]
    assert [text[s:e] for s, e in comments] == ["// c"]
    assert "1'000'000" in "".join(text[s:e] for s, e in regions)


@pytest.mark.parametrize("line, found", [
    ("#include <ATen/cuda/CUDAContext.h>", ("ATen/cuda/CUDAContext.h", "<", 10)),
    ('#include "kernels/a.cuh"  ', ("kernels/a.cuh", '"', 10)),
    ("#include <a>b>", None),
    ("#include <x", None),
])
def test_include_path(line, found):
    assert lexer.include_path(line) == found


def test_cmake_names_still_found():
    text = "project(x LANGUAGES CXX CUDA)\nadd_library(k src/k.cu kernels/*.cuh)\nset(X a.cuda)\n"
    assert [m.group(0) for m in buildglue._SOURCE_NAME.finditer(text)] == ["src/k.cu", "kernels/*.cuh"]
    assert [m.group(0) for m in buildglue._CMAKE_CUDA.finditer(text)] == ["LANGUAGES CXX CUDA"]


RECEIVERS = engine._toml("receivers.toml")


@pytest.mark.parametrize("code, cls", [  # (what the per-call search of the text before each call found)
    ("void f(const at::Tensor& x) { if (x.is_cuda()) {} }", "at::TensorBase"),
    ("struct Mine { bool is_cuda(); };\nvoid f(Mine m) { m.is_cuda(); }", ""),
    ("void f(at::Tensor t) { auto o = t.options(); o.is_cuda(); }", "at::TensorBase"),
    ("void f() { c10::Device d(kCUDA); d.is_cuda(); }", "c10::Device"),
    ("void f(at::Tensor x) { bool a = x.is_cuda(), b = 1; }", "at::TensorBase"),
    ("void f() { this->is_cuda(); }", ""),
    ("void f(at::Tensor x) { auto y = x.device(); y.is_cuda(); }", "c10::Device"),
    # a declaration whose initializer goes on past the call: read up to the call
    ("struct MyT {};\nvoid f(MyT x) { MyT y = x, z = y.is_cuda(); }", ""),
    ("void f(MyT x) { MyT y = x, z = y.is_cuda(); }\nstruct MyT {};", "at::TensorBase"),
    ("void f(at::Tensor x) { auto y = x.device(), z = y.is_cuda(); }", "at::TensorBase"),
])
def test_receiver_classes(code, cls):
    start = code.rindex("is_cuda")
    found, _ = engine.receiver_class(code, start, start + len("is_cuda"), RECEIVERS)
    assert found == cls


def test_declarations_of_a_name():
    text = "const at::Tensor& x = y;\nint n;\nauto x = a.options();\nns::T x::z;"
    facts = engine.FileFacts(text, RECEIVERS)
    assert [(spelled, text[eq:end] if eq is not None else None) for _, _, end, spelled, eq in facts.declarations("x")] \
        == [("at::Tensor", "= y"), ("auto", "= a.options()"), ("ns::T", None)]
    assert facts.declarations("n") == [(25, 30, 30, "int", None)]


def test_call_at_end():
    assert engine._call_at_end("= a.options()  ", 15) == (11, (".", "options"))
    assert engine._call_at_end("= at::empty({1}, o)", 19)[1] == (None, "at::empty")
    assert engine._call_at_end("= p->get()", 10)[1] == ("->", "get")
    assert engine._call_at_end("= f(g(x))", 9)[1] is None


def test_own_names():
    text = "#define CUDA_NUM_THREADS 512\nconstexpr int CUDA_BLOCKS = 4;\nint cudaX = 1;\nCUDA_Y = 2;\n"
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    assert engine._own_names(text, {"CUDA_NUM_THREADS", "CUDA_BLOCKS", "cudaX", "CUDA_Y"}, starts) == \
        {"CUDA_NUM_THREADS", "CUDA_BLOCKS"}


def test_python_trigger_and_shell_words():
    converter = Converter("musa")
    assert converter.python.trigger.search("x = y.cuda()")
    assert converter.shell.trigger.search("export CUDA_VISIBLE_DEVICES=0")
