"""One vocabulary, one count: analyze, convert, check and migrate report the same tree for the same target with
the same words (changes / unsupported / to review) and the same numbers; optional code never counts as blocked.

The project: a converted line (`.cuda()`), an API mlu lacks (DataParallel), advice (a cudnn flag), and optional
code: a CUDA extension and a CUDA-only package (xformers) both imported only under try/except ImportError."""
import json
import re

import pytest

from torchport.cli import main

KERNEL = """#include <torch/extension.h>
__global__ void roll_kernel(float* x) { x[threadIdx.x] += 1; }
at::Tensor roll_forward(at::Tensor x) { roll_kernel<<<1, 32>>>(x.data_ptr<float>()); return x; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("roll_forward", &roll_forward, "fused"); }
"""

MODEL = """import torch
try:
    import fused_ext
except ImportError:
    fused_ext = None
try:
    import xformers.ops as xops
except ImportError:
    xops = None


def forward(x, fused=False):
    if fused and fused_ext is not None:
        return fused_ext.roll_forward(x)
    return torch.roll(x, 1)


model = torch.nn.Linear(4, 4).cuda()
torch.backends.cudnn.benchmark = True
model = torch.nn.DataParallel(model)
"""


@pytest.fixture
def proj(tmp_path):
    root = tmp_path / "proj"
    (root / "k").mkdir(parents=True)
    (root / "k" / "fused.cu").write_text(KERNEL)
    (root / "model.py").write_text(MODEL)
    return root


def _run(capsys, *argv):
    code = main([*argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_command_counts_the_same(proj, tmp_path, capsys):
    code, an_out, _ = _run(capsys, "analyze", str(proj), "--to", "mlu", "-o", str(tmp_path / "an"), "-j", "1")
    assert code == 0, an_out
    analysis = json.loads((tmp_path / "an" / "analysis.json").read_text())
    code, cv_out, _ = _run(capsys, "convert", str(proj), "--to", "mlu", "-o", str(tmp_path / "cv"), "-j", "1")
    assert code == 0, cv_out
    converted = json.loads((tmp_path / "cv_report" / "report.json").read_text())["summary"]
    code, ck_json, _ = _run(capsys, "check", str(proj), "--to", "mlu", "--format", "json", "-j", "1")
    assert code == 1  # changes and an unsupported API are left in the input
    checked = json.loads(ck_json)["summary"]
    code, ck_out, _ = _run(capsys, "check", str(proj), "--to", "mlu", "-j", "1")
    code, mg_out, _ = _run(capsys, "migrate", str(proj), "--to", "mlu", "-o", str(tmp_path / "mg"), "-j", "1")
    migrated = json.loads((tmp_path / "mg" / "torchport-report" / "migrate.json").read_text())

    # the project has one of each, so equal numbers are not equal zeros
    want = {"changes": converted["changes"], "unsupported": 1, "to_review": converted["advice"]}
    assert want["changes"] >= 2 and want["to_review"] >= 2, converted
    assert {k: converted[k] for k in want} == want
    assert {k: checked[k] for k in want} == want and checked["notes"] == want["to_review"]
    assert {k: analysis["summary"]["convert"]["mlu"][k] for k in want} == want
    assert {k: migrated["converted"][k] for k in want} == want
    assert migrated["converted"]["advice"] == want["to_review"]
    # migrate's check ran on the converted tree: the changes are made, the unsupported API and the notes stay
    assert (migrated["checked"]["changes"], migrated["checked"]["unsupported"],
            migrated["checked"]["to_review"]) == (0, 1, want["to_review"])
    assert migrated["counts"]["check"]["to_review"] == migrated["checked"]["to_review"]

    # the terminal: the same words and the same numbers in every command
    line = f"{want['changes']} changes, 1 unsupported, {want['to_review']} to review"
    assert f"convert --to mlu: {line}" in an_out, an_out
    assert line in cv_out, cv_out
    assert f"({want['changes']} changes, 1 unsupported, 0 errors), {want['to_review']} to review" in ck_out, ck_out
    assert f"convert:  2 files (1 converted, 1 copied), {line}" in mg_out, mg_out
    assert f"(0 changes, 1 unsupported, 0 errors), {want['to_review']} to review" in mg_out, mg_out
    log = (tmp_path / "cv_report" / "torchport.log").read_text()
    assert f"{counted(want['changes'], 'change')}, 1 unsupported, {want['to_review']} to review" in log
    md = (tmp_path / "cv_report" / "report.md").read_text()
    assert f"| to review (advice) | {want['to_review']} |" in md and "| unsupported APIs (left unchanged) | 1 |" in md


def counted(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def test_optional_code_is_never_blocked(proj, tmp_path, capsys):
    """The guarded extension and the guarded package are review in analyze and in migrate's What's left; the
    same extension imported plainly blocks (the test could fail)."""
    code, out, _ = _run(capsys, "analyze", str(proj), "--to", "mlu", "-o", str(tmp_path / "an"), "-j", "1",
                        "--fail-on", "blocked")
    assert code == 0, out
    r = json.loads((tmp_path / "an" / "analysis.json").read_text())["summary"]["readiness"]["mlu"]
    assert (r["blocked"], r["kernels_optional"], r["optional_packages"], r["blocked_packages"]) == (0, True, 1, 0)
    assert r["manual"] == 1  # the unsupported API only: the optional package is not a swap to make
    drivers = {d["what"]: d["count"] for d in r["effort_drivers"]}
    assert drivers["to review: optional CUDA-only packages (try/except ImportError)"] == 1
    assert drivers["to review: optional kernels and PTX (try/except ImportError)"] == 1
    assert sum(d["units"] for d in r["effort_drivers"]) == pytest.approx(r["effort"])
    assert "fix units" in r["effort_unit"] and "not hours" in r["effort_unit"]
    code, mg_out, _ = _run(capsys, "migrate", str(proj), "--to", "mlu", "-o", str(tmp_path / "mg"), "-j", "1")
    items = json.loads((tmp_path / "mg" / "torchport-report" / "migrate.json").read_text())["whats_left"]
    kernel = [i for i in items if i["rule"] == "TP902"]
    assert kernel and all(i["risk"] == "review" and i["kind"] == "optional-native" for i in kernel), kernel
    assert [i["rule"] for i in items if i["risk"] == "fail"] == ["TP112"]  # the unsupported API, and only it

    (proj / "model.py").write_text(MODEL.replace("try:\n    import fused_ext\nexcept ImportError:\n"
                                                 "    fused_ext = None\n", "import fused_ext\n")
                                   .replace("try:\n    import xformers.ops as xops\nexcept ImportError:\n"
                                            "    xops = None\n", "import xformers.ops as xops\n"))
    code, out, _ = _run(capsys, "analyze", str(proj), "--to", "mlu", "-o", str(tmp_path / "an2"), "-j", "1",
                        "--fail-on", "blocked")
    assert code == 1, out
    r = json.loads((tmp_path / "an2" / "analysis.json").read_text())["summary"]["readiness"]["mlu"]
    assert (r["blocked"], r["kernels_optional"], r["optional_packages"], r["package_swaps"]) == (1, False, 0, 1)
    code, _, _ = _run(capsys, "migrate", str(proj), "--to", "mlu", "-o", str(tmp_path / "mg2"), "-j", "1")
    items = json.loads((tmp_path / "mg2" / "torchport-report" / "migrate.json").read_text())["whats_left"]
    assert any(i["rule"] == "TP902" and i["risk"] == "fail" for i in items)


def test_grade_states_its_unit_and_drivers(proj, tmp_path, capsys):
    code, out, _ = _run(capsys, "analyze", str(proj), "--to", "mlu", "-o", str(tmp_path / "an"), "-j", "1")
    line = next(ln for ln in out.splitlines() if ln.startswith("  mlu: effort"))
    assert "fix units" in line and "not hours" in line
    assert "1 unsupported APIs (manual) = 1" in line, line
    data = json.loads((tmp_path / "an" / "analysis.json").read_text())["summary"]["readiness"]["mlu"]
    assert re.search(rf"effort {data['effort']:g} fix units", line)
    md = (tmp_path / "an" / "analysis.md").read_text()
    assert "What drives the effort" in md and "- mlu: 1 unsupported APIs (manual) = 1" in md
    html = (tmp_path / "an" / "report.html").read_text()
    assert "fix units" in html and "1 unsupported APIs (manual) = 1" in html
