"""The corpus checker's own helpers must catch what they are meant to catch (offline)."""
import ast
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from corpus import check, defined_names, device_lines, line_map, torch_cuda_lines, unsupported_drift


def test_torch_cuda_lines_follow_every_import_spelling():
    src = ("import torch as th\nimport torch.cuda as tc\nfrom torch import cuda\nfrom torch.cuda.amp import autocast\n"
           "th.cuda.synchronize()\ntc.empty_cache()\ncuda.init()\nwith autocast():\n    pass\nx.cuda()\n"
           "th.npu.synchronize()\n")
    assert torch_cuda_lines(ast.parse(src)) == {5, 6, 7, 8}


def test_defined_names_see_renamed_user_identifiers():
    a = ast.parse("def configure_nccl(num_gpus):\n    gpu_mem = 1\n    self.cuda_device = 2\n")
    b = ast.parse("def configure_hccl(num_gpus):\n    gpu_mem = 1\n    self.cuda_device = 2\n")
    assert defined_names(a) != defined_names(b)
    c = ast.parse("torch.backends.cuda.matmul.allow_tf32 = True\n")
    d = ast.parse("torch.npu.matmul.allow_hf32 = True\n")
    assert defined_names(c) == defined_names(d)


def test_line_map_follows_inserted_lines():
    old = "import torch\nx = 1\ny = torch.cuda.foo()\n"
    new = "import torch\nimport torch_npu\nx = 1\ny = torch.cuda.foo()\n"
    assert line_map(old, new)[4] == 3


def test_check_flags_unreported_cuda_use_and_changed_data(tmp_path):
    src, out, rep = tmp_path / "src", tmp_path / "out", tmp_path / "rep"
    for d in (src, out, rep):
        d.mkdir()
    (src / "a.py").write_text("import torch\ntorch.cuda.nvtx.mark('x')\n")
    (out / "a.py").write_text("import torch\nimport torch_npu\ntorch.cuda.nvtx.mark('x')\n")
    (src / "d.txt").write_text("cuda")
    (out / "d.txt").write_text("npu")
    (rep / "unsupported_api.csv").write_text("File,Start Line,End Line,OP,Tips\n")
    problems = check(src, out, rep, "npu")
    assert any("a.py:2: torch.cuda use left" in p for p in problems)
    assert any("d.txt: a non-Python" in p for p in problems)
    (rep / "unsupported_api.csv").write_text("File,Start Line,End Line,OP,Tips\na.py,2,2,torch.cuda.nvtx.mark,x\n")
    (out / "d.txt").write_text("cuda")
    assert check(src, out, rep, "npu") == []


def test_unsupported_drift_compares_convert_with_check_on_its_output(tmp_path):
    """Converting the output again finds exactly the unsupported uses convert left: convert's own guard of
    torch.cuda.memory_reserved (cpu) is not reported again, the unguarded get_device_capability stays reported."""
    import torchport

    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "m.py").write_text("import torch\n\ndef mem(d):\n    r = torch.cuda.memory_reserved(d)\n"
                                         "    cap = torch.cuda.get_device_capability(0)\n    return r, cap\n", encoding="utf-8")
    first = torchport.convert(tmp_path / "p", "cpu", tmp_path / "out", write_reports=False)
    again = torchport.convert(tmp_path / "out", "cpu", tmp_path / "again", write_reports=False)
    assert "if torch.cuda.is_available() else 0" in (tmp_path / "out" / "m.py").read_text(encoding="utf-8")
    assert [f.old for f in first.findings if f.action == "unsupported"] == ["torch.cuda.get_device_capability"]
    assert unsupported_drift(first, again) == []
    extra = type("R", (), {"findings": [*again.findings, *[f for f in first.findings if f.action == "unsupported"]]})
    assert unsupported_drift(first, extra) == [("m.py", "torch.cuda.get_device_capability")]


def test_guarded_device_calls_are_kept_on_the_host_target_only():
    """ultralytics: `torch.cuda.get_device_name(0) if torch.cuda.is_available() else "GPU"` never runs on the cpu
    target (kept on purpose); unguarded, or on a device target, it is a device line convert must handle."""
    tree = ast.parse("import torch\ngpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'GPU'\n"
                     "name = torch.cuda.get_device_name(0)\n")
    guarded = {"torch.cuda.get_device_name"}
    lines, questions, _ = device_lines(tree, {"torch.cuda.is_available"}, True, guarded)
    assert (lines, questions) == ({3}, {2})
    lines, questions, _ = device_lines(tree, frozenset(), False, guarded)
    assert (lines, questions) == ({2, 3}, set())


def test_a_name_the_target_keeps_is_not_a_device_line_when_imported_either():
    """transformers: `from torch.cuda import empty_cache as torch_empty_cache` on cpu, which keeps empty_cache."""
    tree = ast.parse("from torch.cuda import empty_cache as e, synchronize\ne()\nsynchronize()\n")
    lines, _, via_import = device_lines(tree, {"torch.cuda.empty_cache"}, True)
    assert lines == {1, 3} and via_import == {3: 1}
    lines, _, via_import = device_lines(tree, frozenset(), True)
    assert lines == {1, 2, 3} and via_import == {2: 1, 3: 1}


def test_host_target_keeps_any_call_that_runs_only_with_a_device():
    """yolov5 autobatch: after `if device.type == "cpu": return`, torch.cuda.get_device_properties never runs on
    the cpu target (kept on purpose, as convert leaves it); before that early exit, or on a device target, it is
    a device line convert must handle. A name that is not called stays a line everywhere."""
    tree = ast.parse("import torch\ndef f(device):\n    a = torch.cuda.get_device_properties(0)\n"
                     "    if device.type == 'cpu':\n        return 1\n    p = torch.cuda.get_device_properties(device)\n"
                     "    t = torch.cuda.FloatTensor\n    torch.cuda.random.set_rng_state(t)\n")
    lines, questions, _ = device_lines(tree, frozenset(), True)
    assert (lines, questions) == ({3, 7}, {6, 8})   # transformers' Trainer: torch.cuda.random.* under a guard
    lines, questions, _ = device_lines(tree, frozenset(), False)
    assert (lines, questions) == ({3, 6, 7, 8}, set())


def test_a_collection_that_lists_the_target_already_is_a_kept_question():
    """ultralytics 8.4.190: `device.type not in {"cpu", "cuda", "npu", "xpu"}` keeps its "cuda" on npu (convert
    leaves it: the test reads the same there). On mlu it is a device line as before; a collection that is
    not compared is one on every target."""
    tree = ast.parse("def f(device, t):\n    a = device.type not in {'cpu', 'cuda', 'npu'}\n"
                     "    b = ['cuda', 'npu']\n    return t in ('cuda', 'mps')\n")
    lines, questions, _ = device_lines(tree, frozenset(), False, device="npu")
    assert (lines, questions) == ({3, 4}, {2})
    lines, questions, _ = device_lines(tree, frozenset(), False, device="mlu")
    assert (lines, questions) == ({2, 3, 4}, set())
    lines, questions, _ = device_lines(tree, frozenset(), False, device="mps")
    assert (lines, questions) == ({2, 3}, {4})


def test_a_backend_question_is_kept_where_the_collectives_are_gloo():
    """yolox 0.3.0 (`dist.get_backend() == "nccl"`, `backend in ["gloo", "nccl"]`): on mps, whose collectives are
    gloo, convert keeps a comparison with NCCL's name (it answers no there); on npu it is a device line convert
    rewrites.  A backend name that is not compared is a device line everywhere."""
    tree = ast.parse("import torch.distributed as dist\nif dist.get_backend() == 'nccl':\n    pass\n"
                     "ok = backend in ['gloo', 'NCCL']\ndist.init_process_group('nccl')\n")
    lines, questions, _ = device_lines(tree, frozenset(), False, device="mps", gloo=True)
    assert (lines, questions) == ({5}, {2, 4})
    lines, questions, _ = device_lines(tree, frozenset(), False, device="npu")
    assert (lines, questions) == ({2, 4, 5}, set())
