"""torchport explain reads what an error line's words say when no known error and no family explains it
(doctor/shapes.py, kb/error_shapes.toml): each shape reads its example, a vendor's shape answers only for the vendor
the log names, a documented answer always comes first, a reading is never called a known error, and a traceback
says when a library raised an exception itself."""
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from torchport.doctor.explain import explain
from torchport.doctor.shapes import _shapes

ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
SHAPES = [shape for _regexes, _when, shape in _shapes()]


def _top(text: str):
    matches, _nearest = explain(text)
    return matches[0] if matches else None


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s["id"])
def test_each_shape_reads_its_example(shape):
    top = _top(shape["example"])
    assert top is not None and top.error.id == f"shape:{shape['id']}"
    assert top.error.confidence == "inferred"
    for field in (top.error.title, top.error.cause, top.error.fix):   # every {part} was filled
        assert "{" not in field and "}" not in field, (shape["id"], field)


@pytest.mark.parametrize("text, shape, words", [
    ("RuntimeError: Invalid device string: 'musa:0'", "device-type-unknown", ["torch_musa"]),
    ("RuntimeError: Expected one of cpu, cuda device type at start of device string: xpu", "device-type-unknown",
     ["intel_extension_for_pytorch"]),
    ("bishengir-compile: for the --target option: Cannot find option named 'Ascend910Z'!", "compiler-target-unknown",
     ["bishengir-compile", "Ascend910Z"]),
    ("ImportError: cannot import name 'is_npu_available' from 'accelerate.utils' (/x/accelerate/utils/__init__.py)",
     "name-missing-from-package", ["accelerate.utils.is_npu_available", "pip show accelerate"]),
    ("AttributeError: module 'diffusers.utils' has no attribute 'is_torch_xpu_available'", "name-missing-from-package",
     ["pip show diffusers"]),
    ("src/prof.cpp:304:3: error: \u2018CNPAPI_NEW_CBID\u2019 was not declared in this scope; did you mean "
     "\u2018CNPAPI_OLD_CBID\u2019?", "undeclared-identifier", ["CNPAPI_NEW_CBID"]),
    ("Unknown argument: --rpc-new-flag", "unknown-option", ["--rpc-new-flag"]),
    ('exec: "vendor-device-plugin": executable file not found in $PATH: unknown', "missing-file",
     ["vendor-device-plugin"]),
    ("AssertionError: local_world_size (8) must be less than or equal to the number of visible devices (0)",
     "no-device-visible", ["VISIBLE_DEVICES"]),
    ("import torch_mlu\nSegmentation fault (core dumped)", "native-crash", ["cnmon", "torch_mlu"]),
    ("TypeError: fused_op() missing 1 required positional argument: 'TILE_K'", "argument-mismatch", ["TILE_K"]),
    ("RuntimeError: expected m1 and m2 to have the same dtype, but got: float != c10::Half", "dtype-mismatch",
     ["float", "c10::Half"]),
    ("RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x1024 and 2048x8)", "shape-mismatch", ["checkpoint"]),
    ("NotImplementedError: Tril op is not supported for now on musa", "capability-gap", ["torch_musa", "MUSA_LAUNCH"]),
    ("RuntimeError: ProcessGroupHCCL does not support alltoall_base with these sizes", "capability-gap",
     ["torch_npu"]),
    ("RuntimeError: this torch_mlu build does not support the device MLU220", "chip-unsupported", ["cnmon", "MLU220"]),
    ("AssertionError: flash attention requires CUDA, got device npu:0", "cuda-only-code", ["npu"]),
    ("ValueError: Invalid backend: 'mccl'", "backend-unknown", ["torch_musa", "init_process_group"]),
    ("torch.xpu.is_available() returned False on this machine", "no-device-visible", ["xpu-smi"]),
    ("Out of memory: Killed process 31337 (python)", "process-killed", ["dmesg"]),
    ("PermissionError: [Errno 13] Permission denied: '/dev/dri/renderD128'", "device-permission",
     ["/dev/dri/renderD128", "render"]),
    ("requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries "
     "exceeded with url: /api/models/x", "hub-unreachable", ["HF_ENDPOINT"]),
    ("_pickle.UnpicklingError: invalid load key, 'v'.", "checkpoint-unreadable", ["git lfs pull"]),
    ("RuntimeError: Input type (c10::Half) and bias type (float) should be the same", "dtype-mismatch",
     ["c10::Half and float"]),   # torch's wording, which op-plugin and torch_mlu copy: not traced to either
    ("ValueError: Only GPU tensors are accepted by fused_norm", "cuda-only-code", ["non-CUDA"]),   # no vendor named
    ("TypeError: quant() missing 2 required positional arguments: 'scale' and 'zero_point'", "argument-mismatch",
     ["'scale' and 'zero_point'"]),
    ("python -c 'import torch_npu' 段错误 (core dumped)", "native-crash", ["npu-smi info"]),
    ("OSError: [WinError 193] %1 is not a valid Win32 application", "windows-dll", ["WinError 193"]),
    ("RuntimeError: Expected attn_mask dtype to be bool or to match query dtype, but got attn_mask.dtype: float and "
     " query.dtype: c10::Half instead.", "dtype-mismatch", ["c10::Half and float"]),
    ("torch._subclasses.fake_tensor.UnsupportedOperatorException: RuntimeError: Failed running call_function "
     "_C.fused_add_norm(*(FakeTensor(..., device='npu:0'),))", "custom-op-missing", ["_C.fused_add_norm"]),
    ("ModuleNotFoundError: No module named 'timm.layers.fused_ext'", "module-not-found", ["pip show timm"]),
    ("ERROR: No matching distribution found for torch_mlu==1.20.0", "pip-no-release", ["pip index versions torch_mlu"]),
    ("vllm-ascend 0.9.1 requires torch-npu==2.5.1, but you have torch-npu 2.6.0 which is incompatible.",
     "pip-conflict", ["vllm-ascend", "torch-npu==2.5.1", "torch-npu 2.6.0"]),
])
def test_shapes_read_their_parts(text, shape, words):
    top = _top(text)
    assert top is not None and top.error.id == f"shape:{shape}", (text, top and top.error.id)
    said = f"{top.error.title} {top.error.cause} {top.error.fix}"
    assert all(w in said for w in words), (shape, said)


def test_a_vendor_shape_answers_only_for_the_one_vendor_the_log_names():
    # "not supported" alone names no vendor: no vendor's advice is given
    assert _top("RuntimeError: this op is not supported") is None
    # two vendors named: whose stack refuses it is not known, so no answer from either
    assert _top("torch_npu and torch_musa loaded\nRuntimeError: this op is not supported") is None
    mlu = _top("RuntimeError: MLU370: this op is not supported")   # a device model names the vendor
    assert mlu.error.target == "mlu" and "torch_mlu" in mlu.error.fix and "torch_npu" not in mlu.error.fix
    # a device type no vendor owns gets no device answer
    assert _top("RuntimeError: Invalid device string: 'tpu'") is None


def test_documented_answers_come_before_readings_of_words():
    log = "RuntimeError: aten::foo is not supported on npu\n" + "RuntimeError: ExchangeDevice:"
    matches, _ = explain(log)
    assert [m.error.id for m in matches] == ["npu-exchange-device", "shape:capability-gap"]
    assert matches[1].line == 1   # earlier in the log, still after the documented answer


def test_a_warning_reading_comes_after_the_error_it_precedes():
    log = ("WARNING 01-02 12:22:55 [x.py:18] deep_ep is not installed, you can't use the api of it.\n"
           "TypeError: launch() got an unexpected keyword argument 'stream_id'")
    matches, _ = explain(log)
    assert [m.error.id for m in matches] == ["shape:argument-mismatch", "shape:optional-package-absent"]
    # the warning shape reads warning lines only
    assert _top("RuntimeError: deep_ep is not installed") is None


def test_a_build_failure_points_to_the_compiler_error_above_it():
    log = ("csrc/ops.cpp:7:10: error: 'aclnnFoo' was not declared in this scope\n"
           "RuntimeError: Error building extension 'ops'")
    matches, _ = explain(log)
    assert [m.error.id for m in matches] == ["shape:undeclared-identifier", "shape:build-failed"]
    assert matches[1].error.defers


TRACE = 'Traceback (most recent call last):\n  File "/app/run.py", line 3, in <module>\n    main()\n'


@pytest.mark.parametrize("frame, code, exception, expected", [
    # a library's own raise or assert
    ("/venv/lib/python3.10/site-packages/peft/tuners/model.py", "raise ValueError(f'{m} is not supported')",
     "ValueError: Target module Linear() is not supported", "raised-by:peft"),
    ("/usr/lib/python3/dist-packages/mmengine/structures/data.py", "assert isinstance(item, (str, int))",
     "AssertionError", "raised-by:mmengine"),
    # Python raised it running the library's line
    ("/venv/lib/python3.10/site-packages/vllm_plugin/ops/moe.py", "return _BACKENDS[0]",
     "UnboundLocalError: local variable '_BACKENDS' referenced before assignment", "raised-by:vllm_plugin"),
    # torch's frame, and a C++ error passed up through a library's call: not the library's own
    ("/venv/lib/python3.10/site-packages/torch/nn/modules/module.py", "raise ValueError('x')", "ValueError: x", None),
    ("/venv/lib/python3.10/site-packages/vllm_ascend/ops/rope.py", "return torch_npu.npu_rope(q, k)",
     "RuntimeError: call aclnnRope failed", None),
    # the user's own script is not "a library"
    ("/home/me/train.py", "raise ValueError('bad')", "ValueError: bad", None),
])
def test_a_traceback_says_who_raised_the_exception(frame, code, exception, expected):
    log = TRACE + f'  File "{frame}", line 88, in f\n    {code}\n{exception}\n'
    matches, _ = explain(log)
    ids = [m.error.id for m in matches if m.error.id.startswith("raised-by:")]
    assert ids == ([expected] if expected else [])
    if expected:
        package = expected.split(":")[1]
        said = next(m.error for m in matches if m.error.id == expected)
        assert f"{package}/" in said.cause and "line 88" in said.cause and said.confidence == "inferred"


def test_library_names_next_to_chinese_words_are_read():
    top = _top("import torch_musa的时候提示libmupti.so.0.9找不到的错误")
    assert top is not None and top.error.id == "library:libmusa" and "libmupti.so.0.9" in top.error.title
    top = _top("import torch_musa之后报错说libmusa_python.so.1 中的符号找不到")   # "its symbols are not found"
    assert top is not None and top.error.id == "library:libmusa_python" and "another release" in top.error.title


@pytest.mark.subprocess
def test_the_cli_never_calls_a_reading_a_known_error(tmp_path):
    text = "NotImplementedError: Tril op is not supported for now on musa"
    p = subprocess.run([sys.executable, "-m", "torchport", "explain", text], capture_output=True, text=True, env=ENV)
    assert p.returncode == 1 and p.stdout.startswith("not a known error; what its words say:")
    assert "read from the message's shape" in p.stdout
    p = subprocess.run([sys.executable, "-m", "torchport", "explain", "--json", text], capture_output=True, text=True,
                       env=ENV)
    data = json.loads(p.stdout)
    assert p.returncode == 1 and data["known"] is False and data["matches"][0]["confidence"] == "inferred"
    # a documented answer with a reading beside it is known; a log can come on standard input
    log = text + "\nRuntimeError: ExchangeDevice:\n"
    p = subprocess.run([sys.executable, "-m", "torchport", "explain", "--file", "-"], input=log, capture_output=True,
                       text=True, env=ENV)
    assert p.returncode == 0 and p.stdout.index("[npu-exchange-device") < p.stdout.index("[shape:capability-gap")


# ----------------------------------------------------------------- the vendors' own raise sites
CHECKS = json.loads((ROOT / "src" / "torchport" / "kb" / "vendor_checks.json").read_text(encoding="utf-8"))


def test_the_raise_sites_are_extracted_with_their_sources():
    vendors = {row[0] for row in CHECKS["checks"]}
    assert vendors == {"npu", "mlu", "musa", "xpu"} and len(CHECKS["checks"]) > 3000
    for source in CHECKS["sources"]:
        assert source["repository"].startswith("github:") and len(source["commit"]) == 40
    for vendor, source, where, kind, _condition, message in CHECKS["checks"]:
        assert 0 <= source < len(CHECKS["sources"]) and CHECKS["sources"][source]["vendor"] == vendor
        assert ":" in where and kind and len("".join(message.split("{}")).split()) >= 3


def _first(vendor: str, kind: str) -> list:
    """A message of `vendor` with a condition, a value put in, two fixed parts and no vendor's name of its own."""
    from torchport.doctor.families import vendors_in

    return next(r for r in CHECKS["checks"] if r[0] == vendor and r[3] == kind and r[4] and not vendors_in(r[5])
                and len([p for p in r[5].split("{}") if len(p.strip()) >= 4]) >= 2 and len(r[5]) > 40)


@pytest.mark.parametrize("vendor", ["npu", "mlu", "musa", "xpu"])
def test_a_vendor_message_is_traced_to_where_it_is_raised(vendor):
    row = _first(vendor, "TORCH_CHECK")
    line = "RuntimeError: " + row[5].replace("{}", "7")   # the message with a value where the code puts one
    package = {"npu": "torch_npu", "mlu": "torch_mlu", "musa": "torch_musa", "xpu": "xpu"}[vendor]
    top = _top(f"import {package}\n{line}")
    assert top is not None and top.error.id == f"check:{vendor}:{row[2]}", (line, top and top.error.id)
    assert row[4] in top.error.cause and row[2] in top.error.source and top.error.target == vendor
    assert top.error.confidence == "documented"
    # the same words in a log that names no vendor, or another one, are not traced to this vendor's code
    other = "torch_npu" if vendor != "npu" else "torch_musa"
    for log in (line, f"import {other}\n{line}"):
        matches, _ = explain(log)
        assert not any(m.error.id.startswith(f"check:{vendor}:") for m in matches)


def test_a_message_needs_its_words_in_order():
    row = _first("npu", "TORCH_CHECK")
    parts = [p for p in row[5].split("{}") if p.strip()]
    scrambled = "RuntimeError: " + " 7 ".join(reversed(parts)) + " torch_npu"
    assert not any(m.error.id == f"check:npu:{row[2]}" for m in explain(scrambled)[0])


def test_a_guess_about_some_vendors_is_not_offered_for_another():
    from torchport.doctor.explain import known_errors

    about = {e.id: e.vendors for e in known_errors() if e.vendors}
    assert set(about["any-vendor-package-not-imported"]) == {"npu", "mlu", "musa"}
    # an XPU log whose words resemble that entry gets no guess from it
    _matches, nearest = explain("intel_extension_for_pytorch: torch.xpu does not exist yet, the package was not imported")
    assert not any(m.error.id in about for m in nearest)


def test_the_extractor_reads_checks_and_raises():
    import importlib.util

    spec = importlib.util.spec_from_file_location("extract_checks", ROOT / "tools" / "extract_checks.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    cpp = ('void f(const Tensor& self) {\n  TORCH_CHECK(self.dim() == 2, "The input must be 2-dimensional, but got ",\n'
           '              self.dim(), "-dimensional" + OPS_ERROR(ErrCode::PARAM));\n'
           '  TORCH_CHECK(ok, "short");\n}\n')
    assert tool.checks_in("ops/F.cpp", cpp) == [
        (2, "TORCH_CHECK", "self.dim() == 2", "The input must be 2-dimensional, but got {} -dimensional")]
    py = ('def g(x):\n    if x.device.type != "npu":\n        raise ValueError(f"Expected an npu tensor, got {x.device} '
          'instead of the device")\n')
    macro = '#define CHECK_ACL(err) \\\n  TORCH_CHECK(err == 0, "NPU function error: ", #err, \\\n  ", error code is ", err)\n'
    assert tool.checks_in("core/E.h", macro) == []   # an error macro's envelope is no message of its own
    assert tool.checks_in("pkg/g.py", py) == [
        (3, "ValueError", 'x.device.type != "npu"', "Expected an npu tensor, got {} instead of the device")]


def test_a_library_log_line_reads_its_reason_on_the_next_line():
    log = ("muDNN(v3000) GPU=0 ERROR# EXECUTION_FAILED in Unary::Run, Reason:\n"
           "     musa runtime failed unary_kernel.muh:88: err 98 = invalid device function\n")
    top = _top(log)
    assert top.error.id == "family:mudnn-log" and "another GPU architecture" in top.error.title
    assert "invalid device function" in top.error.cause and "mthreads-gmi" in top.error.fix
    # without a reason the answer is muDNN's refusal of the inputs, as before
    top = _top("muDNN ERROR# NOT_SUPPORTED in Conv::Run\n")
    assert top.error.title == "muDNN NOT_SUPPORTED in Conv" and "dtype muDNN takes" in top.error.fix


def test_an_intel_gpu_out_of_memory_is_the_one_block_limit_only_when_the_card_has_room():
    room = ("XPU out of memory. Tried to allocate 5.00 GiB (GPU 0; 15.11 GiB total capacity; 1.40 GiB already "
            "allocated; 1.90 GiB reserved in total by PyTorch)")
    full = room.replace("1.40 GiB already", "13.40 GiB already").replace("1.90 GiB reserved", "13.90 GiB reserved")
    assert _top(room).error.id == "family:xpu-large-allocation"
    assert _top(full).error.id == "any-device-out-of-memory"
