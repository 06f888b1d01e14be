"""The tree pipeline shared by convert, analyze, check and port-ext: a file torchport fails on is that file's
internal error (named, with its traceback), never the user's input error, and never the end of the run."""
import pytest
from conftest import analyze  # the keyword form: torchport.commands.analyze.AnalyzeRequest.of
from test_convert_safety import _patch_reference_checker

import torchport
import torchport.api
from torchport.api import check  # the keyword form: torchport.commands.check.CheckRequest.of
from torchport.commands import port as port_api
from torchport.core import codes
from torchport.core.errors import UsageError
from torchport.core.finding import FAILED
from torchport.core.pipeline import Mode, Outcome

CUDA = "import torch\ntorch.cuda.synchronize()\n"


@pytest.fixture
def crashing_checker(monkeypatch):
    """The checker of imported names raises on bad.py (a torchport bug, simulated)."""
    def wrap(original):
        def crashing(ref, ctx):
            if ctx.path == "bad.py":
                raise KeyError("simulated bug")
            return original(ref, ctx)
        return crashing
    _patch_reference_checker(monkeypatch, wrap)


def _project(tmp_path, files):
    src = tmp_path / "proj"
    src.mkdir()
    for name, text in files.items():
        (src / name).write_text(text)
    return src


def _internal(findings, rel):
    return [f for f in findings if f.file == rel and f.rule == codes.TP000.id and f.category == FAILED]


def test_a_crash_in_analyze_fails_only_its_file(tmp_path, crashing_checker):
    src = _project(tmp_path, {"bad.py": CUDA, "good.py": CUDA})
    result = analyze(src, ["npu"], jobs=1)
    by_path = {s.path: s for s in result.files}
    assert by_path["bad.py"].outcome is Outcome.INTERNAL_ERROR and "KeyError" in by_path["bad.py"].trace
    assert by_path["good.py"].outcome is Outcome.DONE and result.target_findings("npu")
    assert "simulated bug" in _internal(result.common, "bad.py")[0].message


def test_a_crash_in_check_fails_only_its_file_and_the_check(tmp_path, crashing_checker):
    src = _project(tmp_path, {"bad.py": CUDA, "good.py": CUDA})
    result = check([str(src)], "npu", jobs=1)
    assert _internal(result.findings, "bad.py")
    assert any(f.file == "good.py" and f.rule == codes.TP101.id for f in result.findings)
    assert result.exit_code == 1


def test_a_crash_in_convert_fails_only_its_file(tmp_path, crashing_checker):
    src = _project(tmp_path, {"bad.py": CUDA, "good.py": CUDA})
    result = torchport.convert(src, "npu", tmp_path / "out", jobs=1)
    outcomes = {r.path: r.outcome for r in result.files}
    assert outcomes == {"bad.py": Outcome.INTERNAL_ERROR, "good.py": Outcome.DONE}


def test_a_crash_in_port_ext_fails_only_its_file(tmp_path, monkeypatch):
    src = _project(tmp_path, {"bad.cu": "__global__ void k() {}\n", "good.cu": "void f() { cudaMalloc(0, 4); }\n"})
    original = port_api._port_entry

    def crashing(entry, *args):
        if entry.rel == "bad.cu":
            raise IndexError("simulated bug")
        return original(entry, *args)
    monkeypatch.setattr(port_api, "_port_entry", crashing)
    result = port_api.port(port_api.PortRequest.of(src, "musa", tmp_path / "out", jobs=1))
    outcomes = {r.path: r.outcome for r in result.files}
    assert outcomes == {"bad.cu": Outcome.INTERNAL_ERROR, "good.cu": Outcome.DONE}
    assert (tmp_path / "out" / "good.mu").read_text().count("musaMalloc") == 1


def test_input_errors_stay_input_errors(tmp_path):
    src = _project(tmp_path, {"broken.py": "import torch\ntorch.cuda.synchronize(\n"})
    result = torchport.convert(src, "npu", tmp_path / "out", jobs=1)
    assert [r.outcome for r in result.files] == [Outcome.INPUT_ERROR]
    scans = analyze(src, ["npu"], jobs=1).files
    assert [s.outcome for s in scans] == [Outcome.INPUT_ERROR]


def test_mode_from_switches():
    assert Mode.of() is Mode.WRITE and Mode.of(in_place=True) is Mode.IN_PLACE and Mode.of(diff=True) == "diff"
    assert Mode.WRITE.writes and not Mode.DRY_RUN.writes
    with pytest.raises(UsageError, match="only one"):
        Mode.of(in_place=True, diff=True)


def test_every_command_result_is_what_its_report_writers_read(tmp_path):
    """The report writers read results only through core.pipeline's protocols (no getattr): each command's result
    has every attribute and method its protocol names, and those of the others it must not be taken for."""
    from dataclasses import fields, is_dataclass

    from torchport.core import pipeline

    src = tmp_path / "p"
    src.mkdir()
    (src / "a.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    (src / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1; }\n")
    results = {
        "convert": (torchport.api.convert(src, "npu", tmp_path / "c", write_reports=False), pipeline.ConvertedTree),
        "port-ext": (port_api.port(port_api.PortRequest.of(src, "musa", tmp_path / "m", write_reports=False)),
                     pipeline.PortedTree),
        "analyze": (analyze(src, ["npu"], write_reports=False), pipeline.AssessedTree),
        "check": (check(str(src), "npu"), pipeline.CheckedTree),
    }

    def names(protocol) -> set:
        return {n for klass in protocol.__mro__ if klass.__module__ == pipeline.__name__
                for n in list(getattr(klass, "__annotations__", {})) + [k for k, v in vars(klass).items()
                                                                        if callable(v) or isinstance(v, property)]
                if not n.startswith("_")}

    for command, (result, protocol) in results.items():
        assert isinstance(result, protocol), command
        held = {f.name for f in fields(result)} if is_dataclass(result) else set()
        missing = {n for n in names(protocol) if n not in held and not hasattr(type(result), n)}
        assert not missing, (command, missing)
    assert not isinstance(results["check"][0], pipeline.TreeResult)
    assert not isinstance(results["analyze"][0], pipeline.TreeResult)
