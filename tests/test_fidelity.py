"""The simulator's fidelity suite: every row of tests/fidelity/*.toml, its probe run under `torchport sim`, judged
against what the row expects (the vendor's behaviour when the row is faithful).  docs/sim.md's counts come from
the same rows and are kept current here."""
import hashlib
import json
import re
import sys
import textwrap

import pytest
from conftest import ROOT, shared_folder

sys.path.insert(0, str(ROOT / "tests" / "fidelity"))
import runner

ROWS = runner.load_rows()
GROUPS: dict = {}
for _row in ROWS:
    GROUPS.setdefault(_row.group, []).append(_row)


def _marks(row):
    marks = [pytest.mark.sim, pytest.mark.subprocess]
    return marks + [pytest.mark.distributed] if row.ranks > 1 else marks


@pytest.fixture(scope="session")
def group_run(tmp_path_factory):
    """Each group's probes run once per test run (shared by pytest -n's workers)."""
    def get(row):
        key = hashlib.sha256(repr(row.group).encode()).hexdigest()[:12]
        rows = GROUPS[row.group]

        def make(folder):
            run = runner.run_group(rows, folder / "run")
            (folder / "run.json").write_text(json.dumps({"outcomes": run.outcomes, "returncode": run.returncode,
                                                         "stderr": run.stderr[-4000:]}))
        return json.loads((shared_folder(tmp_path_factory, f"fidelity-{key}", make) / "run.json").read_text())
    return get


@pytest.mark.parametrize("row", [pytest.param(r, id=f"{r.file[:-5]}-{r.target}-{r.id}", marks=_marks(r)) for r in ROWS])
def test_row(row, group_run):
    run = group_run(row)
    outcomes = {int(rank): found.get(row.id) for rank, found in run["outcomes"].items()}
    why = runner.judge(row, outcomes.get(0))
    assert not why, f"{row.id} ({row.behaviour}): {why}\nstderr of the probe run:\n{run['stderr']}"
    if row.ranks > 1:
        other = outcomes.get(1)
        assert other is not None and runner.judge(row, other) == "", f"rank 1 differs: {other}"


# --- the runner and the data, without a simulated process


def test_every_row_follows_the_format_and_ids_are_unique():
    assert len({r.id for r in ROWS}) == len(ROWS)
    assert all(r.verdict == "faithful" or r.why for r in ROWS)


@pytest.mark.parametrize("field,value,message", [
    ("verdict", "fine", "verdict must be one of"),
    ("expect", "value 3", "expect is ok"),
    ("probe", "x = (", "probe is not Python"),
    ("target", "cuda", "target must be one of"),
])
def test_a_malformed_row_is_refused_naming_it(tmp_path, field, value, message):
    row = {"id": "X1", "target": "npu", "area": "api", "behaviour": "b", "source": "s", "vendor": "v",
           "probe": "1", "expect": "ok", "verdict": "faithful", field: value}
    text = "[[row]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in row.items())
    (tmp_path / "a.toml").write_text(text)
    with pytest.raises(runner.RowError, match=re.escape(message)) as e:
        runner.load_rows(tmp_path)
    assert "a.toml: row X1" in str(e.value)


def test_a_row_that_is_not_faithful_must_say_why(tmp_path):
    (tmp_path / "a.toml").write_text(textwrap.dedent('''
        [[row]]
        id = "X2"
        target = "mlu"
        area = "op"
        behaviour = "b"
        source = "s"
        vendor = "v"
        probe = "1"
        expect = "ok"
        verdict = "too strict"
    '''))
    with pytest.raises(runner.RowError, match="says why"):
        runner.load_rows(tmp_path)


def _row(expect):
    return runner.Row(id="X", target="npu", area="api", behaviour="b", source="s", vendor="v", probe="1",
                      expect=expect, verdict="faithful", file="a.toml")


@pytest.mark.parametrize("expect,outcome,verdict", [
    ("ok", {"kind": "ok", "value": "None", "warnings": []}, ""),
    ("ok", {"kind": "raises", "error": "RuntimeError: no", "warnings": []}, "expected to run; raised RuntimeError: no"),
    ("value: (8, 0)", {"kind": "ok", "value": "(8, 0)", "warnings": []}, ""),
    ("value: (8, 0)", {"kind": "ok", "value": "None", "warnings": []}, "expected result (8, 0); ran, result None"),
    ("raises: unsafe to autocast", {"kind": "raises", "error": "RuntimeError: x is unsafe to autocast", "warnings": []}, ""),
    ("raises: unsafe to autocast", {"kind": "ok", "value": "1", "warnings": []},
     "expected to raise 'unsafe to autocast'; ran, result 1"),
    ("warns: CPU fallback", {"kind": "ok", "value": "1", "warnings": ["op runs on the CPU fallback"]}, ""),
    ("warns: CPU fallback", {"kind": "ok", "value": "1", "warnings": []}, "expected a warning with 'CPU fallback'"),
    ("ok", None, "no outcome"),
])
def test_judge_compares_the_outcome_with_the_expectation(expect, outcome, verdict):
    got = runner.judge(_row(expect), outcome)
    assert got.startswith(verdict) and (got == "") == (verdict == "")


def test_docs_show_the_suites_counts():
    """docs/sim.md holds the table tools/fidelity_table.py prints from these rows (rerun it after changing rows)."""
    docs = (ROOT / "docs" / "sim.md").read_text()
    assert runner.markdown_counts(ROWS) in docs, "run: python tools/fidelity_table.py --write"
