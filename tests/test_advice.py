"""analyze's performance advice (kb/advice.toml -> <target>/advice.csv): every rule fires on its positive snippet
and never on its negative one, through the real scan; every row names its source; the CLI writes the file."""
import csv
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from torchport.analyze import advice
from torchport.analyze.scan import Analyzer
from torchport.api import analyze
from torchport.backends import available_targets
from torchport.core import files as tree

RULES = advice.rules()
TARGETS = tuple(available_targets())


@pytest.fixture(scope="module")
def analyzer():
    return Analyzer(TARGETS, advice=True)


def rows_for(analyzer, folder, text, target):
    """advice.csv's rows for `text` as the one file of a project, scanned the way analyze scans."""
    (folder / "snippet.py").write_text(text, encoding="utf-8")
    scans = [analyzer.scan(e) for e in tree.walk(folder, ()) if e.kind == "file"]
    return advice.project_rows(scans, target)


def test_the_rules_load_with_sources_and_fixtures():
    assert len(RULES) >= 15
    assert len({r.id for r in RULES}) == len(RULES)
    for r in RULES:
        assert r.source.strip() and r.advice.strip(), r.id
        assert r.positive.strip() and r.negative.strip(), f"{r.id}: every rule needs a positive and a negative snippet"
        assert "seed" not in r.source.lower(), f"{r.id}: name the document, not the seed file"
        assert "http" in r.source or "§" in r.source, f"{r.id}: a URL or a document section"


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_positive_fires_and_negative_does_not(rule, analyzer, tmp_path):
    for target in (t for t in TARGETS if rule.applies_to(t)):
        (tmp_path / "pos").mkdir(exist_ok=True)
        (tmp_path / "neg").mkdir(exist_ok=True)
        pos = rows_for(analyzer, tmp_path / "pos", rule.positive, target)
        neg = rows_for(analyzer, tmp_path / "neg", rule.negative, target)
        assert [r for r in pos if r[2] == rule.id], (target, pos)
        assert not [r for r in neg if r[2] == rule.id], (target, neg)
        for row in pos:
            assert row[0] == "snippet.py" and row[1] >= 1 and row[3] and row[4], row
            assert "{" not in row[3], row  # placeholders filled
    for target in (t for t in TARGETS if not rule.applies_to(t)):
        assert not [r for r in rows_for(analyzer, tmp_path, rule.positive, target) if r[2] == rule.id], target


def test_a_bad_rule_is_refused():
    good = {"id": "x", "targets": ["npu"], "match": {"call": ["torch.nonzero"]}, "advice": "a", "source": "s"}
    assert advice._check(good, set(TARGETS)).kind == "call"
    for bad in ({"source": ""}, {"targets": ["tpu"]}, {"match": {"call": ["a"], "method": ["b"]}},
                {"match": {"call": ["a"], "keywords": {"k": "sometimes"}}}, {"scope": "repo"},
                {"match": {"call": ["a"], "spelling": 1}}):
        with pytest.raises(ValueError):
            advice._check({**good, **bad}, set(TARGETS))


def test_project_scope_picks_the_entry_and_respects_mentions(analyzer, tmp_path):
    loop = "import torch\ndef train(model, x):\n    for _ in range(3):\n        model(x).sum().backward()\n"
    (tmp_path / "engine.py").write_text(loop)
    (tmp_path / "train.py").write_text("from engine import train\nimport torch\n"
                                       "if __name__ == '__main__':\n    torch.ones(1).backward()\n")
    scans = [analyzer.scan(e) for e in tree.walk(tmp_path, ()) if e.kind == "file"]
    rows = [r for r in advice.project_rows(scans, "npu") if r[2] == "npu-task-queue"]
    assert [(r[0], r[1]) for r in rows] == [("train.py", 4)]  # one row, in the file with the __main__ guard
    (tmp_path / "run.sh").write_text("export TASK_QUEUE_ENABLE=2\npython train.py\n")
    scans = [analyzer.scan(e) for e in tree.walk(tmp_path, ()) if e.kind == "file"]
    ids = {r[2] for r in advice.project_rows(scans, "npu")}
    assert "npu-task-queue" not in ids and "npu-combined-enable" in ids  # the script sets one of the two
    (tmp_path / "launch.yaml").write_text("env:\n  COMBINED_ENABLE: 1\n")  # a config convert only copies
    scans = [analyzer.scan(e) for e in tree.walk(tmp_path, ()) if e.kind == "file"]
    assert not {"npu-task-queue", "npu-combined-enable"} & {r[2] for r in advice.project_rows(scans, "npu")}


def test_an_unparsable_file_gives_no_advice_and_no_crash(analyzer, tmp_path):
    assert rows_for(analyzer, tmp_path, "from torch.utils.data import DataLoader\nDataLoader(x, num_workers=0\n",
                    "npu") == []


@pytest.mark.subprocess
def test_cli_writes_advice_csv(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "loader = DataLoader(ds, batch_size=4)\n"
        "model = torch.nn.Conv2d(3, 8, 3).cuda()\n"
        "opt = torch.optim.AdamW(model.parameters())\n"
        "for x in loader:\n    loss = model(x.cuda()).sum()\n    loss.backward()\n    print(loss.item())\n")
    before = (proj / "train.py").read_bytes()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.run([sys.executable, "-m", "torchport", "analyze", str(proj), "--to", "npu,xpu,cpu", "-j", "1"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert (proj / "train.py").read_bytes() == before
    out = tmp_path / "proj_analysis"
    found = {}
    for t in ("npu", "xpu", "cpu"):
        rows = list(csv.reader((out / t / "advice.csv").open(encoding="utf-8", newline="")))
        assert rows[0] == ["File", "Line", "Rule", "Advice", "Source"]
        assert all(r[4].strip() for r in rows[1:]), "every row names its source"
        found[t] = {(r[2], r[1]) for r in rows[1:]}
    assert {("npu-fused-optimizer", "5"), ("dataloader-drop-last", "3"), ("host-sync-in-training-loop", "9"),
            ("npu-task-queue", "8"), ("dataloader-num-workers", "3")} <= found["npu"]
    assert {("dataloader-pin-memory", "3"), ("xpu-channels-last", "4")} <= found["xpu"]
    assert not any(rule.startswith(("npu-", "xpu-", "dataloader-pin")) for rule, _ in found["cpu"])
    assert ("dataloader-num-workers", "3") in found["cpu"]
    assert f"performance advice: npu {len(found['npu'])}, xpu {len(found['xpu'])}, cpu {len(found['cpu'])}" in p.stdout
    md = (out / "analysis.md").read_text(encoding="utf-8")
    assert "## Performance advice per target" in md and "npu-fused-optimizer 1" in md
    assert not (proj / "npu").exists()


def test_analyze_without_reports_keeps_advice_in_the_result(tmp_path):
    (tmp_path / "m.py").write_text("import torch\nidx = torch.nonzero(torch.ones(3))\n")
    result = analyze(tmp_path, "npu,mlu", write_reports=False, jobs=1)
    assert [r[2] for r in result.advice("npu")] == ["npu-dynamic-shape-op"]
    assert result.advice("mlu") == []
    assert result.summary()["advice"] == {"npu": 1, "mlu": 0}
    assert result.to_dict()["per_target"]["npu"]["advice"][0]["rule"] == "npu-dynamic-shape-op"


def test_host_side_data_code_is_skipped_by_device_rules(analyzer, tmp_path):
    """skip_paths: a transpose().contiguous() in a transforms module runs in the loader's workers, not on the NPU."""
    rule = next(r for r in RULES if r.id == "npu-contiguous-after-transpose")
    (tmp_path / "transforms").mkdir()
    (tmp_path / "transforms" / "convert.py").write_text(rule.positive)
    (tmp_path / "model.py").write_text(rule.positive)
    scans = [analyzer.scan(e) for e in tree.walk(tmp_path, ()) if e.kind == "file"]
    assert {r[0] for r in advice.project_rows(scans, "npu") if r[2] == rule.id} == {"model.py"}


# ------------------------------------------------------------------ the prefilter: words read from the rules
@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_every_rules_words_are_in_its_positive_snippet(rule):
    """The words a file must hold for a rule to be parsed for come from its matcher; wrong words would hide
    the rule's own example (and the positive test above would fail only for the rules it happens to cover)."""
    assert rule.word_groups
    for group in rule.word_groups:
        assert any(w in rule.positive for w in group), (rule.id, group)
    assert rule.anchors and any(w.lower() in rule.positive.lower() for w in rule.anchors), rule.id


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_the_walk_of_the_anchor_lines_finds_what_the_whole_tree_does(rule, monkeypatch):
    """file_hits walks only the lines holding the wanted rules' anchor words: the same hits as the whole tree."""
    from torchport.converter.python import SourceFile

    chosen = advice.rules_for(TARGETS)
    for snippet in (rule.positive, rule.negative):
        pruned = advice.file_hits(SourceFile("model.py", snippet), chosen)
        with monkeypatch.context() as m:
            m.setattr(advice, "_anchor_lines", lambda src, wanted: None)  # None: the whole tree
            assert advice.file_hits(SourceFile("model.py", snippet), chosen) == pruned, rule.id
    assert pruned is not None


def test_an_import_alias_is_an_anchor(analyzer, tmp_path):
    """`nz(x)` holds no anchor word; its import binds the name that resolves to torch.nonzero."""
    rows = rows_for(analyzer, tmp_path, "import torch\nfrom torch import nonzero as nz\n\n\nidx = nz(x)\n", "npu")
    assert [(r[1], r[2]) for r in rows] == [(5, "npu-dynamic-shape-op")]


def test_a_file_without_the_words_is_not_parsed_for_advice(tmp_path, monkeypatch):
    import ast

    parses = []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda source, *a, **k: parses.append(source) or real(source, *a, **k))
    npu = Analyzer(("npu",), advice=True)
    python = next(iter(npu.converters.values())).python
    contiguous = next(r for r in RULES if r.id == "npu-contiguous-after-transpose")
    cases = [("plain.py", "def f(a):\n    return [a + 1]\n", 0),
             # `contiguous` without a transpose/permute anywhere: the receiver_call group is missing
             ("flat.py", "def f(a):\n    return a.view(-1).contiguous()\n", 0),
             ("model.py", contiguous.positive, 1)]
    for name, text, expected in cases:
        assert not python.wants(text.lower()), name  # the converter would not parse it either
        parses.clear()
        (tmp_path / name).write_text(text)
        entry = next(e for e in tree.walk(tmp_path, ()) if e.rel == name)
        scan = npu.scan(entry)
        assert len(parses) == expected, name
        assert bool(scan.advice) == bool(expected), name
