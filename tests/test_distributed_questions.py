"""A comparison with NCCL's name asks a question; a backend argument chooses (rules/distributed.py,
question_policy).  Where the target's collectives are gloo (cpu, mps) the question keeps its words and answers
no, as the cpu target's kept `torch.cuda.is_available()` does; on accelerator it asks about the accelerator's
backend where there is one; on the vendor targets it asks about theirs.  Before, every target rewrote it to
its backend, and on cpu pytorch-ignite 0.5.5's `if backend == dist.Backend.NCCL and not
torch.cuda.is_available(): raise` raised for every gloo run."""
import ast
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from torchport.converter.run import Converter

IGNITE = '''import torch
import torch.distributed as dist

NCCL = dist.Backend.NCCL

def init(backend):
    if backend == dist.Backend.NCCL and not torch.cuda.is_available():
        raise RuntimeError("Nccl backend is required but no cuda capable devices")
    dist.init_process_group(backend)
    if backend == dist.Backend.NCCL:
        dist.barrier(device_ids=[torch.cuda.current_device()])
'''
GUARDED = ('(torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or '
           'torch.device("cpu")) if torch.accelerator.is_available() else None)')


def convert(source: str, target: str) -> tuple:
    new, findings, _ = Converter(target).convert_text("m.py", textwrap.dedent(source).encode(), "python")
    text = new.decode() if new is not None else textwrap.dedent(source)
    ast.parse(text)   # whatever the target, the converted file parses
    return text, findings


@pytest.mark.parametrize("target", ["cpu", "mps"])
def test_a_backend_question_stays_where_the_backend_is_gloo(target):
    text, _ = convert(IGNITE, target)
    assert "if backend == dist.Backend.NCCL and not torch." in text
    assert "    if backend == dist.Backend.NCCL:\n" in text
    assert '"gloo"' not in text.split("def init")[1]   # no question asks about gloo


@pytest.mark.parametrize("target,backend,device", [("npu", "hccl", "npu"), ("mlu", "cncl", "mlu"),
                                                   ("musa", "mccl", "musa"), ("xpu", "xccl", "xpu")])
def test_a_backend_question_asks_about_the_vendor_backend_beside_its_device_question(target, backend, device):
    text, _ = convert(IGNITE, target)
    assert f'if backend == "{backend}" and not torch.{device}.is_available():' in text
    assert f'    if backend == "{backend}":\n' in text


def test_on_accelerator_a_backend_question_answers_no_where_there_is_no_accelerator():
    text, _ = convert(IGNITE, "accelerator")
    assert f"if backend == {GUARDED} and not torch.accelerator.is_available():" in text
    assert f"    if backend == {GUARDED}:\n" in text


FORMS = '''
import torch.distributed as dist
from torch.distributed import Backend


def questions(backend, cfg):
    a = backend == dist.Backend.NCCL
    b = dist.get_backend() == "nccl"
    c = dist.get_backend() == Backend.NCCL
    d = backend != "nccl"
    e = backend in ("nccl", "gloo")
    f = backend is dist.Backend.NCCL
    g = cfg.mode == "nccl"
    h = "NCCL" == backend
    return a, b, c, d, e, f, g, h


def choices(rank, backend="nccl"):
    dist.init_process_group("nccl", rank=rank)
    dist.init_process_group(backend=dist.Backend.NCCL)
    chosen = "nccl"
    dist.new_group(ranks=[0], backend=chosen)
'''


def _lines(text: str, start: str, end: str) -> list:
    return [line.strip() for line in text.split(start)[1].split(end)[0].strip().splitlines()]


def test_every_form_of_question_stays_and_every_choice_changes_on_cpu():
    text, findings = convert(FORMS, "cpu")
    assert _lines(text, "def questions(backend, cfg):", "return") == [
        "a = backend == dist.Backend.NCCL", 'b = dist.get_backend() == "nccl"', "c = dist.get_backend() == Backend.NCCL",
        'd = backend != "nccl"', 'e = backend in ("nccl", "gloo")', "f = backend is dist.Backend.NCCL",
        'g = cfg.mode == "nccl"', 'h = "NCCL" == backend']
    assert 'def choices(rank, backend="gloo"):' in text
    assert _lines(text, 'def choices(rank, backend="gloo"):', "\ndist.new")[:3] == [
        'dist.init_process_group("gloo", rank=rank)', 'dist.init_process_group(backend="gloo")', 'chosen = "gloo"']
    assert not [f for f in findings if f.line < 18 and f.rule.startswith("TP30")]   # questions: nothing to review


def test_every_form_of_question_asks_about_the_vendor_backend():
    text, _ = convert(FORMS, "npu")
    assert _lines(text, "def questions(backend, cfg):", "return") == [
        'a = backend == "hccl"', 'b = dist.get_backend() == "hccl"', 'c = dist.get_backend() == "hccl"',
        'd = backend != "hccl"', 'e = backend in ("hccl", "gloo")',
        'f = backend == "hccl"',              # `is` with a literal would be a SyntaxWarning
        'g = cfg.mode == "nccl"',             # not a backend it compares with: left, reported (TP303)
        'h = "hccl" == backend']


def test_every_form_of_question_is_guarded_on_accelerator():
    text, _ = convert(FORMS, "accelerator")
    assert _lines(text, "def questions(backend, cfg):", "return")[:6] == [
        f"a = backend == {GUARDED}", f"b = dist.get_backend() == {GUARDED}", f"c = dist.get_backend() == {GUARDED}",
        f"d = backend != {GUARDED}", f'e = backend in ({GUARDED}, "gloo")', f"f = backend == {GUARDED}"]


BOTH_WAYS = '''
import torch
import torch.distributed as dist

NCCL = dist.Backend.NCCL
NCCL_NAME = "nccl"
KNOWN = [NCCL, "gloo"]


def init(backend=NCCL):
    if backend == NCCL and not torch.cuda.is_available():
        raise RuntimeError("NCCL needs CUDA")
    if backend == NCCL_NAME:
        pass
    dist.init_process_group(backend)


def launch():
    dist.init_process_group(backend=NCCL)
    dist.init_process_group(NCCL_NAME)


def local_choice():
    backend = "nccl"
    if backend == dist.get_backend():   # a backend variable asked about: it is a choice, not NCCL's name
        pass
    dist.init_process_group(backend)
'''


def test_a_constant_read_by_questions_keeps_naming_nccl_and_its_choices_change_where_they_are():
    """The module-level `NCCL = dist.Backend.NCCL` of ignite, read both by a question and by choices: its value
    stays (the question keeps asking about NCCL), the reads that choose a backend become gloo, and its other reads
    (a list of names) are reported."""
    text, findings = convert(BOTH_WAYS, "cpu")
    assert "NCCL = dist.Backend.NCCL\n" in text and 'NCCL_NAME = "nccl"\n' in text
    assert "if backend == NCCL and not torch.cuda.is_available():" in text and "if backend == NCCL_NAME:" in text
    assert 'def init(backend="gloo"):' in text
    assert 'dist.init_process_group(backend="gloo")\n    dist.init_process_group("gloo")' in text
    assert '    backend = "gloo"\n    if backend == dist.get_backend():' in text
    advice = [f for f in findings if f.action == "advice"]
    assert [(f.line, f.rule) for f in advice] == [(5, "TP302")] and "line 7" in advice[0].message


def test_a_constant_read_by_questions_on_the_vendor_and_accelerator_targets():
    text, _ = convert(BOTH_WAYS, "npu")   # questions and choices both name hccl: the value changes
    assert 'NCCL = "hccl"\n' in text and 'NCCL_NAME = "hccl"\n' in text and "if backend == NCCL and" in text
    text, findings = convert(BOTH_WAYS, "accelerator")
    assert "NCCL = dist.Backend.NCCL\n" in text
    assert f"if backend == {GUARDED} and not torch.accelerator.is_available():" in text
    assert f"if backend == {GUARDED}:" in text
    assert "def init(backend=NCCL):" in text   # an expression default would run at import: reported
    assert any(f.line == 10 and f.rule == "TP301" and f.action == "advice" for f in findings)


MATCH = '''
import torch.distributed as dist
from torch.distributed import Backend


def describe(backend):
    match backend:
        case "nccl":
            return 1
        case dist.Backend.NCCL:
            return 2
    match dist.get_backend():
        case Backend.NCCL | "gloo":
            return 3
'''


@pytest.mark.skipif(sys.version_info < (3, 10), reason="match needs Python 3.10")
@pytest.mark.parametrize("target", ["cpu", "mps", "npu", "accelerator"])
def test_match_cases_are_questions(target):
    """Before, on accelerator `case dist.Backend.NCCL:` became `case <an expression>:`, which does not parse: the
    whole file was copied unconverted."""
    text, findings = convert(MATCH, target)
    cases = [line.strip() for line in text.splitlines() if line.strip().startswith("case")]
    if target == "npu":
        assert cases == ['case "hccl":', 'case "hccl":', 'case "hccl" | "gloo":']
    else:
        assert cases == ['case "nccl":', "case dist.Backend.NCCL:", 'case Backend.NCCL | "gloo":']
    reported = sorted(f.line for f in findings if f.action == "advice")
    assert reported == ([8, 10, 13] if target == "accelerator" else [])


@pytest.mark.subprocess
@pytest.mark.torch
def test_the_converted_ignite_init_runs_on_gloo_where_the_original_raised(tmp_path):
    """The repro, run: the original and the cpu conversion, each in a one-process gloo group."""
    converted, _ = convert(IGNITE, "cpu")
    (tmp_path / "original.py").write_text(IGNITE)
    (tmp_path / "converted.py").write_text(converted)
    driver = textwrap.dedent('''
        import sys
        import torch.distributed as dist
        module = __import__(sys.argv[1])
        try:
            module.init("gloo")
        except Exception as e:
            print("raised", type(e).__name__, e)
        else:
            print("ran", dist.get_backend(), dist.get_world_size())
            dist.destroy_process_group()
    ''')
    (tmp_path / "driver.py").write_text(driver)
    got = {}
    for name in ("original", "converted"):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1",
                   CUDA_VISIBLE_DEVICES="", PYTHONWARNINGS="ignore")
        p = subprocess.run([sys.executable, "driver.py", name], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0, p.stderr[-2000:]
        got[name] = p.stdout.strip()
    assert got["converted"] == "ran gloo 1"
    # the original, on gloo and without CUDA, skips both NCCL branches too: the conversion runs as it does
    assert got["original"] == got["converted"]
