"""Lint ergonomics of `check` and `convert` (issue 18, item 3), through the real command line on a project in a
temporary folder: `# torchport: ignore[...]` comments, [tool.torchport] in pyproject.toml, --select/--ignore,
`torchport rules CODE`, and `check --write-baseline`'s message and exit status."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT

from torchport.cli import main
from torchport.core.codes import CODES

LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<rule>TP\d{3}) (?P<action>\w+): ")

TRAIN = textwrap.dedent('''\
    import torch

    a = torch.zeros(2).cuda()  # torchport: ignore[TP501]
    b = torch.zeros(2).cuda()
    c = torch.zeros(2).cuda()  # torchport: ignore
    s = "# torchport: ignore"; d = torch.zeros(2).cuda()
    m = torch.nn.Linear(  # torchport: ignore[TP201]
        2, 2,
        device="cuda",
    )
    e = torch.zeros(2).cuda()  # torchport: ignore[TP206]
    ''')


def run(argv, cwd, capsys) -> tuple:
    """main() in `cwd` with one worker: (exit code, stdout, stderr)."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        code = main([*argv, "-j", "1"])
    finally:
        os.chdir(old)
    out, err = capsys.readouterr()
    return code, out, err


def findings(out: str) -> list:
    """(line, rule) of each finding line of check's text report."""
    return [(int(m["line"]), m["rule"]) for m in map(LINE.match, out.splitlines()) if m]


@pytest.fixture
def proj(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(TRAIN)
    return tmp_path


# ------------------------------------------------------------------ suppression comments
def test_comment_suppresses_its_codes_in_check(proj, capsys):
    code, out, err = run(["check", "src", "--to", "npu"], proj, capsys)
    assert code == 1, err
    found = findings(out)
    assert (4, "TP501") in found and (6, "TP501") in found, "lines without a comment are still reported"
    assert (11, "TP501") in found, "a comment naming another code suppresses nothing of TP501"
    assert not {(3, "TP501"), (5, "TP501"), (9, "TP201")} & set(found), found
    assert "3 suppressed by `# torchport: ignore`" in out, out


def test_comment_in_convert_leaves_the_line_as_written_and_counts_it(proj, capsys):
    code, out, err = run(["convert", "src", "--to", "npu", "-o", "out"], proj, capsys)
    assert code == 0, err
    lines = (proj / "out" / "train.py").read_text().splitlines()
    original = TRAIN.splitlines()
    for text in (original[2], original[4], *original[6:10]):  # a, c (bare ignore), the multi-line Linear(...)
        assert text in lines, text
    assert "b = torch.zeros(2).npu()" in lines and "e = torch.zeros(2).npu()  # torchport: ignore[TP206]" in lines
    assert ", 3 suppressed (" in out, out
    report = json.loads((proj / "out_report" / "report.json").read_text())
    assert report["summary"]["suppressed"] == 3
    assert sorted((f["line"], f["rule"]) for f in report["suppressed"]) == [(3, "TP501"), (5, "TP501"), (9, "TP201")]
    assert "## Suppressed (3)" in (proj / "out_report" / "report.md").read_text()


def test_comment_inside_a_string_is_not_a_comment(proj, capsys):
    code, out, _ = run(["convert", "src", "--to", "npu", "--diff"], proj, capsys)
    assert code == 0
    assert '+s = "# torchport: ignore"; d = torch.zeros(2).npu()' in out.splitlines()


def test_multi_line_statement_first_line_only_and_compound_header_only(tmp_path, capsys):
    (tmp_path / "a.py").write_text(textwrap.dedent('''\
        import torch

        with torch.cuda.device(0):  # torchport: ignore
            x = torch.zeros(2).cuda()
        y = torch.zeros(2).cuda(
            0)  # torchport: ignore
        '''))
    code, out, _ = run(["check", "a.py", "--to", "npu"], tmp_path, capsys)
    assert code == 1
    assert findings(out) == [(1, "TP001"), (4, "TP501"), (5, "TP501")], \
        "the header's comment covers the header, not the body; a comment on a statement's last line does not count"


def test_unknown_code_in_a_comment_is_a_warning_with_file_and_line(tmp_path, capsys):
    (tmp_path / "a.py").write_text("import torch\nx = torch.zeros(2).cuda()  # torchport: ignore[TP9999, TP501]\n")
    code, out, err = run(["check", "a.py", "--to", "npu"], tmp_path, capsys)
    # the warning is a note; TP501 suppressed, the import it wanted (TP001) goes with it (issue 31 item 11)
    assert code == 0 and "Traceback" not in err
    assert re.search(r"^a\.py:2:1: TP000 advice: unknown code 'TP9999' in a `# torchport: ignore\[\.\.\.\]` comment",
                     out, re.M), out
    assert (2, "TP501") not in findings(out), "the known code of the same comment still works"
    code, out, err = run(["convert", "a.py", "--to", "npu", "--dry-run"], tmp_path, capsys)
    assert code == 0 and "torchport: warning: a.py:2: unknown code 'TP9999'" in err, err


def test_shell_comment_covers_its_line(tmp_path, capsys):
    (tmp_path / "run.sh").write_text("export CUDA_VISIBLE_DEVICES=0  # torchport: ignore[TP801]\n"
                                     "export CUDA_VISIBLE_DEVICES=1\n"
                                     'echo "# torchport: ignore" CUDA_VISIBLE_DEVICES=2\n')
    code, out, _ = run(["check", "run.sh", "--to", "npu"], tmp_path, capsys)
    assert code == 1 and findings(out) == [(2, "TP801"), (3, "TP801")]


def test_comment_in_a_notebook_cell(tmp_path, capsys):
    cells = [["import torch\n"], ["x = torch.ones(1).cuda()  # torchport: ignore\n", "y = torch.ones(1).cuda()\n"]]
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None}
                    for c in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "a.ipynb").write_text(json.dumps(nb))
    code, out, _ = run(["check", "a.ipynb", "--to", "npu"], tmp_path, capsys)
    assert findings(out) == [(1, "TP001"), (2, "TP501")] and "1 suppressed" in out
    assert run(["convert", "a.ipynb", "--to", "npu", "-o", "b.ipynb"], tmp_path, capsys)[0] == 0
    source = json.loads((tmp_path / "b.ipynb").read_text())["cells"][1]["source"]
    assert source == ["x = torch.ones(1).cuda()  # torchport: ignore\n", "y = torch.ones(1).npu()\n"]


def test_comment_names_a_user_rule_id(tmp_path, capsys):
    (tmp_path / "r.toml").write_text('[[unsupported]]\nid = "MY002"\nname = "mylib.helpers.old_func"\n'
                                     'tip = "use new_func"\n')
    (tmp_path / "a.py").write_text("import mylib.helpers\nmylib.helpers.old_func()  # torchport: ignore[MY002]\n"
                                   "mylib.helpers.old_func()\n")
    code, out, err = run(["convert", "a.py", "--to", "npu", "-r", "r.toml", "--dry-run", "--json"], tmp_path, capsys)
    data = json.loads(out)
    assert [(f["line"], f["rule"]) for f in data["findings"]] == [(3, "MY002")], "no warning, line 3 still reported"
    assert [(f["line"], f["rule"]) for f in data["suppressed"]] == [(2, "MY002")] and err == ""


# ------------------------------------------------------------------ --select / --ignore
def test_select_and_ignore_with_prefixes(proj, capsys):
    _, out, _ = run(["check", "src", "--to", "npu"], proj, capsys)
    every = findings(out)
    assert {r for _, r in every} == {"TP001", "TP501"}
    code, out, _ = run(["check", "src", "--to", "npu", "--select", "tp5"], proj, capsys)
    assert code == 1 and findings(out) == [f for f in every if f[1] == "TP501"]
    code, out, _ = run(["check", "src", "--to", "npu", "--ignore", "TP5,TP0"], proj, capsys)
    assert code == 0 and findings(out) == [] and "-> ok" in out
    code, out, _ = run(["check", "src", "--to", "npu", "--select", "TP5", "--ignore", "TP501"], proj, capsys)
    assert code == 0 and findings(out) == [], "the longer prefix wins"
    code, out, _ = run(["check", "src", "--to", "npu", "--select", "TP501", "--ignore", "TP5"], proj, capsys)
    assert findings(out) == [f for f in every if f[1] == "TP501"]
    # convert: an ignored rewrite is not made
    code, out, _ = run(["convert", "src", "--to", "npu", "--diff", "--ignore", "TP501"], proj, capsys)
    assert code == 0 and "+import torch_npu" in out and ".npu()" not in out


@pytest.mark.parametrize("option, word, hint", [("--select", "TP59", "TP5"), ("--ignore", "TP5O1", "TP501"),
                                                ("--ignore", "TP206,XX", "")])
def test_unknown_code_on_the_command_line_is_a_usage_error(proj, capsys, option, word, hint):
    code, out, err = run(["check", "src", "--to", "npu", option, word], proj, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"torchport: error: {option}: unknown code '{word.split(',')[-1]}'"), err
    assert (f"(did you mean {hint}?)" in err) == bool(hint), err
    code, _, err = run(["convert", "src", "--to", "npu", "--dry-run", option, word], proj, capsys)
    assert code == 2 and "unknown code" in err


# ------------------------------------------------------------------ [tool.torchport]
def write_config(proj, body: str) -> None:
    (proj / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n[tool.torchport]\n" + textwrap.dedent(body))


def test_config_target_select_ignore(proj, capsys):
    write_config(proj, 'target = "mlu"\nignore = ["TP0"]\n')
    code, out, _ = run(["check", "src"], proj, capsys)
    assert code == 1 and out.splitlines()[-1].startswith("torchport check --to mlu:")
    assert {r for _, r in findings(out)} == {"TP501"}
    code, out, _ = run(["check", "src", "--to", "npu", "--ignore", "TP5"], proj, capsys)
    assert "--to npu" in out and {r for _, r in findings(out)} == {"TP001"}, "the command line wins"
    write_config(proj, 'target = "npu"\nselect = ["TP0"]\n')
    code, out, _ = run(["convert", "src", "--diff"], proj, capsys)
    assert "+import torch_npu" in out and ".npu()" not in out
    code, out, _ = run(["check", "src", "--no-config", "--to", "npu"], proj, capsys)
    assert {r for _, r in findings(out)} == {"TP001", "TP501"}


def test_config_is_found_walking_up_from_the_input(proj, capsys):
    write_config(proj, 'target = "npu"\nignore = ["TP501"]\n')
    deep = proj / "src"
    code, out, _ = run(["check", "train.py"], deep, capsys)
    assert code == 1 and {r for _, r in findings(out)} == {"TP001"}


def test_config_exclude_and_per_file_ignores(proj, capsys):
    (proj / "src" / "gen").mkdir()
    (proj / "src" / "gen" / "model_pb2.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    (proj / "tests").mkdir()
    (proj / "tests" / "test_x.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    write_config(proj, '''\
        target = "npu"
        exclude = ["*_pb2.py"]
        [tool.torchport.per-file-ignores]
        "tests/*" = ["TP5"]
        "train.py" = ["TP001"]
        ''')
    code, out, _ = run(["check", "."], proj, capsys)
    files = {(m["file"], m["rule"]) for m in map(LINE.match, out.splitlines()) if m}
    assert files == {("src/train.py", "TP501"), ("tests/test_x.py", "TP001")}, files
    # the globs are relative to the pyproject.toml's folder, wherever check runs from
    code, out, _ = run(["check", "test_x.py"], proj / "tests", capsys)
    assert {r for _, r in findings(out)} == {"TP001"}
    code, out, _ = run(["convert", ".", "--to", "npu", "-o", str(proj.parent / "conv")], proj, capsys)
    assert code == 0
    assert (proj.parent / "conv" / "tests" / "test_x.py").read_text().endswith("x = torch.ones(1).cuda()\n")
    assert (proj.parent / "conv" / "src" / "gen" / "model_pb2.py").read_text().endswith(".cuda()\n"), "excluded"
    assert "import torch_npu" not in (proj.parent / "conv" / "src" / "train.py").read_text()


def test_config_baseline(proj, capsys):
    write_config(proj, 'target = "npu"\nbaseline = "tp-baseline.json"\n')
    code, out, _ = run(["check", "src", "--write-baseline", "tp-baseline.json"], proj, capsys)
    assert code == 0
    code, out, _ = run(["check", "src"], proj, capsys)
    assert code == 0 and findings(out) == [] and "suppressed by the baseline" in out
    (proj / "tp-baseline.json").unlink()
    code, _, err = run(["check", "src"], proj, capsys)
    assert code == 2 and "baseline not found" in err


@pytest.mark.parametrize("body, message", [
    ('selct = ["TP2"]\n', "[tool.torchport] unknown key 'selct' (did you mean select?)"),
    ('target = 3\n', "[tool.torchport] target: must be a string"),
    ('target = "ascnd"\n', "[tool.torchport] target: unknown target 'ascnd' (did you mean npu?)"),
    ('ignore = ["TP2X"]\n', "[tool.torchport] ignore: unknown code 'TP2X' (did you mean TP2?)"),
    ('select = "TP2, 7"\n', "[tool.torchport] select: unknown code '7'"),
    ('exclude = [1]\n', "[tool.torchport] exclude: must be a list of strings"),
    ('per-file-ignores = ["x"]\n', "[tool.torchport] per-file-ignores: must be a table"),
    ('baseline = ""\n', "[tool.torchport] baseline: must be a file path"),
    ('target = \n', "not valid TOML"),
])
def test_bad_config_value_is_one_line_naming_file_and_key(proj, capsys, body, message):
    write_config(proj, body)
    for command in (["check", "src"], ["convert", "src", "--dry-run"]):
        code, out, err = run(command, proj, capsys)
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert str(proj / "pyproject.toml") in err and message in err, err


def test_no_target_anywhere_is_the_usual_usage_error(proj, capsys):
    code, _, err = run(["check", "src"], proj, capsys)
    assert code == 2 and "the following arguments are required: -t/--to" in err


# ------------------------------------------------------------------ rules CODE
@pytest.mark.subprocess
def test_rule_lookup_prints_the_whole_documentation():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    for code in ("TP206", "TP501", "TP112"):
        p = subprocess.run([sys.executable, "-m", "torchport", "rules", code.lower()], capture_output=True,
                           text=True, env=env)
        entry = CODES[code]
        assert p.returncode == 0 and p.stdout.startswith(f"{code} {entry.name}"), p.stderr
        assert entry.what in p.stdout and (not entry.why or entry.why.strip() in p.stdout)
        assert f"# torchport: ignore[{code}]" in p.stdout
        if entry.example:
            assert "Before:" in p.stdout and "After (npu):" in p.stdout and "After (cpu):" in p.stdout


def test_rule_summaries_end_at_a_sentence_end(capsys):
    assert main(["rules"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(CODES)
    for line, entry in zip(out, sorted(CODES.values(), key=lambda c: c.id)):
        assert line.startswith(entry.id) and line.endswith(entry.summary), line
        assert entry.summary.endswith(".") and entry.what.startswith(entry.summary), entry.id
    docs = (ROOT / "docs" / "rules.md").read_text()
    for entry in CODES.values():
        assert f"| {entry.summary.replace('|', '/')} |" in docs, f"{entry.id}: docs/rules.md is stale"


# ------------------------------------------------------------------ --write-baseline
def test_write_baseline_says_written_and_exits_0(proj, capsys):
    code, out, err = run(["check", "src", "--to", "npu", "--write-baseline", "base.json"], proj, capsys)
    recorded = json.loads((proj / "base.json").read_text())["findings"]
    assert code == 0 and recorded
    last = out.splitlines()[-1]
    assert last.endswith(f"-> baseline written ({len(recorded)} findings)") and "FAILED" not in out, out
    (proj / "src" / "bad.py").write_text("import torch\ndef f(:\n    torch.cuda.synchronize()\n")
    code, out, _ = run(["check", "src", "--to", "npu", "--write-baseline", "base.json"], proj, capsys)
    assert code == 1 and "baseline written" in out and "FAILED: 1 error " in out


@pytest.mark.parametrize("comment", ["ignore[TP501", "ignore[", "ignore[[[["])
def test_an_unclosed_suppression_list_suppresses_nothing_and_says_so(tmp_path, capsys, comment):
    """issue 31 item 11: an unclosed `[` used to suppress every code on the line."""
    (tmp_path / "a.py").write_text(f"import torch\nx = torch.ones(2).cuda()  # torchport: {comment}\n")
    code, out, _ = run(["check", "a.py", "--to", "npu"], tmp_path, capsys)
    assert code == 1 and "TP501" in out and "never closed" in out, out


@pytest.mark.parametrize("comment, said", [("ignore(TP501)", "written another way"),
                                            ("ignore-next-line", "written another way"),
                                            ("ignore[]", "empty")])
def test_another_spelling_of_ignore_suppresses_nothing_and_says_so(tmp_path, capsys, comment, said):
    """A hostile re-trial: `ignore(TP201)` and `ignore-next-line` were read as a bare `ignore` (every code on the
    line suppressed, no note); `ignore[]` suppressed nothing and said nothing."""
    (tmp_path / "a.py").write_text(f"import torch\nx = torch.ones(2).cuda()  # torchport: {comment}\n")
    code, out, _ = run(["check", "a.py", "--to", "npu"], tmp_path, capsys)
    assert code == 1 and "TP501" in out and said in out, out


def test_a_suppressed_change_takes_the_import_it_needed_with_it(tmp_path, capsys):
    """issue 31 item 11: the file's only CUDA use suppressed, check still failed on "add import torch_npu"."""
    (tmp_path / "a.py").write_text("import torch\nx = torch.ones(2).cuda()  # torchport: ignore\n")
    code, out, _ = run(["check", "a.py", "--to", "npu"], tmp_path, capsys)
    assert code == 0 and "TP001" not in out and "1 suppressed" in out, out


def test_a_configuration_that_excludes_everything_is_no_pass(tmp_path, capsys):
    """issue 31 item 12: `exclude = ["**"]` made check say "0 files ... ok"."""
    (tmp_path / "a.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    (tmp_path / "pyproject.toml").write_text('[tool.torchport]\nexclude = ["**"]\n')
    code, _, err = run(["check", ".", "--to", "npu"], tmp_path, capsys)
    assert code == 2 and "excluded" in err and err.count("\n") == 1, err


def test_thousands_of_globs_are_matched_as_few(tmp_path, capsys):
    """issue 31 item 8: 4,000 per-file-ignores took 99 s on 602 files and 20,000 excludes were killed at 120 s,
    as every glob was tried for every finding; they are compiled once and worked out once per file."""
    for i in range(40):
        (tmp_path / f"m{i}.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    ignores = "\n".join(f'"gen{i}/*" = ["TP5"]' for i in range(4000))
    excludes = ", ".join(f'"skip{i}_*.py"' for i in range(20000))
    (tmp_path / "pyproject.toml").write_text(f'[tool.torchport]\nexclude = [{excludes}, "m3*.py"]\n'
                                             f'[tool.torchport.per-file-ignores]\n{ignores}\n"m1.py" = ["TP5"]\n')
    code, out, _ = run(["check", ".", "--to", "npu"], tmp_path, capsys)
    files = {ln.split(":", 1)[0] for ln in out.splitlines() if ln.startswith("m")}
    assert code == 1 and "30 files" in out, out   # 29 Python files (m3.py, m30-m39.py excluded) and pyproject.toml
    assert "m3.py" not in files and "m35.py" not in files and "m2.py" in files
    assert "m1.py:2:19: TP501" not in out and "m2.py:2:19: TP501" in out and "1 suppressed" in out, out


def test_convert_and_migrate_fail_when_everything_is_excluded(tmp_path, capsys):
    """issue 31 item 12, the other commands: convert said "3 files (3 excluded)" and exit 0 without a word, and
    migrate did not read [tool.torchport] at all (it converted what the project excludes)."""
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "a.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    (proj / "pyproject.toml").write_text('[tool.torchport]\nexclude = ["**"]\n')
    for command in ("convert", "migrate"):
        code, _, err = run([command, "p", "--to", "cpu", "-o", f"o-{command}"], tmp_path, capsys)
        assert code == 2 and "every file of p (2) is excluded" in err and err.count("\n") == 1, err
        assert not (tmp_path / f"o-{command}").exists(), "nothing written"


def test_migrate_reads_the_projects_settings_as_convert_does(tmp_path, capsys):
    proj = tmp_path / "p"
    (proj / "vendored").mkdir(parents=True)
    cuda = "import torch\nx = torch.ones(2).cuda()\ny = torch.zeros(2, device='cuda')\n"
    for rel in ("a.py", "b.py", "vendored/c.py"):
        (proj / rel).write_text(cuda)
    (proj / "pyproject.toml").write_text('[tool.torchport]\nexclude = ["vendored/*"]\n'
                                         '[tool.torchport.per-file-ignores]\n"b.py" = ["TP501"]\n')
    code, out, err = run(["migrate", "p", "--to", "cpu", "-o", "o", "-q"], tmp_path, capsys)
    assert code == 0, out + err
    assert (tmp_path / "o" / "vendored" / "c.py").read_text() == cuda, "an excluded file was converted"
    assert ".cuda()" not in (tmp_path / "o" / "a.py").read_text()
    b = (tmp_path / "o" / "b.py").read_text()
    assert ".cuda()" in b and "device='cuda'" not in b, "b.py: only TP501 is left as written"
    code, out, err = run(["migrate", "p", "--to", "cpu", "-o", "o2", "-q", "--no-config"], tmp_path, capsys)
    assert ".cuda()" not in (tmp_path / "o2" / "vendored" / "c.py").read_text()
