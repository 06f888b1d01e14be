"""Every regular expression torchport runs on user input, timed on about 1 MB of text built to make it slow.

Files, file names, logs, command lines and user maps are user input.  For each regex (imported by name from
its module, so the real pattern runs) the bench builds a few adversarial texts of --size characters (long runs
of what the pattern repeats, many starts that fail late, blanks between adjacent quantifiers...), performs the
operation the product performs with it (search, finditer, sub...) and prints the slowest, one line per regex:

    module.NAME  seconds  ok|SLOW

A regex at or over 1 s is SLOW and the run exits 1.  Each case runs in a child process, given up after
--timeout seconds (a regex stuck in C cannot be interrupted; `>` marks one given up).  Some entries are the
small functions that replaced a regex, or that run a regex once per match (their names say so); they get
about 10,000 matches per MB, to show work redone per match.  Then the end-to-end paths of the issue:
`torchport analyze` and `torchport port-ext --to musa` (and `--to npu`, whose kernel inventory runs the
kernel regex) on a folder holding one 1 MB `.cu` of `__global__` near-misses, and `torchport explain --file`
on a 1 MB and a 5 MB one-line log of `*_impl: implementation for device` near-misses (whole commands, process
start included; printed, not held to the 1 s bound).

    .venv/bin/python bench/redos_bench.py [--size CHARS] [--only TEXT] [--no-commands] [--timeout S]

tests/test_redos.py checks that CASES covers every compiled regex of the modules below.
"""
from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from torchport import ckpt  # noqa: E402
from torchport.analyze import deps  # noqa: E402
from torchport.commands import analyze as analyze_api  # noqa: E402
from torchport.commands import port as porting_api  # noqa: E402
from torchport.converter import config, context, multicard, notebook, python, shell  # noqa: E402
from torchport.converter import run as converter_run  # noqa: E402
from torchport.converter.rules import apex, devices, distributed, env, imports, messages, methods  # noqa: E402
from torchport.converter.rules import api as rules_api  # noqa: E402
from torchport.converter.run import Converter  # noqa: E402
from torchport.core import command, textfile, words  # noqa: E402
from torchport.doctor import checks, explain, families, shapes, stack, vendor_checks  # noqa: E402
from torchport.kb import packages  # noqa: E402
from torchport.porting import buildglue, callsites, engine, lexer, native  # noqa: E402
from torchport.report import html, sarif  # noqa: E402
from torchport.report.html import migrate as html_migrate  # noqa: E402
from torchport.runtime import devices as runtime_devices  # noqa: E402
from torchport.runtime import patches  # noqa: E402

LIMIT = 1.0          # seconds, per regex, on --size characters
SIZE = 1 << 20


def fill(unit: str, size: int) -> str:
    """`unit` repeated to exactly `size` characters."""
    return (unit * (size // len(unit) + 1))[:size]


def around(head: str, unit: str, tail: str = "x"):
    """An input maker: head + `unit` repeated + tail, `size` characters in all."""
    return lambda size: head + fill(unit, max(size - len(head) - len(tail), 0)) + tail


def repeated(unit: str):
    return lambda size: fill(unit or "x", size)


def spaced(unit: str, width: int = 100):
    """`unit` padded to `width` and repeated: a function's input with about 10,000 matches per MB (enough to show
    work redone per match, which grows as matches x size, without timing the per-match work itself)."""
    return repeated(unit.ljust(width - 1) + "\n")


@dataclass
class Case:
    name: str             # module.NAME as the source spells it
    patterns: tuple       # the compiled regexes it runs (empty for a function without one of its own)
    run: Callable         # run(text): what the product does with them
    inputs: tuple         # makers: size -> adversarial text


def regex(name: str, pattern, op: str, *inputs) -> Case:
    """A case that performs `op` (search, match, fullmatch, finditer, findall, sub) with one regex."""
    if op == "sub":
        run = lambda text: pattern.sub(" ", text)  # noqa: E731
    elif op == "finditer":  # the product uses the matches one at a time
        run = lambda text: collections.deque(pattern.finditer(text), maxlen=0)  # noqa: E731
    else:
        run = getattr(pattern, op)
    return Case(name, (pattern,), run, inputs)


def function(name: str, run: Callable, *inputs, patterns=()) -> Case:
    return Case(name, tuple(patterns), run, inputs)


# ---------------------------------------------------------------- helpers the cases need
MUSA = Converter("musa")
PORT_MAP = engine.load_map("musa")
OP_CALLS = callsites.call_site_pattern(("my_op", "nms_forward"), (("ns", ("roi_align",)),))


def _port(text: str):
    return engine.port_text("k.cu", text, PORT_MAP, lambda rel, path: None)


def _assigns_is_cuda(text: str):
    """As the is_cuda rule asks: once per `x.is_cuda` read, each with its own receiver."""
    ctx = SimpleNamespace(source=text, memo={})
    for i in range(len(text) // 12):
        methods.assigns_is_cuda(ctx, f"a{i}")


def _config(text: str):
    return config.config_settings("c.yaml", text, MUSA.target)


def _build(text: str):
    return buildglue.port_build_file("CMakeLists.txt", text, {}, {".cu": ".mu"}, lambda base, name: True)


def _nb_line(text: str):
    return notebook._IPYTHON_LINE.sub(lambda m: m.group(1) + "#m:" + m.group(2), text)


def _native(text: str):
    native.scan_native("k.cu", text, native.NativeScan())


def _kb_cases() -> list:
    """Each pattern of kb/errors.toml, searched as explain does, on near-misses of its entry's example."""
    out = []
    for e in explain.known_errors():
        for k, rx in enumerate(e.regexes):
            ex = e.example or e.title
            out.append(Case(f"kb/errors.toml {e.id} #{k + 1}", (rx,), rx.search, (
                repeated(ex[:-1]), repeated(ex[:len(ex) // 2]), repeated(ex[:len(ex) // 2] + "\n"),
                repeated("a"), repeated("a_"), repeated(ex.split()[0] if ex.split() else ex),
                around("", "a", "_impl: implementation for device cuda"),
                repeated("x_impl: implementation for device "), repeated("malloc:"), repeated("mlu270"))))
    return out


def _families_cases() -> list:
    """doctor/families.py: each regex on near-misses of what it looks for, and each vendor status pattern of
    kb/error_families.toml as _statuses() compiles it."""
    f = families
    cases = [
        regex("doctor.families._TOKEN", f._TOKEN, "findall", repeated("a.+-"), repeated("a")),
        regex("doctor.families._PART", f._PART, "findall", repeated("a1_"), repeated("a")),
        regex("doctor.families._LIBRARY", f._LIBRARY, "findall", repeated("a"), repeated("a.so."), repeated("liba.so.1."),
              repeated("a-"), repeated(".so")),
        regex("doctor.families._MISSING_WORDS", f._MISSING_WORDS, "search", repeated("cannot ope"), repeated("could not")),
        regex("doctor.families._HCCL_CODE", f._HCCL_CODE, "search", repeated("HCCL"), repeated("HCCL error code is ")),
        regex("doctor.families._ACL_CODE", f._ACL_CODE, "search", repeated("error code is 1"), repeated("error code is ")),
        regex("doctor.families._NOT_LINKED", f._NOT_LINKED, "search", repeated("not linked with support for a"),
              around("not linked with support for ", "a")),
        regex("doctor.families._IPEX_VERSION", f._IPEX_VERSION, "search", repeated("needs to work with PyTorch 1"),
              around("needs to work with PyTorch ", "1."), around("needs to work with PyTorch 1, but PyTorch ", "a")),
        regex("doctor.families._CPU_FALLBACK", f._CPU_FALLBACK, "search", repeated("operator 'a"),
              around("operator '", "a:"), around("operator 'a' is not currently supported on the ", "a")),
        regex("doctor.families._CANN_CODE", f._CANN_CODE, "finditer", repeated("EZ999"), repeated("EZ99999"),
              repeated("-EZ9999")),
        regex("doctor.families._PTA_CODE", f._PTA_CODE, "search", repeated("ERR0010"), repeated("ERR001000")),
        regex("doctor.families._STAMP", f._STAMP, "sub", around("[PID: ", "1"), around("2025-01-01 ", "1:"),
              repeated(" ")),
        regex("doctor.families._COULD_NOT_RUN", f._COULD_NOT_RUN, "search", repeated("Could not run 'a"),
              around("Could not run '", "a:")),
        regex("doctor.families._NO_DTYPE", f._NO_DTYPE, "search", repeated("a"), repeated("a:"), repeated('"a" not '),
              around("", "a", " not implemented for 'x")),
        regex("doctor.families._AUTOLOAD", f._AUTOLOAD, "search", repeated("Failed to load the backend extension: a."),
              around("Failed to load the backend extension: ", "a.")),
        regex("doctor.families._CANN_PAIR", f._CANN_PAIR, "search", repeated("CANN package version a and "),
              around("CANN package version ", "a")),
        regex("doctor.families._VENDOR_PACKAGE", f._VENDOR_PACKAGE, "search", repeated("torch_npux"), repeated("torch_")),
        regex("doctor.families._TORCH_VERSION_CHECK", f._TORCH_VERSION_CHECK, "search", repeated("torch version "),
              around("torch version ", "a")),
        regex("doctor.families._OOM_ASKED", f._OOM_ASKED, "search", repeated("out of memory. Tried to allocate 1"),
              around("out of memory. Tried to allocate ", "1.")),
        regex("doctor.families._OOM_FREE", f._OOM_FREE, "search", repeated("of which 1"), repeated("; 1"),
              around("of which ", "1.")),
        regex("doctor.families._OOM_TOTAL", f._OOM_TOTAL, "search", repeated("1 "), repeated("1.1"),
              around("", "1", " GiB total")),
        regex("doctor.families._OOM_HELD", f._OOM_HELD, "search", repeated("1 "), repeated("1.1"),
              around("", "1", " GiB reserved in")),
        regex("doctor.families._ONE_BLOCK_LIMIT", f._ONE_BLOCK_LIMIT, "search",
              repeated("can NOT allocate memory block with size larger than ")),
        regex("doctor.families._CANN_DTYPE", f._CANN_DTYPE, "search", repeated("DT_A_"), around("DT_", "A"),
              repeated("aDT_A")),
        regex("doctor.families._REFUSED", f._REFUSED, "search", repeated("not suppor"), repeated("unsupporte")),
        regex("doctor.families._CANN_OP", f._CANN_OP, "search", repeated("aclnn"), around("aclnn", "A"),
              repeated("Op ["), repeated("op [")),
        regex("doctor.families._DCMI", f._DCMI, "search", repeated("ret is -80"), repeated("return code = ")),
        regex("doctor.families._EXCEPTION", f._EXCEPTION, "search", around("", "a"), around("", "a."),
              around("[rank1]: ", " ")),
        regex("doctor.families._SYMBOL_VERSION", f._SYMBOL_VERSION, "search", repeated("version `a"),
              around("version `", "a"), repeated("version ")),
        regex("doctor.families._UNDEFINED", f._UNDEFINED, "search", repeated("undefined symbol"),
              around("undefined symbol: ", "a")),
        regex("doctor.families._LINK_UNDEFINED", f._LINK_UNDEFINED, "search", repeated("undefined reference to `a"),
              around("undefined reference to `", "a")),
        regex("doctor.families._NO_MODULE", f._NO_MODULE, "search", repeated("No module named 'a"),
              around("No module named ", "a.")),
        regex("doctor.families._NO_ATTRIBUTE", f._NO_ATTRIBUTE, "search", repeated("module 'torch_npu."),
              around("module 'torch_npu", ".a"), repeated("cannot import name 'a' from 'torch_npu")),
        regex("doctor.families._NO_HEADER", f._NO_HEADER, "search", repeated("fatal error: a.h"),
              around("fatal error: ", "a."), around("fatal error: ", "a/")),
        regex("doctor.families._DYNAMO", f._DYNAMO, "search", repeated("torch._dynamo.exc."),
              repeated("BackendCompilerFailed: backend='a")),
        regex("doctor.families._MANGLED", f._MANGLED, "match", around("_ZN", "1")),
        regex("doctor.families._PORT_TAKEN", f._PORT_TAKEN, "search", repeated("listen on ip["),
              around("listen on ip[", "a"), repeated("errno 9"), repeated("Address already in us")),
        regex("doctor.families._STORE_TIMEOUT", f._STORE_TIMEOUT, "search", repeated("Timed out after 1"),
              around("client socket has timed out after ", "1"), repeated("Timed out after 1 seconds waiting for ")),
        regex("doctor.families._GENERATOR_DEVICE", f._GENERATOR_DEVICE, "search", repeated("Expected a 'a"),
              around("Expected a '", "a")),
        regex("doctor.families._SOC", f._SOC, "search", repeated("soc version "), repeated("chip "),
              around("Unsupported soc version: ", "a"), around("soc", " ")),
        regex("doctor.families._DS_ACCELERATOR", f._DS_ACCELERATOR, "search", repeated("Setting ds_accelerator to c")),
        regex("doctor.families._VENDOR_LOG", f._VENDOR_LOG, "search", repeated("[CNNL] [Error]:[a"),
              around("[CNNL] [Error]:[", "a"), repeated("[CNNL] ")),
        regex("doctor.families._MUDNN_LOG", f._MUDNN_LOG, "search", repeated("ERROR# a in a"), around("ERROR# ", "a")),
        regex("doctor.families._WIN_DLL", f._WIN_DLL, "search", repeated("WinError 12")),
        regex("doctor.families._DLL_NAME", f._DLL_NAME, "search", repeated('Error loading "a'),
              around('Error loading "', "a.dl")),
        regex("doctor.families._ACL_TEXT", f._ACL_TEXT, "search", repeated("[Error]: a "), around("[Error]: ", " "),
              around("[Error]:", " ", "")),
    ]
    for vendor, rx in f._models():
        cases.append(regex(f"kb/error_families.toml [vendor.{vendor}] models", rx, "search", repeated("ascend1"),
                           repeated("mlu 1"), repeated("mtt s1"), repeated("arc a1"), around("arc(tm) pro ", "a1")))
    for rx, status in f._statuses():
        head = status["pattern"].split("(")[0].split("\\")[0] or "x"
        cases.append(regex(f"kb/error_families.toml [[status]] {status['id']}", rx, "search", repeated(head),
                           around(head, " "), around(head + " in: ", "a"), repeated("a")))
    return cases


def _shapes_cases() -> list:
    """doctor/shapes.py: its regexes, and each pattern of kb/error_shapes.toml as _shapes() compiles it, on
    near-misses of its words."""
    s = shapes
    cases = [
        regex("doctor.shapes._FRAME", s._FRAME, "match", around('  File "', "a"), around('  File "a", line ', "1"),
              around('  File "a", line 1, in ', "a", " ")),
        regex("doctor.shapes._RAISED", s._RAISED, "match", around("", "a."), around("", "a"), around("[rank1]: ", "a.")),
        regex("doctor.shapes._INSTALLED", s._INSTALLED, "search", repeated("/site-packages/"), repeated("/dist-packages"),
              around("/site-packages/", "a.")),
        regex("doctor.shapes._FORMAT_FIELD", s._FORMAT_FIELD, "sub", repeated("{a"), around("{", "a")),
        regex("doctor.shapes._PATH_SEP", s._PATH_SEP, "split", repeated("a")),
        regex("doctor.vendor_checks._WORD", vendor_checks._WORD, "findall", repeated("a"), repeated("a1_"),
              repeated("abcd ")),
        regex("doctor.families._MESSAGE_START", families._MESSAGE_START, "finditer", repeated("a."),
              repeated("aError"), repeated("] "), around("", "a.")),
    ]
    for regexes, when, shape in s._shapes():
        words = " ".join(shape["title"].split()[:3])
        inputs = (repeated(words), around(words, " "), repeated("a "), repeated("a"), repeated("not support "),
                  repeated("fatal error: '"), repeated("Keyword argument a"), repeated("File \"a/"),
                  around("INTERNAL ASSERT FAILED at \"", "a"), repeated("(tm) "), repeated(": for the -"))
        cases.append(Case(f"kb/error_shapes.toml {shape['id']}", regexes + ((when,) if when else ()),
                          lambda text, rxs=regexes + ((when,) if when else ()): [rx.search(text) for rx in rxs], inputs))
    return cases


def _doctor_version_cases() -> list:
    """Each target's [doctor.toolkit]/[doctor.driver] pattern, searched as doctor/stack.read_version does."""
    from torchport.backends import available_targets, load_target

    out = []
    for name in available_targets():
        doctor = load_target(name).doctor
        for part, where in (("toolkit", doctor.toolkit), ("driver", doctor.driver)):
            if where:
                rx = re.compile(where["pattern"])
                out.append(Case(f"backends/{name}.toml doctor.{part}.pattern", (rx,), rx.search, (
                    repeated("version="), repeated("Version=1"), repeated('version": "1.'), repeated("1."),
                    repeated("version :"), around("version=", " "))))
    return out


# ---------------------------------------------------------------- the cases
CASES = [
    # analyze/native.py: C/C++/CUDA sources
    function("porting.native.blank_comments", native.blank_comments,
             repeated("/* "), around('"', '\\"'), around("'", "\\'"), repeated('"x'), repeated("//"),
             around('/* "', '\\"'), around("/* '", "\\'"), around("/*", "//"),
             patterns=(native._COMMENT_OR_STRING, native._STRING_OR_LINE_COMMENT)),
    regex("porting.native._NOT_NEWLINE", native._NOT_NEWLINE, "sub", repeated("x")),
    regex("porting.native._NEWLINE", native._NEWLINE, "finditer", repeated("\n")),
    regex("porting.native._BLOCK_END", native._BLOCK_END, "finditer", repeated("\n}"), repeated("\n")),
    regex("porting.native._LAUNCH_BOUNDS", native._LAUNCH_BOUNDS, "sub",
          repeated("__launch_bounds__("), repeated("__launch_bounds__ (1,"), around("__launch_bounds__(", "1")),
    regex("porting.native._KERNEL", native._KERNEL, "finditer",
          repeated("__global__ "), repeated("__global__ a<"), around("__global__ ", "a<", ";"),
          around("__global__ void k", " "), around("__global__ ", "a ", ";"), around("__global__ void ", "k<T<U<"),
          repeated("__global__ void k<a<b>"), repeated("__global__ void k<a> "), around("__global__ void k<", "a")),
    regex("porting.native._ASM", native._ASM, "finditer", repeated("asm "), around("asm", " ")),
    regex("porting.native._ARCH", native._ARCH, "finditer", repeated("__CUDA_ARCH_"), repeated("CUDA_VERSION_")),
    regex("porting.native._WARP", native._WARP, "finditer", repeated("wmma::"), repeated("__shfl_up"),
          repeated("mma.syn")),
    regex("porting.native._RUNTIME", native._RUNTIME, "findall", repeated("cudaX"), repeated("cublas "),
          repeated("at::cuda::")),
    regex("porting.native._PYBIND", native._PYBIND, "search", repeated("PYBIND11_MODULE "),
          around("PYBIND11_MODULE", " ")),
    regex("porting.native._PYBIND_DEF", native._PYBIND_DEF, "finditer", repeated(".def("), around(".def(", " ")),
    regex("porting.native._TORCH_LIBRARY", native._TORCH_LIBRARY, "finditer", repeated("TORCH_LIBRARY("),
          around("TORCH_LIBRARY(", " ")),
    regex("porting.native._LIBRARY_DEF", native._LIBRARY_DEF, "finditer", around(".def(", " "),
          repeated(".def( TORCH_SELECTIVE_SCHEMA("), around('.def("', "a", "")),
    function("porting.native.scan_native (findings, libraries)", _native,
             spaced('TORCH_LIBRARY(a, m.def("x")'), spaced("__global__ void k("), spaced("asm("),
             spaced("__launch_bounds__(1) __global__ void k<a>("), repeated('TORCH_LIBRARY(a, m.def("x")')),
    # analyze/deps.py, commands/analyze.py, analyze/scan.py
    regex("analyze.deps._REQ_NAME", deps._REQ_NAME, "match", around("", " "), around("", "a", "!")),
    regex("analyze.deps._CUDA_TORCH", deps._CUDA_TORCH, "search", repeated("+cu"),
          repeated("download.pytorch.org/whl/c")),
    regex("analyze.deps._SEPARATORS", deps._SEPARATORS, "sub", repeated("-_."), repeated("a-")),
    regex("commands.analyze._DISTRIBUTION", analyze_api._DISTRIBUTION, "match", around("", " ", "!"),
          around("", "a", "!")),
    regex("porting.callsites._EXT_RECEIVER", callsites._EXT_RECEIVER, "search", around("", "_ext"),
          repeated("_C_")),
    regex("porting.callsites._CALL_AFTER", callsites._CALL_AFTER, "match", around("", " ")),
    function("porting.callsites.call_sites (receiver_before, call_site_pattern)",
             lambda text: callsites.call_sites("a.py", text, OP_CALLS),
             spaced("a" * 60 + "(" + "b.my_op" * 4), spaced("x.my_op("), spaced(".nms_forward "),
             spaced("torch.ops.ns.roi_align("), around("", "a..", ".my_op("), patterns=(OP_CALLS,)),
    # report/sarif.py, core/
    regex("report.sarif._NEWLINES", sarif._NEWLINES, "finditer", repeated("\r\n\r")),
    regex("core.command._PYTHON", command._PYTHON, "match", around("python", "1."), around("python", "1")),
    regex("core.command._FLAGS", command._FLAGS, "fullmatch", around("-", "b")),
    regex("core.textfile._COOKIE", textfile._COOKIE, "match",
          lambda size: b"#" + fill("coding", size).encode() + b"x", lambda size: fill("# ", size).encode()),
    regex("core.textfile._LINE_END", textfile._LINE_END, "finditer", repeated("\r\n"), repeated("\r")),
    # converter/
    regex("converter.config._SETTING", config._SETTING, "finditer", around("", "-"), repeated("device"),
          around("device: cuda", " "), around("'", "device"), around("", "-device"), repeated("device: cuda ,\n"),
          around("device: cuda", " ,")),
    regex("converter.config._FLOW", config._FLOW, "finditer", around("{", "device"), repeated(",device"),
          around("{device: cuda", " "), repeated("{device: cuda,")),
    regex("converter.config._PAIR", config._PAIR, "finditer", around("'", "device"), repeated("'device'"),
          repeated("'device': 'cuda"), repeated("'-")),
    regex("converter.config._NEWLINE", config._NEWLINE, "finditer", repeated("\n")),
    function("converter.config.config_settings (line numbers)", _config, spaced("device: cuda"),
             spaced("{device: cuda, backend: nccl}")),
    regex("converter.context._NEWLINES", context._NEWLINES, "finditer", repeated("\r\n\r")),
    regex("converter.context._LINE_REST", context._LINE_REST, "match", repeated("# "), repeated("\r")),
    regex("converter.multicard.LOGGER_NAMES", multicard.LOGGER_NAMES, "match", repeated("log"), repeated("_LOG")),
    regex("converter.multicard._DEVICE_INDEX", multicard._DEVICE_INDEX, "fullmatch", around("cuda:", "1")),
    function("converter.notebook._IPYTHON_LINE", _nb_line, around("", " "), around("", " ", "= x"),
             around("", "a ", "x"), around("", "a.", "?x"), around("", "\t"), around("", " a", "="),
             patterns=(notebook._IPYTHON_LINE,)),
    regex("converter.notebook._TIMED", notebook._TIMED, "match", around("%time", " ", "-"), around("", " ")),
    regex("converter.notebook._CELL_MAGIC", notebook._CELL_MAGIC, "match", around("%%", "a", "!")),
    regex("converter.python._IMPORT_WORD", python._IMPORT_WORD, "finditer", repeated("import"),
          repeated("impor")),
    regex("converter.python._NEWLINES", python._NEWLINES, "finditer", repeated("\r\n\r")),
    regex("converter.python.PythonConverter.trigger (musa)", MUSA.python.trigger, "finditer", repeated("cud"),
          repeated("cuda"), repeated("torch.cud")),
    function("converter.python.PythonConverter.imports_cuda_package (musa)", MUSA.python.imports_cuda_package,
             repeated("import "), around("", " ", "import"), repeated("from apex\n"), repeated("\n import apex_"),
             patterns=(python._IMPORT_LINE,)),
    regex("converter.python: imported names (musa)", re.compile(r"\b(?:" + words.trie_pattern(
        ["amp", "amp_c", "autocast", "grad_scaler"]) + r")\b"), "finditer", repeated("amp_"), repeated("autocas")),
    regex("converter.shell._ENV_WORD", shell._ENV_WORD, "finditer", repeated("CUDA_"), around("CUDA_", "A", "a"),
          repeated("{CUDA_"), repeated("$CUDA")),
    regex("converter.shell._BACKEND_FLAG", shell._BACKEND_FLAG, "finditer", repeated("-"), repeated("--backend"),
          repeated("--a"), around("--backend", " "), repeated("a--b--backend "), repeated("backend"),
          repeated("--backend=ncc ")),
    regex("converter.shell._DEVICE_FLAG", shell._DEVICE_FLAG, "finditer", repeated("-"), repeated("--device"),
          repeated("--a"), around("--device", " "), repeated("a--b--device "), repeated("--device=cud ")),
    regex("converter.shell._NVIDIA_SMI", shell._NVIDIA_SMI, "finditer", repeated("nvidia-sm"),
          repeated("nvidia-smi")),
    regex("converter.shell.ShellConverter.trigger (musa)", MUSA.shell.trigger, "search", repeated("cud"),
          repeated("nvidia-sm")),
    regex("converter.rules.api.TENSOR_TYPE_NAME", rules_api.TENSOR_TYPE_NAME, "fullmatch",
          around("torch.cuda.", "Tensor")),
    regex("converter.rules.devices.DEVICE_STRING", devices.DEVICE_STRING, "match", around("cuda:{", "x", "")),
    regex("converter.rules.devices.PLAIN_DEVICE", devices.PLAIN_DEVICE, "match", around("cuda:", "1")),
    regex("converter.rules.devices.DEVICE_NAME", devices.DEVICE_NAME, "search", around("", "_device"),
          repeated("_dev_type_")),
    regex("converter.rules.devices._QUOTE", devices._QUOTE, "match", around("", "r"), around("", "b", "")),
    regex("converter.rules.devices._NAMED_FIELD", devices._NAMED_FIELD, "search", repeated("{}")),
    regex("converter.rules.apex.NOT_FORWARD", apex.NOT_FORWARD, "search", repeated(".step "), around(".zero_grad", " ", "")),
    regex("converter.run._CONTEXTUAL", converter_run._CONTEXTUAL, "search", repeated("global_"), repeated("__futur")),
    regex("converter.run._PACKAGE_METADATA", converter_run._PACKAGE_METADATA, "search", repeated("a/"),
          repeated("a.egg-inf/"), around("", "a", ".egg-info")),
    regex("ckpt.UNSUPPORTED_GLOBAL", ckpt.UNSUPPORTED_GLOBAL, "findall", around("Unsupported global: GLOBAL ", "a.", "!")),
    regex("converter.rules.devices._COMMENT", devices._COMMENT, "sub", repeated("#"), repeated("# a\n")),
    regex("converter.rules.devices.DEVICE_WORD", devices.DEVICE_WORD, "match", repeated("a"), around("cpu:", "1"),
          around("", "a", ":1x")),
    function("converter.run._CUDA_MENTION", lambda text: converter_run._CUDA_MENTION.search(text.encode()),
             repeated("barra"), repeated("cud"), repeated("barracuda "), patterns=(converter_run._CUDA_MENTION,)),
    regex("converter.rules.devices._INDENT", devices._INDENT, "match", repeated(" \t"), around("", " ", "x")),
    regex("converter.rules.distributed.BACKEND_NAME", distributed.BACKEND_NAME, "search",
          around("", "_backend")),
    regex("converter.rules.distributed._PAIR", distributed._PAIR, "fullmatch",
          lambda size: " " * (size // 2) + "a" + " " * (size // 2), around("", "a", ":")),
    regex("converter.rules.distributed._IDENTITY", distributed._IDENTITY, "search", repeated("isx "),
          around("is", " ", "x"), repeated("is")),
    regex("converter.rules.env.ENV_NAME", env.ENV_NAME, "match", around("CUDA_", "A", "a"),
          around("PYTORCH_CUDA_", "_", "a")),
    regex("converter.rules.env.ENV_IN_TEXT", env.ENV_IN_TEXT, "search", around("", "NCCL_", "a"),
          around("NCCL_", "A", "a")),
    regex("converter.rules.env.ENV_HOLDER", env.ENV_HOLDER, "search", repeated("env_"), around("", "_env", "x")),
    regex("converter.rules.imports._FROM_MODULE", imports._FROM_MODULE, "match", around("from", " ", "")),
    regex("converter.rules.messages.CUDA_OOM", messages.CUDA_OOM, "search", repeated("CUDA ")),
    regex("converter.rules.methods._IS_CUDA_ASSIGNED", methods._IS_CUDA_ASSIGNED, "finditer",
          repeated("x.is_cuda:"), around("x", " ", ".is_cuda"), repeated(".is_cuda "), repeated("x.is_cuda ==")),
    function("converter.rules.methods.assigns_is_cuda (once per x.is_cuda)", _assigns_is_cuda,
             spaced("x.is_cuda = 1\ny.is_cuda"), repeated("x.is_cuda:"),
             lambda size: "".join(f"a{i}.is_cuda = 1\n".ljust(99) + "\n" for i in range(size // 100))),
    # doctor/
    regex("doctor.checks._MAJOR_MINOR", checks._MAJOR_MINOR, "match", around("", "1")),
    *[regex(f"doctor.checks._BUILD_FIELDS[{key!r}]", rx, "search", repeated(f"{key}:\n"),
            around(key, "\n"), repeated(f"{key}='\n"), repeated(f"{key}: x\n"), around(f"{key}:", " "))
      for key, rx in checks._BUILD_FIELDS.items()],
    regex("doctor.checks._TORCH_PIN", checks._TORCH_PIN, "match", around("torch", " "), around("torch", " (")),
    regex("doctor.checks._TORCH_IN_VERSION", checks._TORCH_IN_VERSION, "search", repeated("torch1.")),
    regex("doctor.checks._DEVICE_IDS", checks._DEVICE_IDS, "fullmatch", around("", "1,"), around("1", " "),
          around("", "1 , ")),
    regex("doctor.stack._VAR", stack._VAR, "sub", repeated("$"), repeated("${a"), repeated("$a")),
    regex("doctor.stack._SUFFIX", stack._SUFFIX, "sub", repeated("1.rc"), repeated("1.post."), repeated("1-")),
    regex("doctor.explain._NEWLINE", explain._NEWLINE, "finditer", repeated("\n")),
    regex("doctor.explain._ERROR_LINE", explain._ERROR_LINE, "search", repeated("erro"), repeated("could no")),
    regex("doctor.explain._WORD", explain._WORD, "findall", repeated("ab"), repeated("a ")),
    regex("doctor.explain._EXCEPTION_LINE", explain._EXCEPTION_LINE, "finditer", around("", "a", " x"),
          around("", "Error", "x"), repeated("[rank1]: a\n"), repeated("\n \t"), around("", "a.", " ")),
    regex("doctor.explain._WARNING", explain._WARNING, "search", repeated("Warning"), around("", " ", "[W"),
          around("rank1]:", " "), repeated("[WARNIN")),
    regex("doctor.explain._ERROR_WORD", explain._ERROR_WORD, "search", repeated("Errorx"), repeated("aERROR")),
    *_families_cases(),
    *_shapes_cases(),
    function("doctor.explain.unexplained (a traceback per line, none explained)", lambda text: explain.unexplained(
        text, []), repeated("Traceback (most recent call last)\nValueError: x\n"), repeated("E\nValueError\n")),
    *_kb_cases(),
    *_doctor_version_cases(),
    regex("kb.packages._SEPARATORS", packages._SEPARATORS, "sub", repeated("-_."), repeated("a-")),
    # porting/
    regex("commands.port._LAUNCH", porting_api._LAUNCH, "finditer", around("a", " "), repeated("a <"),
          repeated("a<<")),
    regex("porting.buildglue._CMAKE_CUDA", buildglue._CMAKE_CUDA, "finditer", repeated("LANGUAGES "),
          repeated("enable_language("), around("find_package(", " "), repeated("LANGUAGES CUDA_")),
    regex("porting.buildglue._SOURCE_NAME", buildglue._SOURCE_NAME, "finditer", repeated("a"),
          repeated("a.c"), repeated("a/"), repeated(".cu."), repeated(".cux")),
    regex("porting.buildglue._NEWLINE", buildglue._NEWLINE, "finditer", repeated("\n")),
    function("porting.buildglue.port_build_file (CMake, line numbers)", _build, spaced("CUDA_NVCC_FLAGS"),
             spaced("a.cu")),
    regex("porting.engine._CUDA_LOOKING", engine._CUDA_LOOKING, "finditer", repeated("cudaA"),
          repeated("cud"), repeated("at::cuda::a::")),
    regex("porting.engine._NAME_KEY", engine._NAME_KEY, "match", around("a", "::a", "!"), around("", "a", "!")),
    regex("porting.engine._PATH_KEY", engine._PATH_KEY, "match", around("", "a/", "<"), around("", " ", "/"),
          around("", "a", "/")),
    regex("porting.engine._NEWLINE", engine._NEWLINE, "finditer", repeated("\n")),
    regex("porting.engine._CALLED", engine._CALLED, "match", around("", " ")),
    regex("porting.engine._PAREN", engine._PAREN, "finditer", repeated("(")),
    function("porting.engine._call_at_end", lambda text: engine._call_at_end(text, len(text)),
             around("", "a", "x()"), around("f(", " ", ")"), around("", " ", "f()"), around("", "a", "()x")),
    regex("porting.engine._CLASS_NAME", engine._CLASS_NAME, "finditer", repeated("class "), around("class", " ")),
    regex("porting.engine._DECLARATION", engine._DECLARATION, "finditer", around("T", " ", "y"),
          repeated("a::"), repeated("T x = "), repeated("const "), repeated("a "), around("T", "\n", "y"),
          repeated("T const& "), around("a", " ::", ""), repeated("a :: "), repeated("a&")),
    regex("porting.engine._INIT_END", engine._INIT_END, "finditer", repeated(";"), repeated("a")),
    regex("porting.engine._INCLUDE_LINE", engine._INCLUDE_LINE, "finditer", repeated("#include <"),
          around("#include <", "a"), around("", " ")),
    regex("porting.engine._DEFINE", engine._DEFINE, "finditer", repeated("#define "), around("#define", " ")),
    regex("porting.engine._ASSIGNED_WORD", engine._ASSIGNED_WORD, "finditer", repeated("a "),
          around("a", " "), repeated("a="), repeated("a==")),
    regex("porting.engine._ASSIGNED_CUDA_NAME", engine._ASSIGNED_CUDA_NAME, "finditer", repeated("at::cuda::"),
          repeated("at::cuda::a::"), around("at::cuda::a", " ")),
    regex("porting.engine._CONST", engine._CONST, "finditer", repeated("const"), repeated("constexp")),
    regex("porting.engine._DISPATCH_IMPL", engine._DISPATCH_IMPL, "finditer", repeated("TORCH_LIBRARY_IMPL("),
          around("TORCH_LIBRARY_IMPL(", " ")),
    regex("porting.engine._COOPERATIVE", engine._COOPERATIVE, "finditer", repeated("grid.sync("),
          repeated("cudaLaunchCooperativeKernel")),
    regex("porting.engine._WARP_SIZE", engine._WARP_SIZE, "finditer", repeated("& "), around("&", " "),
          repeated("warpSize = 3")),
    *[regex(f"porting.engine._REVIEW[{i}] (prefilter)", hint, "search", repeated("as"), repeated("CUDA_"),
            repeated("_syn"), repeated("grid.syn"), repeated("% 3"))
      for i, (hint, _, _) in enumerate(engine._REVIEW)],
    regex("porting.engine.PortMap.pattern (musa)", PORT_MAP.pattern, "finditer", repeated("cudaMalloc"),
          repeated("cudaMallo "), repeated("cuda"), repeated("at::cuda::")),
    regex("porting.engine.PortMap.kept (hip)", engine.load_map("hip").kept, "match", around("at::cuda::", "a")),
    function("porting.engine.port_text (receiver_class, FileFacts, _own_names)", _port,
             spaced("x.is_cuda();"), spaced(")" * 90 + ".is_cuda("), spaced("a.b.is_cuda() "),
             lambda size: "".join(f"a{i}.is_cuda(); ".ljust(99) + "\n" for i in range(size // 100)),
             lambda size: "".join(f"cudaX{i} = 1; ".ljust(99) + "\n" for i in range(size // 100)),
             lambda size: "const int " + "".join(f"cudaX{i}= ".ljust(100) for i in range(size // 100)),
             lambda size: "".join(f"auto a{i} = ".ljust(100) for i in range(size // 200))
             + "f();" + "".join(f"a{i}.is_cuda();".ljust(100) for i in range(size // 200)),
             spaced("at::Tensor x; x.is_cuda(); ")),
    regex("porting.lexer._TOKEN", lexer._TOKEN, "finditer", repeated('R"('), repeated("a1"), repeated("1"),
          repeated("#include <"), around("a", " "), repeated("a ::"), repeated("/*"), repeated("'\\")),
    regex("porting.lexer._SKIP", lexer._SKIP, "finditer", repeated('R"('), repeated("a1"), repeated("1."),
          repeated("#include <"), repeated("u8'"), repeated("'\\"), repeated('"\\'), repeated("/*"),
          repeated("1'"), repeated('R"a('), repeated("#include \"")),
    function("porting.lexer.include_path", lexer.include_path, repeated('<"'), repeated("<"), around("<", " ", "x"),
             around('#include "', "<", '"'), around("#include <", '"', ">"), patterns=(lexer._INCLUDE_PATH,)),
    # report/, runtime/
    regex("report.html._TOKEN", html._TOKEN, "findall", repeated("a "), repeated("a.")),
    regex("report.html._URL", html._URL, "finditer", repeated("http://"), repeated("https://a"), repeated("http"),
          around("https://", "a", " ")),
    regex("report.html.migrate._CODE_SPAN", html_migrate._CODE_SPAN, "finditer", repeated("`"), repeated("`a"),
          around("`", "a", "\n")),
    regex("runtime.devices._CUDA_STRING", runtime_devices._CUDA_STRING, "match", around("cuda:", "1")),
    regex("runtime.patches._DEVICE_IN_SIGNATURE", patches._DEVICE_IN_SIGNATURE, "search", repeated("device "),
          around("device", " ")),
]

# Regexes that are not compiled at import (built from the rules, a map, a name) are covered above by an
# instance; these name the functions that build them, for tests/test_redos.py.
DYNAMIC = {
    "torchport.converter.python.PythonConverter.__init__": "converter.python.PythonConverter.trigger (musa)",
    "torchport.converter.python.PythonConverter._relevant_lines": "converter.python: imported names (musa)",
    "torchport.converter.shell.ShellConverter.__init__": "converter.shell.ShellConverter.trigger (musa)",
    "torchport.porting.callsites.call_site_pattern":
        "porting.callsites.call_sites (receiver_before, call_site_pattern)",
    "torchport.porting.engine.PortMap.compile": "porting.engine.PortMap.pattern (musa)",
    "torchport.porting.engine.load_map": "porting.engine.PortMap.kept (hip)",
    "torchport.porting.lexer._compile": "porting.lexer._TOKEN",
    "torchport.doctor.explain._compiled": "kb/errors.toml ...",
    "torchport.doctor.families._statuses": "kb/error_families.toml [[status]] ...",
    "torchport.doctor.families._models": "kb/error_families.toml [vendor.*] models",
    "torchport.doctor.shapes._shapes": "kb/error_shapes.toml ...",
    "torchport.doctor.stack.read_version": "backends/<target>.toml doctor.toolkit.pattern ...",
}


def timed(case: Case, size: int) -> float:
    worst = 0.0
    for make in case.inputs:
        text = make(size)
        start = time.perf_counter()
        case.run(text)
        worst = max(worst, time.perf_counter() - start)
    return worst


def timed_apart(case: Case, size: int, timeout: float) -> float:
    """timed() in a child process, given up after `timeout` seconds (a quadratic regex in C cannot be
    interrupted): the time, or `timeout` when it ran out."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=lambda: send.send(timed(case, size)))
    child.start()
    seconds = receive.recv() if receive.poll(timeout) else timeout
    child.kill()
    child.join()
    return seconds


def commands(size: int, timeout: float) -> list:
    """(what, seconds) of the issue's end-to-end paths (`timeout` when one ran out)."""
    out = []
    tool = [sys.executable, "-m", "torchport"]
    env = {"PYTHONPATH": str(ROOT / "src")}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        project = tmp / "project"
        project.mkdir()
        # near-misses of the kernel pattern: `__global__` with no `(` before the next `;`, and template args
        (project / "kernels.cu").write_text(fill("__global__ void k<a<b ", size // 2) + fill("__global__ ", size // 2)
                                            + ";\n")
        for what, args in (("torchport analyze (1 MB .cu)", ["analyze", str(project), "-o", str(tmp / "a"), "-j", "1"]),
                           ("torchport port-ext --to musa (1 MB .cu)",
                            ["port-ext", str(project), "--to", "musa", "-o", str(tmp / "p"), "-j", "1"]),
                           ("torchport port-ext --to npu (1 MB .cu, inventory)",
                            ["port-ext", str(project), "--to", "npu", "-o", str(tmp / "n"), "-j", "1"])):
            out.append((what, _run(tool + args, env, timeout)))
        for mb in (1, 5):
            log = tmp / f"{mb}.log"
            # one line: a long word ending in `_impl`, then many short near-misses (not musa)
            half = mb * size // 2
            log.write_text(fill("nms_impl", half) + ": implementation for device cuda:0 not found. "
                           + fill("nms_impl: implementation for device cuda:0 ", half) + "\n")
            out.append((f"torchport explain --file ({mb} MB, one line)",
                        _run(tool + ["explain", "--file", str(log)], env, timeout)))
    return out


def _run(cmd, env, timeout) -> float:
    import os

    start = time.perf_counter()
    try:
        p = subprocess.run(cmd, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return timeout
    seconds = time.perf_counter() - start
    if p.returncode not in (0, 1):  # explain exits 1 when nothing is known
        raise SystemExit(f"{' '.join(cmd[2:4])} failed ({p.returncode}): {p.stderr[-2000:]}")
    return seconds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=SIZE, help="characters of each adversarial text (default 1 MiB)")
    ap.add_argument("--only", metavar="TEXT", help="only the cases whose name contains TEXT")
    ap.add_argument("--no-commands", action="store_true", help="skip the end-to-end commands")
    ap.add_argument("--timeout", type=float, default=30, metavar="S",
                    help="give a regex up after S seconds (each runs in a child process; 0: in this one, no limit)")
    args = ap.parse_args(argv)
    slow = 0
    width = max(len(c.name) for c in CASES)
    for case in CASES:
        if args.only and args.only not in case.name:
            continue
        seconds = timed_apart(case, args.size, args.timeout) if args.timeout else timed(case, args.size)
        slow += seconds >= LIMIT
        over = ">" if args.timeout and seconds >= args.timeout else " "
        print(f"{case.name:<{width}} {over}{seconds:8.3f}  {'SLOW' if seconds >= LIMIT else 'ok'}", flush=True)
    if not args.no_commands and not args.only:
        limit = 10 * args.timeout if args.timeout else None
        for what, seconds in commands(args.size, limit):
            over = ">" if limit and seconds >= limit else " "
            print(f"{what:<{width}} {over}{seconds:8.3f}  (whole command)", flush=True)
    print(f"{slow} regex(es) at or over {LIMIT:g} s" if slow else f"every regex under {LIMIT:g} s")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
