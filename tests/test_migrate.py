"""torchport migrate: one project (Python, a CUDA extension, a notebook) -> one output tree and one report whose
"What's left" comes first, ordered by risk, and agrees with `torchport check` on the output; --verify runs the
migrated code for real; port-ext says when a C++ tree has nothing to port."""
import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchport.cli import main

RISKS = ("would fail on a normal path", "to review", "advice (performance)")

TRAIN = """\
import torch
import torch.distributed as dist


def capability():
    return torch.cuda.get_device_capability(), torch.cuda.get_device_capability(0)


def main():
    model = torch.nn.Linear(4, 2).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        x = torch.randn(8, 4).cuda()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
    if dist.is_available() and dist.is_initialized():
        dist.init_process_group(backend="nccl")


if __name__ == "__main__":
    main()
"""

KERNEL = """\
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

torch::Tensor fused_add(torch::Tensor a, torch::Tensor b) {
  auto c = torch::empty_like(a);
  int n = a.numel();
  add_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
  return c;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("fused_add", &fused_add); }
"""

SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(name="my_ext", ext_modules=[CUDAExtension("my_ext", ["csrc/add.cu"])],
      cmdclass={"build_ext": BuildExtension})
"""


def notebook() -> str:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# demo"]},
             {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": ["import torch\n", "x = torch.ones(2).cuda()\n", "print(torch.cuda.is_available())\n"]}]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def make_project(root: Path) -> Path:
    proj = root / "proj"
    (proj / "csrc").mkdir(parents=True)
    (proj / "train.py").write_text(TRAIN)
    (proj / "csrc" / "add.cu").write_text(KERNEL)
    (proj / "setup.py").write_text(SETUP)
    (proj / "demo.ipynb").write_text(notebook())
    return proj


def snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def cli(*args) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def table_rows(md: str) -> list:
    """The rows of the What's left tables, as [risk title, cells...] (one table per risk, under "### ")."""
    section = md.split("## What's left", 1)[1].split("\n## ", 1)[0]
    rows, risk = [], ""
    for ln in section.splitlines():
        if ln.startswith("### "):
            risk = ln[4:].rsplit(" (", 1)[0].lower()
        elif ln.startswith("| ") and not ln.startswith("| No."):
            rows.append([risk] + [c.strip() for c in ln.strip("|").split(" | ")])
    return rows


def groups(left: list) -> list:
    """The JSON items, grouped as the report's rows are (kind, file, rule, wording)."""
    out: dict = {}
    for r in left:
        out.setdefault((r["kind"], r["file"], r["rule"], r["why"], r["fix"], r["cite"]), []).append(r)
    return list(out.values())


def test_migrate_npu_one_tree_one_report_ordered_and_agrees_with_check(tmp_path):
    proj = make_project(tmp_path)
    before, siblings = snapshot(proj), sorted(os.listdir(tmp_path))
    out = tmp_path / "proj_npu"
    code, stdout, _ = cli("migrate", proj, "--to", "npu", "-o", out)
    assert code == 1, stdout  # a kernel to rewrite and an API npu lacks: items that would fail remain
    assert stdout.rstrip().splitlines()[-1].startswith("next: ")

    # one output tree, nothing else beside it, the user's project untouched
    assert snapshot(proj) == before
    assert sorted(os.listdir(tmp_path)) == sorted(siblings + ["proj_npu"])
    reports = [p for p in out.rglob("*") if p.is_dir() and "report" in p.name]
    assert [p.relative_to(out).as_posix() for p in reports] == ["torchport-report"]
    assert sorted(p.name for p in out.iterdir()) == ["csrc", "demo.ipynb", "setup.py", "torchport-report", "train.py"]
    assert ".npu()" in (out / "demo.ipynb").read_text() and "import torch_npu" in (out / "train.py").read_text()

    # one report, What's left first, ordered by risk, each class present
    md = (out / "torchport-report" / "migrate.md").read_text()
    assert [ln for ln in md.splitlines() if ln.startswith("## ")][0] == "## What's left"
    rows = table_rows(md)
    risks = [r[0] for r in rows]
    assert set(risks) == set(RISKS)
    assert risks == sorted(risks, key=RISKS.index)
    data = json.loads((out / "torchport-report" / "migrate.json").read_text())
    left = data["whats_left"]
    assert len(rows) == len(groups(left)) < len(left)      # every item in one row; two share one
    for row, group in zip(rows, groups(left)):
        assert row[2].startswith(f"{group[0]['file']}:{group[0]['line']}" if group[0]["line"] else group[0]["file"])
        assert all(r["item"] in row[3] for r in group), (row, group)
    assert all(r["effort"] in data["effort_classes"] for r in left)
    kernel = next(r for r in left if r["rule"] == "TP902")
    assert (kernel["risk"], kernel["file"], kernel["line"], kernel["effort"]) == ("fail", "csrc/add.cu", 4, "large")
    unsupported = next(r for r in left if r["action"] == "unsupported")
    assert unsupported["risk"] == "fail" and unsupported["item"] == "torch.cuda.get_device_capability"
    out_lines = (out / "train.py").read_text().splitlines()
    assert "get_device_capability" in out_lines[unsupported["line"] - 1]  # the output's line, not the input's
    fused = next(r for r in left if r["rule"] == "npu-fused-optimizer")
    assert fused["risk"] == "advice" and "SGD" in out_lines[fused["line"] - 1]
    # de-duplicated: setup.py's CUDAExtension import is found by analyze and by check, listed once
    keys = [(r["file"], r["line"], r["rule"]) for r in left if r["source"] != "check"]
    assert len(keys) == len(set(keys))
    same_line = [r for r in left if r["item"] == "torch.cuda.get_device_capability"]
    assert len(same_line) == 2 and same_line[0]["line"] == same_line[1]["line"]  # two calls, two items
    assert same_line[0]["input_line"] == same_line[0]["line"] - 1   # below the inserted `import torch_npu`
    assert [r for r in rows if r[3] == "torch.cuda.get_device_capability"][0][2] == \
        f"train.py:{same_line[0]['line']} x2"                      # ... in one row
    assert sum(1 for r in left if r["file"] == "setup.py") == 1
    assert data["verified"] is None and "Not verified" in md

    # `torchport check OUT` agrees with the report's counts
    code, stdout, _ = cli("check", out, "--to", "npu", "--format", "json")
    checked = json.loads(stdout)["summary"]
    mine = data["counts"]["check"]
    assert {k: checked[k] for k in mine} == mine
    assert mine["problems"] >= 1 and mine["notes"] >= 1  # the comparison is not of two zeros
    assert code == (1 if mine["problems"] else 0)
    assert data["counts"]["by_source"]["check"] == checked["problems"] + checked["notes"]


@pytest.mark.subprocess
@pytest.mark.torch
def test_migrate_cpu_verify_runs_the_script(tmp_path):
    pytest.importorskip("torch")
    proj = tmp_path / "tiny"
    proj.mkdir()
    (proj / "train.py").write_text("import torch\nmodel = torch.nn.Linear(3, 1).cuda()\nx = torch.randn(4, 3).cuda()\n"
                                   "print('loss', float(model(x).sum()), x.device)\n")
    out = tmp_path / "tiny_cpu"
    code, stdout, stderr = cli("migrate", proj, "--to", "cpu", "-o", out, "-q", "--verify", "--", "python", "train.py")
    assert code == 0, stdout + stderr
    assert "exit 0 (passed)" in stdout and stdout.rstrip().splitlines()[-1].startswith("next: torchport check")
    data = json.loads((out / "torchport-report" / "migrate.json").read_text())
    assert data["verified"]["exit_code"] == 0 and data["verified"]["verdict"] == "passed"
    assert any("loss" in line and "cpu" in line for line in data["verified"]["tail"])
    md = (out / "torchport-report" / "migrate.md").read_text()
    assert "- exit status: 0 (passed)" in md
    assert "loss" in (out / "torchport-report" / "verify.log").read_text()

    # a failing command is the first item, and the run fails
    (proj / "train.py").write_text("import torch\nraise SystemExit('boom: ' + str(torch.ones(1).cuda().device))\n")
    code, stdout, _ = cli("migrate", proj, "--to", "cpu", "-o", out, "--force", "-q", "--verify", "--", "python",
                          "train.py")
    assert code == 1
    data = json.loads((out / "torchport-report" / "migrate.json").read_text())
    assert data["verified"]["verdict"] == "failed" and data["verified"]["exit_code"] == 1
    assert data["whats_left"][0]["kind"] == "verify-failed" and "boom: cpu" in data["whats_left"][0]["why"]
    assert "next: torchport explain --file" in stdout
    assert not [r for r in data["whats_left"] if r["kind"] == "known-error"], "boom is no known error"

    # a known error in the output: its cause, fix and source are in the report, and next says to fix it
    (proj / "train.py").write_text("import torch\ntorch.ones(1).cuda()\nprint('[rank1]: RuntimeError: CUDA out of "
                                   "memory. Tried to allocate 2.00 GiB')\nraise SystemExit(1)\n")
    code, stdout, _ = cli("migrate", proj, "--to", "cpu", "-o", out, "--force", "-q", "--verify", "--", "python",
                          "train.py")
    data = json.loads((out / "torchport-report" / "migrate.json").read_text())
    known = [r for r in data["whats_left"] if r["kind"] == "known-error"]
    assert code == 1 and [(r["rule"], r["risk"]) for r in known] == [("any-device-out-of-memory", "fail")], known
    assert known[0]["item"].startswith("verify.log:1: [rank1]: RuntimeError: CUDA out of memory")
    assert "batch size" in known[0]["fix"] and known[0]["cite"]
    assert "next: fix the known error the verify hit (any-device-out-of-memory;" in stdout


@pytest.mark.torch
@pytest.mark.sim
def test_migrate_npu_verify_on_the_simulated_device(tmp_path):
    pytest.importorskip("torch")
    build = subprocess.run([sys.executable, "-m", "torchport", "sim", "--build"], capture_output=True, text=True,
                           timeout=900)
    assert build.returncode == 0, build.stderr
    proj = tmp_path / "tiny"
    proj.mkdir()
    (proj / "run.py").write_text("import torch\nx = torch.ones(2).cuda() * 3\ntorch.cuda.synchronize()\n"
                                 "print('device', x.device, float(x.sum()))\n")
    code, stdout, stderr = cli("migrate", proj, "--to", "npu", "-q", "--verify", "--", "python", "run.py")
    assert code == 0, stdout + stderr
    data = json.loads((tmp_path / "tiny_npu" / "torchport-report" / "migrate.json").read_text())
    v = data["verified"]
    assert (v["exit_code"], v["verdict"], v["processes"]) == (0, "passed", 1)
    assert any("device npu:0 6.0" in line for line in v["tail"])


def test_nothing_to_port(tmp_path):
    cpp = tmp_path / "cpp"
    (cpp / "src").mkdir(parents=True)
    (cpp / "src" / "ops.cpp").write_text('#include <torch/extension.h>\n#include "ops.h"\n'
                                         "torch::Tensor twice(torch::Tensor x) { return x * 2; }\n"
                                         'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("twice", &twice); }\n')
    (cpp / "src" / "ops.h").write_text("#pragma once\n#include <torch/extension.h>\ntorch::Tensor twice(torch::Tensor x);\n")
    for target in ("npu", "musa"):
        code, stdout, _ = cli("port-ext", cpp, "--to", target, "-o", tmp_path / f"out_{target}")
        assert code == 0
        assert stdout.splitlines()[0] == f"torchport port-ext --to {target}: 2 C++ sources, CPU-only, nothing to port"
    code, stdout, _ = cli("migrate", cpp, "--to", "npu")
    assert "port-ext: 2 C++ sources, CPU-only, nothing to port" in stdout
    assert stdout.rstrip().splitlines()[-1] == f"next: cd {tmp_path / 'cpp_npu'} && torchport sim --to npu -- python SCRIPT"
    # one CUDA file makes it something to port
    (cpp / "src" / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1; }\n")
    code, stdout, _ = cli("port-ext", cpp, "--to", "npu", "-o", tmp_path / "again")
    assert "nothing to port" not in stdout and "1 kernel" in stdout


def test_migrate_usage_errors(tmp_path):
    proj = make_project(tmp_path)
    code, _, err = cli("migrate", proj, "--to", "npu", "--verify")
    assert code == 2 and "--verify needs a command" in err
    code, _, err = cli("migrate", proj / "train.py", "--to", "npu")
    assert code == 2 and "project folder" in err
    (proj / "torchport-report").mkdir()
    code, _, err = cli("migrate", proj, "--to", "npu")
    assert code == 2 and "torchport-report" in err
    assert not (tmp_path / "proj_npu").exists()


def test_migrate_musa_ports_in_place_and_reruns_with_force(tmp_path):
    proj = make_project(tmp_path)
    out = tmp_path / "proj_musa"
    first = None
    for args in ((), ("--force",)):
        code, stdout, _ = cli("migrate", proj, "--to", "musa", *args)
        data = json.loads((out / "torchport-report" / "migrate.json").read_text())
        assert sorted(os.listdir(tmp_path)) == ["proj", "proj_musa"]  # no backup or report folder beside it
        assert (out / "csrc" / "add.mu").is_file() and not (out / "csrc" / "add.cu").exists()
        assert "MUSAExtension" in (out / "setup.py").read_text()
        assert not [r for r in data["whats_left"] if r["kind"] == "not-processed"], data["whats_left"]
        assert data["renamed"][0]["from"] == "csrc/add.cu" and data["renamed"][0]["to"] == "csrc/add.mu"
        tree = (snapshot(out / "csrc"), data["checked"])
        assert first is None or tree[0] == first[0] and tree[1]["files"] == first[1]["files"]  # not its own report
        first = tree


@pytest.mark.subprocess
def test_migrate_off_target_verify_is_unverified(tmp_path):
    proj = tmp_path / "tiny"
    proj.mkdir()
    (proj / "run.py").write_text("print('no device used')\n")
    code, stdout, _ = cli("migrate", proj, "--to", "xpu", "-q", "--verify", "--", "python", "run.py")
    data = json.loads((tmp_path / "tiny_xpu" / "torchport-report" / "migrate.json").read_text())
    assert data["verified"]["exit_code"] == 0 and data["verified"]["verdict"] == "unverified"
    assert [r["kind"] for r in data["whats_left"]] == ["verify-off-target"] and code == 0
    assert "exit 0 (unverified)" in stdout


OPTIONAL_EXPORT = """\
def export_engine(onnx_file):
    try:
        import tensorrt as trt
    except ImportError:
        return None
    logger = trt.Logger(trt.Logger.INFO)
    builder = trt.Builder(logger)
    print(trt.__version__)
    return builder
"""

UNCALLED = """\
import torch


def capability():
    return torch.cuda.get_device_capability()


def main():
    model = torch.nn.Linear(3, 1).cuda()
    print("loss", float(model(torch.randn(4, 3).cuda()).sum()))


if __name__ == "__main__":
    main()
"""


def make_rows_project(root: Path) -> Path:
    proj = root / "p"
    proj.mkdir()
    (proj / "train.py").write_text(UNCALLED)
    (proj / "export.py").write_text(OPTIONAL_EXPORT)
    return proj


@pytest.mark.subprocess
@pytest.mark.torch
def test_rows_html_and_next_after_a_passing_verify(tmp_path):
    """One optional export path's uses share one row (the counts stay counts of items); migrate.html links each
    line to an excerpt of the migrated file; a verify that passes while an item would fail says where they are."""
    pytest.importorskip("torch")
    proj = make_rows_project(tmp_path)
    out = tmp_path / "p_cpu"
    code, stdout, _ = cli("migrate", proj, "--to", "cpu", "-o", out, "-q", "--verify", "--", "python", "train.py")
    data = json.loads((out / "torchport-report" / "migrate.json").read_text())
    assert data["verified"]["verdict"] == "passed"
    assert code == 1   # get_device_capability would fail where capability() is called: not on the path run
    assert stdout.rstrip().splitlines()[-1].startswith("next: verify passed, so they are on paths it did not run: "
                                                       "fix the items that would fail")
    trt = [r for r in data["whats_left"] if r["file"] == "export.py"]
    assert len(trt) == 5 and {r["risk"] for r in trt} == {"review"}
    md = (out / "torchport-report" / "migrate.md").read_text()
    rows = table_rows(md)
    assert [r[2] for r in rows] == ["train.py:5", "export.py:3, 6 x2, 7, 8"]
    assert "6 items: 1 would fail on a normal path, 5 to review" in md and "in 2 rows" in md

    page = (out / "torchport-report" / "migrate.html").read_text()
    assert page.count('<tr class="finding"') == 2 and 'data-items="5"' in page
    ids = set(re.findall(r' id="([^"]+)"', page))
    links = re.findall(r'href="#([^"]+)"', page)
    assert len(links) == 5 and set(links) <= ids       # one per distinct line, each to an excerpt's line
    assert all(r["input_line"] == r["line"] for r in data["whats_left"])   # --to cpu inserts no import here,
    assert "in the project" not in page                                    # so no line names another
    assert "http" not in page.split("<main>", 1)[0].replace("http-equiv", "")   # nothing loaded from outside


def test_html_names_the_project_line_where_convert_moved_it(tmp_path):
    proj = make_project(tmp_path)
    out = tmp_path / "proj_npu"
    cli("migrate", proj, "--to", "npu", "-o", out)
    left = json.loads((out / "torchport-report" / "migrate.json").read_text())["whats_left"]
    moved = next(r for r in left if r["item"] == "torch.cuda.get_device_capability")
    assert moved["input_line"] == moved["line"] - 1
    page = (out / "torchport-report" / "migrate.html").read_text()
    assert f'title="line {moved["input_line"]} in the project">{moved["line"]}</a>' in page
    assert "get_device_capability" in (proj / "train.py").read_text().splitlines()[moved["input_line"] - 1]


def test_the_next_step_names_the_entry_script_below_the_top(tmp_path):
    """YOLOX keeps its entry in tools/train.py, yolov5's wheel in yolov5/train.py (with classify/train.py and
    segment/train.py deeper): the shallowest one is named; two at one depth are not guessed between."""
    from torchport.cli.migrate import _entry_script

    def tree(*files):
        root = tmp_path / str(len(list(tmp_path.iterdir())))
        for f in files:
            (root / f).parent.mkdir(parents=True, exist_ok=True)
            (root / f).write_text("print(1)\n")
        return str(root)

    assert _entry_script(tree("tools/train.py", "yolox/core/launch.py")) == "tools/train.py"
    assert _entry_script(tree("yolov5/train.py", "yolov5/classify/train.py", "yolov5/segment/train.py")) == \
        "yolov5/train.py"
    assert _entry_script(tree("a/train.py", "b/train.py")) == "SCRIPT"
    assert _entry_script(tree("main.py", "tools/train.py")) == "main.py"
    assert _entry_script(tree("tests/train.py", "pkg/mod.py")) == "SCRIPT"
    assert _entry_script(tree("app/main.py")) == "app/main.py"


def test_a_file_that_mentions_cuda_is_one_row_at_its_first_mention(tmp_path):
    """A README that mentions CUDA is an item at the line of its first mention; a word that only contains the
    letters (timm's ImageNet synsets list the barracuda) is not a mention."""
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "train.py").write_text("print('hi')\n")
    (proj / "README.md").write_text("# p\n\nNeeds CUDA 12 and a GPU.\nAlso cuda:0.\n")
    (proj / "synsets.txt").write_text("n02641379 gar\nn02643566 lionfish\nn02640242 barracuda, snoek\n")
    cli("migrate", proj, "--to", "npu", "-o", tmp_path / "out")
    left = json.loads((tmp_path / "out" / "torchport-report" / "migrate.json").read_text())["whats_left"]
    mentions = [(r["file"], r["line"]) for r in left if r["kind"] == "mentions-cuda"]
    assert mentions == [("README.md", 3)]


def test_a_name_outside_the_api_list_is_to_review_not_a_failure(tmp_path):
    """torch.cuda._sleep (private; torch_npu has its own in recent versions) is not in torch.cuda's public list:
    check still reports it, but migrate does not claim it would fail."""
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "t.py").write_text("import torch\ntorch.cuda._sleep(1000)\ntorch.cuda.get_device_capability()\n")
    code, _, _ = cli("migrate", proj, "--to", "npu", "-o", tmp_path / "out")
    data = json.loads((tmp_path / "out" / "torchport-report" / "migrate.json").read_text())
    kinds = {r["item"]: (r["kind"], r["risk"]) for r in data["whats_left"]}
    assert kinds["torch.cuda._sleep"] == ("unknown-api", "review")
    assert kinds["torch.cuda.get_device_capability"] == ("unsupported", "fail") and code == 1
    assert data["counts"]["check"]["unsupported"] == 2   # check's own count is unchanged


TENSORRT_BACKEND = '''import torch


def load_engine(path):
    try:
        import tensorrt as trt
    except ImportError:
        install_tensorrt()
        import tensorrt as trt
    with torch.cuda.device(0):
        return trt.Runtime(None), torch.cuda.CUDAGraph()


def plain():
    return torch.cuda.CUDAGraph()
'''


def test_a_call_on_a_cuda_only_package_path_is_to_review(tmp_path):
    """ultralytics 8.4.190 nn/backends/tensorrt.py on cpu: the engine loader's torch.cuda calls were 4 "would
    fail" rows, though the loader runs only where TensorRT does; the package's row decides. The same call
    outside that path still would fail."""
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "trt_backend.py").write_text(TENSORRT_BACKEND)
    code, _, _ = cli("migrate", proj, "--to", "cpu", "-o", tmp_path / "out")
    data = json.loads((tmp_path / "out" / "torchport-report" / "migrate.json").read_text())
    kinds = sorted((r["line"], r["item"], r["kind"], r["risk"]) for r in data["whats_left"]
                   if r["item"].startswith("torch.cuda"))
    assert kinds == [(10, "torch.cuda.device", "cuda-only-path", "review"),
                     (11, "torch.cuda.CUDAGraph", "cuda-only-path", "review"),
                     (15, "torch.cuda.CUDAGraph", "unsupported", "fail")], kinds
    assert code == 1 and data["counts"]["check"]["unsupported"] == 3


def test_a_kept_question_and_what_it_guards_are_to_review(tmp_path):
    """TP210 keeps `torch.cuda.is_available()` as CUDA's, so on the target it answers no: nothing fails there,
    and the call it guards does not run there (yolov5's `if cuda and ... torch.cuda.device_count() > 1:
    model = DataParallel(model)` was 2 "would fail" rows, though on the NPU it trains on one device). A call
    the target lacks outside the branch still would fail."""
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "t.py").write_text("import torch\nif torch.cuda.is_available():\n    print(torch.cuda.get_arch_list())\n")
    code, _, _ = cli("migrate", proj, "--to", "npu", "-o", tmp_path / "out")
    data = json.loads((tmp_path / "out" / "torchport-report" / "migrate.json").read_text())
    kinds = sorted((r["line"], r["kind"], r["risk"]) for r in data["whats_left"] if r["source"] == "check")
    assert kinds == [(2, "kept-question", "review"), (3, "kept-branch", "review")] and code == 0, kinds
    (proj / "t.py").write_text("import torch\nif torch.cuda.is_available():\n    print(torch.cuda.get_arch_list())\n"
                               "torch.cuda.get_arch_list()\n")
    code, _, _ = cli("migrate", proj, "--to", "npu", "-o", tmp_path / "out", "--force")
    data = json.loads((tmp_path / "out" / "torchport-report" / "migrate.json").read_text())
    kinds = sorted((r["line"], r["kind"], r["risk"]) for r in data["whats_left"] if r["source"] == "check")
    assert kinds == [(2, "kept-question", "review"), (3, "kept-branch", "review"), (4, "unsupported", "fail")]
    assert code == 1


def test_check_on_the_output_reads_the_files_migrate_checked(tmp_path):
    """Before: `torchport check OUT` also read OUT/torchport-report/ (migrate.json, convert/report.json), so it
    counted 2 files more than the check step migrate reports. A folder torchport wrote a report into is no
    part of the project."""
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "a.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    (proj / "cfg.json").write_text('{"device": "cuda"}\n')
    _, stdout, _ = cli("migrate", proj, "--to", "npu", "-o", tmp_path / "out")
    cli("check", tmp_path / "out", "--to", "npu", "--format", "json", "-o", tmp_path / "check.json")
    checked = json.loads((tmp_path / "check.json").read_text())
    assert (tmp_path / "out" / "torchport-report" / "migrate.json").is_file()
    assert "  check:    2 files, 0 problems" in stdout and checked["summary"]["files"] == 2, checked["summary"]


OWN_NPU_BRANCH = '''import torch


def pick(device):
    if torch.cuda.is_available():
        return "cuda"
    if device.type == "npu":
        return "npu"
    return "cpu"
'''


def test_a_file_that_already_handles_the_target_is_to_review(tmp_path):
    """accelerate 1.15.0: is_cuda_available() became torch.npu.is_available() and won over the project's own
    is_npu_available() branch, and nothing said the project had one. convert says it once per file (TP213), at
    the first place the file names the target, and migrate lists it to review; a file that names only another
    device, or names the target only in a docstring, is not."""
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "own.py").write_text(OWN_NPU_BRANCH)
    (proj / "other.py").write_text('"""Runs on npu too."""\nimport torch\nx = torch.ones(1).cuda()\n')
    cli("migrate", proj, "--to", "npu", "-o", tmp_path / "out")
    data = json.loads((tmp_path / "out" / "torchport-report" / "migrate.json").read_text())
    own = [(r["file"], r["input_line"], r["risk"]) for r in data["whats_left"] if r["kind"] == "own-target"]
    assert own == [("own.py", 7, "review")], data["whats_left"]
    cli("migrate", proj, "--to", "mlu", "-o", tmp_path / "out_mlu")
    data = json.loads((tmp_path / "out_mlu" / "torchport-report" / "migrate.json").read_text())
    assert not [r for r in data["whats_left"] if r["kind"] == "own-target"]


@pytest.mark.subprocess
def test_migrate_and_check_exit_alike_when_only_review_items_remain(tmp_path):
    """issue 30 class 8: a CUDA question kept as CUDA's (its branch is a CUDA-only library's path) and a torch.cuda
    name no list knows are "to review" in migrate's What's left; check failed on them (exit 1) where migrate said 0.
    Both now exit 0, with the same counts; an API the target lacks on a normal path fails both."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "m.py").write_text("import torch\n\n\ndef add(x, y):\n    if x.is_cuda:\n        import triton\n"
                               "        return triton\n    return x + y\n\n\ntorch.cuda._no_such_helper()\n")
    code, stdout, _ = cli("migrate", proj, "--to", "npu", "-o", tmp_path / "out")
    data = json.loads((tmp_path / "out" / "torchport-report" / "migrate.json").read_text())
    assert {r["kind"] for r in data["whats_left"]} >= {"kept-question", "unknown-api"}
    checked, _, _ = cli("check", tmp_path / "out", "--to", "npu")
    assert code == checked == 0, stdout
    (proj / "m.py").write_text((proj / "m.py").read_text() + "print(torch.cuda.get_device_capability())\n")
    code, _, _ = cli("migrate", proj, "--to", "npu", "-o", tmp_path / "out", "--force")
    checked, _, _ = cli("check", tmp_path / "out", "--to", "npu")
    assert code == checked == 1


def test_migrate_decides_by_reasons_not_by_the_words_of_messages(tmp_path, monkeypatch):
    """What's left reads a finding's reasons (core.finding: a CUDA-only package's path, a branch convert kept, an
    optional import), never fragments of its message: every such message reworded, the rows' kinds and risks are the
    same (issue 33: a reworded message silently changed migrate's verdicts), and so are check's verdicts (problem or
note) and both commands' exit codes.  Analyze's readiness reads the optional
    import's reason too (test_a_module_imported_under_try_is_optional... in tests/test_analyze*.py cover its counts)."""
    from torchport.analyze import scan
    from torchport.converter.rules import api, host

    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "trt_backend.py").write_text(TENSORRT_BACKEND)
    (proj / "t.py").write_text("import torch\nif torch.cuda.is_available():\n    print(torch.cuda.get_arch_list())\n")
    (proj / "opt.py").write_text("try:\n    import pycuda.driver\nexcept ImportError:\n    pycuda = None\n")

    def rows(out):
        found, said = [], []
        for target in ("cpu", "npu"):   # the CUDA-only path shows on cpu, the kept branch on npu
            code, _, _ = cli("migrate", proj, "--to", target, "-o", out / target, "-j", "1")
            data = json.loads((out / target / "torchport-report" / "migrate.json").read_text())
            found += [(target, r["file"], r["line"], r["item"], r["kind"], r["risk"]) for r in data["whats_left"]]
            checked, text, _ = cli("check", out / target, "--to", target, "--format", "json")
            verdicts = [(f["file"], f["line"], f["rule"], f["level"]) for f in json.loads(text)["findings"]]
            found += [(target, "exit codes", code, checked, "", ""), (target, "check", sorted(verdicts), "", "", "")]
            said += [p.read_text(errors="replace") for p in (out / target / "torchport-report").rglob("*.json")]
        return sorted(found), " ".join(said)

    before, said_before = rows(tmp_path / "a")
    kinds = {row[4] for row in before}
    assert {"cuda-only-path", "kept-branch"} <= kinds, before
    for module, name in ((api, "CUDA_ONLY_ABOVE"), (host, "KEPT_BRANCH"), (scan, "OPTIONAL")):
        monkeypatch.setattr(module, name, f"REWORDED {name.lower()}")
    after, said_after = rows(tmp_path / "b")
    assert "REWORDED" in said_after and "REWORDED" not in said_before   # the messages did change
    assert after == before


def test_the_catalogue_says_which_kind_of_item_a_code_is_where_its_action_does_not():
    """migrate's kinds for codes come from core/codes.py (`left_as`), each a kind of its KINDS table; the C++
    findings analyze reports are never judged by their action alone."""
    from torchport.commands.migrate import CODE_KINDS, KINDS
    from torchport.core import codes

    assert CODE_KINDS and set(CODE_KINDS.values()) <= set(KINDS)
    assert {c.id for c in codes.CODES.values() if c.left_as} == set(CODE_KINDS)
    assert CODE_KINDS[codes.TP902.id] == "kernel" and KINDS["kernel"][:2] == ("fail", "large")
    assert CODE_KINDS[codes.TP117.id] == "unknown-api" and KINDS["unknown-api"][0] == "review"
