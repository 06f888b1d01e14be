"""The marks that say what a test needs (tests/needs.py) are checked, and CI's budget (bench/ci_budget.py) adds up."""
import subprocess
import sys

import needs
import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import ci_budget


@pytest.mark.parametrize("expression, marks, out", [
    ("not subprocess and not torch", {"torch"}, True),
    ("not subprocess and not torch", {"sim"}, True),          # sim implies subprocess
    ("not subprocess and not torch", {"soak"}, False),
    ("not (subprocess or torch)", {"subprocess"}, True),
    ("torch", {"subprocess"}, True),
    ("torch", {"torch", "subprocess"}, False),
    ("not browser", {"subprocess"}, False),
    ("sim or browser", {"browser"}, False),
    ("torch and __import__", {"torch"}, True),                # names are only ever True or False
    ("not torch or lambda", {"torch"}, False),                # a keyword: nothing is left out
    ("mark(name='x')", {"torch"}, False),
    ("not", {"torch"}, False),
    ("not torch and", {"torch"}, False),
])
def test_a_module_is_left_out_only_when_the_expression_deselects_its_marks(expression, marks, out):
    assert needs.leaves_out(expression, marks) is out


def test_module_marks_are_read_without_importing(tmp_path):
    one, many, none = tmp_path / "test_a.py", tmp_path / "test_b.py", tmp_path / "test_c.py"
    one.write_text("import pytest\nraise SystemExit('imported')\npytestmark = pytest.mark.torch\n")
    many.write_text("import pytest\npytestmark = [pytest.mark.sim, pytest.mark.skipif(True, reason='x')]\n")
    none.write_text("def test_x(:\n")
    assert needs.module_marks(one) == {"torch"}
    assert needs.module_marks(many) == {"sim"}
    assert needs.module_marks(none) == set()


CONFTEST = f"""import sys
sys.path.insert(0, {str(ROOT / 'tests')!r})
from needs import pytest_collection_modifyitems, pytest_ignore_collect, pytest_runtest_makereport, pytest_runtest_setup
"""
CASES = """import subprocess, sys
import pytest

def test_starts_a_process_unmarked():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

@pytest.mark.subprocess
def test_starts_a_process_marked():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_pool_unmarked():
    import multiprocessing
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(abs, (-1,)) == 1

def test_imports_torch_unmarked():
    import importlib
    importlib.import_module("torch")

def test_pure():
    assert 1 + 1 == 2

@pytest.mark.soak
def test_long():
    pass
"""


@pytest.mark.subprocess
@pytest.mark.torch
def test_an_unmarked_test_that_starts_a_process_or_imports_torch_fails_naming_the_mark(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_cases.py").write_text(CASES)
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rf", "-p", "no:xdist",
                        str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    out = p.stdout
    assert p.returncode == 1, out
    assert "3 failed, 2 passed, 1 deselected" in out, out
    assert "test_starts_a_process_unmarked needs @pytest.mark.subprocess" in out
    assert "test_pool_unmarked needs @pytest.mark.subprocess" in out and "multiprocessing spawn" in out
    assert "test_imports_torch_unmarked needs @pytest.mark.torch" in out
    soak = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", "no:xdist", "-m", "soak",
                           str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert soak.returncode == 0 and "1 passed, 5 deselected" in soak.stdout, soak.stdout


def test_ci_budget_counts_side_by_side_stages_once(tmp_path, capsys):
    times = tmp_path / "times"
    times.write_text("install 60\nlint+prepare 5\nsim_build+prepare 40\ntests 400\ncorpus+late 100\ncorpus_sim+late 150\n")
    assert ci_budget.total_seconds(ci_budget.read_times(times)) == 60 + 40 + 400 + 150
    assert ci_budget.main([str(times)]) == 0
    assert "650   10.8 min, 43% of the 25-minute budget: within" in capsys.readouterr().out
    times.write_text(times.read_text() + "total 1600\n")    # the measured total wins
    assert ci_budget.main([str(times)]) == 0 and "OVER" in capsys.readouterr().out
    assert ci_budget.main([str(times), "--strict"]) == 1
    times.write_text("install sixty\n")
    assert ci_budget.main([str(times)]) == 2
