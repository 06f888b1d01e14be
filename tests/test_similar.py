"""`convert --similar` (Ascend's -sim): the swaps of kb/similar.toml, TP123, and what happens without the option."""
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from torchport.backends import available_targets
from torchport.converter.run import Converter
from torchport.kb.apimap import UNSUPPORTED
from torchport.kb.similar import similar_apis

ENTRIES = similar_apis()
APPLIES = [(e, t) for e in ENTRIES for t in e.targets]
SUPPORTED = [(e, t) for e in ENTRIES for t in available_targets() if t not in e.targets]


def source_for(entry) -> str:
    """A small file using the entry's API the way its max_args allows (the call inside a `with` when it is a
    context manager of one message)."""
    args = ", ".join(f'"a{i}"' for i in range(max(entry.max_args, 1)))
    return f"import torch\n\nwith {entry.name}({args}):\n    y = torch.ones(2) * 2\n"


def convert(source: str, target: str, similar: bool):
    new, findings, _ = Converter(target, similar=similar).convert_text("a.py", source.encode(), "python")
    return (source if new is None else new.decode()), findings


def test_the_table_is_sourced_and_small():
    assert ENTRIES, "kb/similar.toml has no entry"
    for e in ENTRIES:
        assert e.name.startswith("torch.") and e.new and e.targets
        assert "https://" in e.source and len(e.change) > 40
        assert set(e.targets) <= set(available_targets()), e.targets


@pytest.mark.parametrize("entry,target", APPLIES, ids=[f"{e.name}-{t}" for e, t in APPLIES])
def test_listed_targets_do_not_support_the_original(entry, target):
    """The table lists a target only where the target's data leave the name unsupported."""
    api = Converter(target).api
    assert api.resolve(entry.name).kind == UNSUPPORTED
    assert Converter(target, similar=True).api.similar_swap(api.resolve(entry.name)) is not None


@pytest.mark.parametrize("entry,target", SUPPORTED, ids=[f"{e.name}-{t}" for e, t in SUPPORTED])
def test_other_targets_support_it_and_are_untouched_by_similar(entry, target):
    source = source_for(entry)
    assert Converter(target).api.resolve(entry.name).kind != UNSUPPORTED
    assert convert(source, target, similar=True) == convert(source, target, similar=False)


@pytest.mark.parametrize("entry,target", APPLIES, ids=[f"{e.name}-{t}" for e, t in APPLIES])
def test_swapped_with_similar_and_reported_with_what_changes(entry, target):
    source = source_for(entry)
    new, findings = convert(source, target, similar=True)
    assert f"with {entry.new}(" in new and entry.name not in new
    swaps = [f for f in findings if f.rule == "TP123"]
    assert len(swaps) == 1 and swaps[0].line == 3 and swaps[0].action == "modify"
    assert entry.change in swaps[0].message and entry.new in swaps[0].message
    # converting the converted file again changes nothing
    again, findings2 = convert(new, target, similar=True)
    assert again == new and not [f for f in findings2 if f.rule == "TP123"]


@pytest.mark.parametrize("entry,target", APPLIES, ids=[f"{e.name}-{t}" for e, t in APPLIES])
def test_without_similar_it_stays_and_is_reported_unsupported(entry, target):
    source = source_for(entry)
    new, findings = convert(source, target, similar=False)
    assert f"with {entry.name}(" in new
    at_line = [f for f in findings if f.line == 3]
    assert [f.action for f in at_line] == ["unsupported"] and at_line[0].rule != "TP123"
    assert not [f for f in findings if f.rule == "TP123"]


def test_a_call_the_entry_does_not_allow_is_left_and_says_why():
    """nvtx.range's extra arguments go to msg.format; record_function's second argument means something else."""
    (entry,) = [e for e in ENTRIES if e.name == "torch.cuda.nvtx.range"]
    source = 'import torch\n\nfor i in range(2):\n    with torch.cuda.nvtx.range("step {}", i):\n        pass\n'
    new, findings = convert(source, "cpu", similar=True)
    assert new == source
    (f,) = [f for f in findings if f.line == 4]
    assert f.action == "unsupported" and f.rule == "TP108" and "--similar: not swapped" in f.message
    assert entry.max_args == 1


def test_a_user_rule_decision_is_not_swapped(tmp_path):
    rules = tmp_path / "r.toml"
    rules.write_text('[[unsupported]]\nname = "torch.cuda.nvtx.range"\ntip = "ours: remove it"\n')
    new, findings, _ = Converter("cpu", [str(rules)], similar=True).convert_text(
        "a.py", source_for(ENTRIES[0]).encode(), "python")
    assert new is None and not [f for f in findings if f.rule == "TP123"]
    assert any("ours: remove it" in f.message for f in findings)


@pytest.mark.subprocess
@pytest.mark.torch
def test_cli_similar_for_cpu_writes_a_file_that_runs(tmp_path):
    """The original fails on a host without NVTX (torch's CPU build); the --similar copy runs and its range
    shows up in a torch.profiler trace, as the finding says."""
    src = tmp_path / "prof.py"
    src.write_text("import torch\nfrom torch.profiler import ProfilerActivity, profile\n\n"
                   "with profile(activities=[ProfilerActivity.CPU]) as prof:\n"
                   '    with torch.cuda.nvtx.range("fwd"):\n        y = torch.ones(2) * 2\n'
                   'print("labels:", sorted(e.key for e in prof.key_averages() if e.key == "fwd"))\n')
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    out = tmp_path / "prof_cpu.py"
    p = subprocess.run([sys.executable, "-m", "torchport", "convert", str(src), "--to", "cpu", "--similar",
                        "-o", str(out)], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert "torch.profiler.record_function(\"fwd\")" in out.read_text()
    plain = subprocess.run([sys.executable, str(src)], capture_output=True, text=True)
    ran = subprocess.run([sys.executable, str(out)], capture_output=True, text=True)
    if "NVTX functions not installed" in plain.stderr:  # torch's CPU build: the original cannot run here
        assert plain.returncode != 0
    assert ran.returncode == 0, ran.stderr
    assert "labels: ['fwd']" in ran.stdout
    report = subprocess.run([sys.executable, "-m", "torchport", "convert", str(src), "--to", "cpu", "-sim",
                             "--dry-run", "--json"], capture_output=True, text=True, env=env)
    assert '"TP123"' in report.stdout


@pytest.mark.subprocess
def test_cli_help_names_the_option():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.run([sys.executable, "-m", "torchport", "convert", "--help"], capture_output=True, text=True,
                       env=env)
    assert "--similar" in p.stdout and "-sim" in p.stdout
