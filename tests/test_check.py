"""`torchport check`: exit codes, the same findings as analyze, text/JSON/SARIF output (validated against
the official SARIF 2.1.0 schema), SARIF fixes that reproduce convert, baselines, and the pre-commit hook."""
import copy
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import jsonschema
import pytest
from conftest import ROOT, tree_digest

import torchport
from torchport.api import (
    analyze,
    check,  # the keyword form: torchport.commands.check.CheckRequest.of
)
from torchport.backends import available_targets
from torchport.core.codes import CODES
from torchport.core.textfile import decode
from torchport.report.sarif import to_sarif

DATA = Path(__file__).resolve().parent / "data"
EXAMPLE = ROOT / "examples" / "cuda_project"
GOLDEN = Path(__file__).resolve().parent / "golden" / "cases"
ANALYZE_FIXTURE = Path(__file__).resolve().parent / "fixtures" / "analyze_project" / "proj"

CUDA = "import torch\n\n\ndef main():\n    x = torch.ones(2).cuda()\n    return x\n"
CLEAN = "import os\n\n\ndef main():\n    return os.getcwd()\n"
ADVICE_ONLY = "import torch\n\ntorch.backends.cudnn.benchmark = True\n"
LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<rule>TP\d{3}) (?P<action>\w+): .+$")


def run_cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.run([sys.executable, "-m", "torchport", *args], capture_output=True, text=True, cwd=cwd, env=env)
    return p.returncode, p.stdout, p.stderr


def finding_lines(out: str) -> list:
    return [m.groupdict() for m in map(LINE.match, out.splitlines()) if m]


@pytest.fixture
def files(tmp_path):
    for name, text in (("cuda.py", CUDA), ("clean.py", CLEAN), ("advice.py", ADVICE_ONLY)):
        (tmp_path / name).write_text(text)
    return tmp_path


# ------------------------------------------------------------------ exit codes
@pytest.mark.subprocess
def test_exit_codes(files):
    code, out, err = run_cli("check", "clean.py", "--to", "npu", cwd=files)
    assert code == 0, err
    assert out.splitlines()[-1].endswith("-> ok") and not finding_lines(out)

    code, out, _ = run_cli("check", "cuda.py", "--to", "npu", cwd=files)
    assert code == 1
    rows = finding_lines(out)
    assert {(r["file"], r["rule"], r["action"]) for r in rows} == {("cuda.py", "TP501", "modify"),
                                                                   ("cuda.py", "TP001", "insert")}
    cuda = next(r for r in rows if r["rule"] == "TP501")
    assert (cuda["line"], cuda["col"]) == ("5", str(CUDA.splitlines()[4].index("cuda(") + 1))  # 1-based, at the edit
    assert "2 problems" in out and out.splitlines()[-1].endswith("-> FAILED")

    code, out, _ = run_cli("check", "advice.py", "--to", "npu", cwd=files)
    assert code == 0, "advice alone does not fail"
    assert [(r["rule"], r["action"]) for r in finding_lines(out)] == [("TP110", "advice")]
    assert "0 problems" in out and "1 to review" in out


@pytest.mark.subprocess
def test_several_files_and_folders_as_arguments(files):
    sub = files / "pkg"
    sub.mkdir()
    (sub / "more.py").write_text(CUDA)
    code, out, _ = run_cli("check", "clean.py", "advice.py", "--to", "npu", cwd=files)
    assert code == 0 and "2 files" in out
    code, out, _ = run_cli("check", "clean.py", "advice.py", "cuda.py", "pkg", "pkg/more.py", "--to", "npu", cwd=files)
    assert code == 1 and "4 files" in out, "pkg/more.py is given twice and checked once"
    assert {r["file"] for r in finding_lines(out)} == {"advice.py", "cuda.py", "pkg/more.py"}
    code, out, _ = run_cli("check", str(files / "cuda.py"), "--to", "xpu", cwd=sub)
    assert code == 1 and finding_lines(out)[0]["file"] == "cuda.py", "outside the cwd: relative to the inputs"


@pytest.mark.subprocess
def test_syntax_errors_fail_and_shell_scripts_are_checked(files):
    (files / "bad.py").write_text("import torch\ndef f(:\n    torch.cuda.synchronize()\n")
    (files / "run.sh").write_text("#!/bin/sh\nexport CUDA_VISIBLE_DEVICES=0\npython cuda.py\n")
    (files / "notes.txt").write_text("torch.cuda.synchronize() CUDA_VISIBLE_DEVICES\n")
    code, out, _ = run_cli("check", "bad.py", "--to", "npu", cwd=files)
    assert code == 1
    assert [(r["file"], r["line"], r["rule"], r["action"]) for r in finding_lines(out)] == [("bad.py", "2", "TP000", "error")]
    assert "1 error)" in out
    code, out, _ = run_cli("check", "run.sh", "notes.txt", "--to", "npu", cwd=files)
    assert code == 1 and "1 file," in out, "shell scripts are checked (convert rewrites them), text files are not"
    assert [(r["file"], r["rule"]) for r in finding_lines(out)] == [("run.sh", "TP801")]


@pytest.mark.subprocess
@pytest.mark.parametrize("args,message", [
    (["check", "{missing}", "--to", "npu"], "input not found"),
    (["check", "{dir}", "--to", "tpu"], "unknown target 'tpu'"),
    (["check", "{dir}", "--to", "npu", "--baseline", "{missing}"], "baseline not found"),
    (["check", "{dir}", "--to", "npu", "--baseline", "{notjson}"], "malformed baseline"),
    (["check", "{dir}", "--to", "npu", "--baseline", "{other}"], "malformed baseline"),
    (["check", "{dir}", "--to", "npu", "--baseline", "{nofp}"], "without a fingerprint"),
    (["check", "{dir}", "--to", "npu", "--root", "{dir}/pkg"], "not inside --root"),
])
def test_bad_input_gives_one_line_and_exit_2(files, tmp_path_factory, args, message):
    elsewhere = tmp_path_factory.mktemp("b")
    (elsewhere / "notjson.json").write_text("{")
    (elsewhere / "other.json").write_text(json.dumps({"schema_version": 1, "findings": []}))
    (elsewhere / "nofp.json").write_text(json.dumps({"tool": "torchport check", "baseline_version": 1,
                                                     "findings": [{"file": "a.py"}]}))
    (files / "pkg").mkdir()
    fill = {"missing": str(elsewhere / "nope"), "dir": str(files), "notjson": str(elsewhere / "notjson.json"),
            "other": str(elsewhere / "other.json"), "nofp": str(elsewhere / "nofp.json")}
    code, out, err = run_cli(*[a.format(**fill) for a in args])
    assert code == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err and out == ""


@pytest.mark.subprocess
def test_read_only_and_no_torch(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(EXAMPLE, proj)
    before, around = tree_digest(proj), sorted(p.name for p in tmp_path.iterdir())
    code = ("import sys; from torchport.cli import main; rc = main(['check', sys.argv[1], '--to', 'npu', "
            "'--format', 'sarif']); "
            "bad = [m for m in sys.modules if m == 'torch' or m.startswith(('torch.', 'torch_'))]; "
            "assert not bad, bad; sys.exit(rc)")
    p = subprocess.run([sys.executable, "-c", code, str(proj)], capture_output=True, text=True, cwd=tmp_path,
                       env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    assert p.returncode == 1, p.stderr
    assert json.loads(p.stdout)["version"] == "2.1.0"
    assert tree_digest(proj) == before and sorted(p.name for p in tmp_path.iterdir()) == around


# ------------------------------------------------------------------ one source of truth
@pytest.mark.parametrize("source", [EXAMPLE, ANALYZE_FIXTURE], ids=["example", "analyze_fixture"])
def test_same_findings_as_analyze(source):
    analysis = analyze(source, write_reports=False)
    for target in available_targets():
        expected = analysis.target_findings(target)
        result = check([source], target, root=str(source))
        assert len(result.findings) == len(expected) > 0, target
        assert sorted(f.to_dict().items() for f in result.findings) == sorted(f.to_dict().items() for f in expected)
        counts = Counter(f.action for f in expected)
        # what does not fail on a normal path is to review, as migrate lists it: unknown names, kept questions,
        # names on a path that does not run on the target
        review = [f for f in result.findings if f.action == "unsupported" and (
            f.rule in ("TP117", "TP210") or "a CUDA-only package imported above" in f.message
            or "guarded by a CUDA question convert kept" in f.message)]
        assert len(result.problems) == sum(counts[a] for a in ("insert", "modify", "delete", "unsupported")) - len(review)
        assert len(result.notes) == counts["advice"] + len(review)
        assert result.exit_code == 1


@pytest.mark.subprocess
def test_cli_counts_match_analyze_on_the_example():
    analysis = analyze(EXAMPLE, "npu", write_reports=False)
    code, out, _ = run_cli("check", str(EXAMPLE), "--to", "npu", "--format", "json")
    data = json.loads(out)
    assert code == data["exit_code"] == 1
    assert len(data["findings"]) == len(analysis.target_findings("npu"))
    code, out, _ = run_cli("check", "examples/cuda_project", "--to", "npu", cwd=ROOT)
    assert len(finding_lines(out)) == len(analysis.target_findings("npu"))
    assert {r["file"] for r in finding_lines(out)} == {"examples/cuda_project/" + n for n in
                                                       ("train.py", "model.py", "launch.sh")}


# ------------------------------------------------------------------ formats
@pytest.mark.subprocess
def test_json_report_is_versioned_with_stable_keys(files):
    out_file = files.parent / "report.json"
    code, out, _ = run_cli("check", ".", "--to", "npu", "--format", "json", "-o", str(out_file), cwd=files)
    assert code == 1
    assert out.strip().startswith("torchport check --to npu:") and out.count("\n") == 1, "summary only on stdout"
    data = json.loads(out_file.read_text())
    assert list(data) == ["schema_version", "tool", "command", "target", "root", "inputs", "baseline", "exit_code",
                          "summary", "findings"]
    assert data["schema_version"] == 1 and data["command"] == "check" and data["exit_code"] == 1
    assert set(data["summary"]) == {"files", "problems", "changes", "unsupported", "errors", "notes", "to_review",
                                    "suppressed", "ignored", "elapsed_seconds"}
    assert (data["summary"]["problems"], data["summary"]["notes"]) == (2, 1)
    for f in data["findings"]:
        assert list(f) == ["file", "line", "end_line", "rule", "category", "action", "old", "new", "message", "col",
                           "level", "fingerprint"]
        assert f["level"] == ("note" if f["action"] == "advice" else "problem")


def _schema():
    schema_bytes = (DATA / "sarif-schema-2.1.0.json").read_bytes()
    provenance = json.loads((DATA / "sarif-schema-2.1.0.provenance.json").read_text())
    assert hashlib.sha256(schema_bytes).hexdigest() == provenance["sha256"]
    schema = json.loads(schema_bytes)
    assert schema["id"] == "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    assert schema["properties"]["version"]["enum"] == ["2.1.0"]
    jsonschema.Draft4Validator.check_schema(schema)
    return schema


@pytest.mark.subprocess
def test_sarif_validates_against_the_official_schema(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(ANALYZE_FIXTURE, proj)
    (proj / "bad.py").write_text("import torch\ndef f(:\n    torch.cuda.synchronize()\n")
    (proj / "ünï côde.py").write_text("import torch\n\nx = 'é' + str(torch.ones(1).cuda())\n")
    out = tmp_path / "torchport.sarif"
    code, stdout, _ = run_cli("check", "proj", "--to", "npu", "--format", "sarif", "-o", str(out), cwd=tmp_path)
    assert code == 1 and "FAILED" in stdout
    log = json.loads(out.read_text())
    validator = jsonschema.Draft4Validator(_schema())
    errors = sorted(validator.iter_errors(log), key=str)
    assert not errors, errors[:3]
    broken = copy.deepcopy(log)  # the validator does reject what breaks the schema
    broken["runs"][0]["results"][0]["level"] = "fatal"
    del broken["runs"][0]["tool"]["driver"]["name"]
    assert len(list(validator.iter_errors(broken))) == 2

    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "torchport" and driver["version"] == torchport.__version__
    assert "informationUri" not in driver, "no public home page yet: none is invented"
    registry = CODES
    results = run["results"]
    assert {r["ruleId"] for r in results} == {d["id"] for d in driver["rules"]}
    for d in driver["rules"]:
        assert d["name"] == registry[d["id"]].name and d["shortDescription"]["text"] == registry[d["id"]].summary
        assert d["help"]["text"] and d["defaultConfiguration"]["level"] in ("error", "note")
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"
    assert run["columnKind"] == "unicodeCodePoints"

    by_action = Counter(r["properties"]["action"] for r in results)
    assert by_action["error"] == 1 and by_action["unsupported"] >= 1 and by_action["advice"] >= 1
    prints = [r["partialFingerprints"]["torchport/v1"] for r in results]
    assert len(set(prints)) == len(prints)
    for r in results:
        assert driver["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
        reviewed = r["properties"]["action"] == "unsupported" and r["ruleId"] in ("TP117", "TP210")
        assert r["level"] == ("note" if r["properties"]["action"] == "advice" or reviewed else "error")
        loc = r["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        uri = loc["artifactLocation"]["uri"]
        assert uri.startswith("proj/") and not uri.startswith("/")
        region = loc["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1 and region["endLine"] >= region["startLine"]
        if r["properties"]["old"] and r["properties"]["action"] != "error":
            from urllib.parse import unquote

            line = decode((tmp_path / unquote(uri)).read_bytes()).text.splitlines()[region["startLine"] - 1]
            old, col = r["properties"]["old"].split(" ...")[0], region["startColumn"] - 1
            # the column is where convert's edit starts, inside the code the finding shows
            assert any(line.startswith(old, k) for k in range(max(0, col - len(old) + 1), col + 1)), (line, old, col)
    assert any("%20" in r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results)


_NL = re.compile(r"\r\n|\r|\n")


def apply_fixes(text: str, replacements: list) -> str:
    """Apply SARIF replacements (line/column regions into the original text, columns in code points)."""
    starts = [0] + [m.end() for m in _NL.finditer(text)]

    def offset(line, col):
        return starts[line - 1] + col - 1

    spans = sorted(((offset(r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"]),
                     offset(r["deletedRegion"]["endLine"], r["deletedRegion"]["endColumn"]),
                     r["insertedContent"]["text"]) for r in replacements), reverse=True)
    for (a, b, _), (c, _d, _t) in zip(spans[1:], spans):
        assert b < c or (a == b < c), "regions neither overlap nor touch"
    for a, b, new in spans:
        text = text[:a] + new + text[b:]
    return text


@pytest.mark.parametrize("target", ["npu", "accelerator", "mps"])
def test_sarif_fixes_reproduce_convert(tmp_path, target):
    """Applying every fix of the log gives exactly what convert writes (CRLF, GBK, tabs, multi-line cases)."""
    result = check([GOLDEN], target, root=str(GOLDEN), keep_edits=True)
    log = to_sarif(result)
    per_file: dict = {}
    with_fix = 0
    for r in log["runs"][0]["results"]:
        for fix in r.get("fixes", []):
            with_fix += 1
            for change in fix["artifactChanges"]:
                per_file.setdefault(change["artifactLocation"]["uri"], []).extend(change["replacements"])
    assert with_fix > 20
    torchport.convert(GOLDEN, target, tmp_path / "out", write_reports=False)
    checked = 0
    for path in sorted((tmp_path / "out").rglob("*")):
        rel = path.relative_to(tmp_path / "out").as_posix()
        if not rel.endswith((".py", ".sh")) or rel == "syntax_error.py":
            continue
        original = decode((GOLDEN / rel).read_bytes()).text
        assert apply_fixes(original, per_file.get(rel, [])) == decode(path.read_bytes()).text, rel
        checked += 1
    assert checked >= 20 and set(per_file) <= {p.relative_to(GOLDEN).as_posix() for p in GOLDEN.iterdir()}


@pytest.mark.subprocess
def test_parallel_and_serial_runs_agree():
    """Worker processes send findings and convert's edits back; the log is the same as a serial run's."""
    from torchport.core import parallel

    old = parallel.PARALLEL_MIN_BYTES
    parallel.PARALLEL_MIN_BYTES = 1
    try:
        a = to_sarif(check([GOLDEN], "npu", root=str(GOLDEN), jobs=2, keep_edits=True))
    finally:
        parallel.PARALLEL_MIN_BYTES = old
    b = to_sarif(check([GOLDEN], "npu", root=str(GOLDEN), jobs=1, keep_edits=True))
    for log in (a, b):
        del log["runs"][0]["properties"]["summary"]["elapsed_seconds"]
    assert a == b and sum("fixes" in r for r in a["runs"][0]["results"]) > 20


# ------------------------------------------------------------------ baselines
@pytest.mark.subprocess
def test_baseline_suppresses_known_findings_and_survives_moves(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(EXAMPLE, proj)
    base = tmp_path / "baseline.json"
    code, out, err = run_cli("check", "proj", "--to", "npu", "--write-baseline", str(base), cwd=tmp_path)
    assert code == 0, "writing a baseline accepts the current findings"
    total = len(finding_lines(out))
    data = json.loads(base.read_text())
    assert data["tool"] == "torchport check" and data["target"] == "npu" and len(data["findings"]) == total > 20
    assert f"{total} findings recorded" in err

    code, out, _ = run_cli("check", "proj", "--to", "npu", "--baseline", str(base), cwd=tmp_path)
    assert code == 0 and not finding_lines(out)
    assert f"{total} suppressed by the baseline" in out

    train = proj / "train.py"
    original = train.read_text()
    lines = original.splitlines(True)
    at = next(i for i, line in enumerate(lines) if line.startswith("def "))
    train.write_text("".join(lines[:at]) + "\n\n\n# moved down\n\n" + "".join(lines[at:]))
    code, out, _ = run_cli("check", "proj", "--to", "npu", "--baseline", str(base), cwd=tmp_path)
    assert code == 0 and f"{total} suppressed" in out, "blank lines above the findings change no fingerprint"

    train.write_text(train.read_text() + "\n\ndef extra():\n    torch.cuda.empty_cache()\n")
    code, out, _ = run_cli("check", "proj", "--to", "npu", "--baseline", str(base), cwd=tmp_path)
    assert code == 1
    rows = finding_lines(out)
    assert [(r["file"], r["rule"]) for r in rows] == [("proj/train.py", "TP105")] and "empty_cache" in out
    assert f"{total} suppressed" in out

    sarif = tmp_path / "o.sarif"
    code, _, _ = run_cli("check", "proj", "--to", "npu", "--baseline", str(base), "--format", "sarif", "-o", str(sarif),
                         cwd=tmp_path)
    run = json.loads(sarif.read_text())["runs"][0]
    assert code == 1 and [r["ruleId"] for r in run["results"]] == ["TP105"]
    assert run["results"][0]["baselineState"] == "new" and run["properties"]["suppressed"] == total

    code, _, err = run_cli("check", "proj", "--to", "mlu", "--baseline", str(base), cwd=tmp_path)
    assert code == 2 and "written for --to npu" in err


@pytest.mark.subprocess
def test_baseline_counts_occurrences(files):
    base = files / "b.json"
    assert run_cli("check", "cuda.py", "--to", "npu", "--write-baseline", str(base), cwd=files)[0] == 0
    cuda = files / "cuda.py"
    cuda.write_text(CUDA.replace("    return x\n", "    y = torch.ones(2).cuda()\n    return x, y\n"))
    code, out, _ = run_cli("check", "cuda.py", "--to", "npu", "--baseline", str(base), cwd=files)
    assert code == 1, "a second identical call is a new finding"
    assert [(r["rule"], r["line"]) for r in finding_lines(out)] == [("TP501", "6")] and "2 suppressed" in out
    (files / "bad.py").write_text("import torch\ndef f(:\n    torch.cuda.synchronize()\n")
    code, _, _ = run_cli("check", "bad.py", "--to", "npu", "--write-baseline", str(files / "c.json"), cwd=files)
    assert code == 1 and json.loads((files / "c.json").read_text())["findings"] == [], "errors are never baselined"


@pytest.mark.subprocess
def test_exclude(files):
    (files / "vendor").mkdir()
    (files / "vendor" / "x.py").write_text(CUDA)
    code, out, _ = run_cli("check", ".", "--to", "npu", "-e", "vendor", "-e", "cuda.py", cwd=files)
    assert code == 0 and "2 files" in out


# ------------------------------------------------------------------ pre-commit
def test_pre_commit_hook_definition():
    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "torchport-check")
    assert (hook["entry"], hook["language"], hook["types"]) == ("torchport check", "python", ["python"])


def _git(*args, cwd):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.subprocess
@pytest.mark.skipif(sys.version_info < (3, 11), reason="offline install needs no tomli wheel only on 3.11+")
def test_pre_commit_runs_the_hook_offline(tmp_path):
    """The real `pre-commit run` with this repository's .pre-commit-hooks.yaml: pre-commit builds its own
    virtualenv and pip-installs torchport into it, with no index (setuptools from virtualenv's bundled wheels)."""
    from virtualenv.seed.wheels.embed import BUNDLE_FOLDER

    hook_repo = tmp_path / "torchport_repo"
    hook_repo.mkdir()
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy2(ROOT / name, hook_repo / name)
    shutil.copytree(ROOT / "src", hook_repo / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    _git("init", "-q", cwd=hook_repo)
    _git("add", "-A", cwd=hook_repo)
    _git("commit", "-q", "-m", "hook", cwd=hook_repo)
    rev = _git("rev-parse", "HEAD", cwd=hook_repo)

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    setuptools = sorted(Path(BUNDLE_FOLDER).glob("setuptools-*.whl"))
    assert setuptools, BUNDLE_FOLDER
    shutil.copy2(setuptools[-1], wheels)

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(CUDA)
    (proj / "notes.txt").write_text("torch.cuda.synchronize()\n")
    (proj / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hook_repo}\n  rev: {rev}\n  hooks:\n  - id: torchport-check\n    args: [--to, npu]\n")
    _git("init", "-q", cwd=proj)
    _git("add", "-A", cwd=proj)
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "cache"), PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels),
               PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1",
               VIRTUALENV_OVERRIDE_APP_DATA=str(tmp_path / "appdata"), VIRTUALENV_NO_PERIODIC_UPDATE="1",
               GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    env.pop("PYTHONPATH", None)

    def pre_commit():
        return subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"],
                              cwd=proj, env=env, capture_output=True, text=True, timeout=600)

    p = pre_commit()
    assert p.returncode == 1, p.stdout + p.stderr
    assert "torchport check" in p.stdout and "Failed" in p.stdout
    assert "train.py:5:" in p.stdout and "TP501 modify" in p.stdout and "notes.txt" not in p.stdout
    installed = list((tmp_path / "cache").glob("repo*/py_env-*/bin/torchport"))
    assert installed, "pre-commit installed torchport into its own environment"

    (proj / "train.py").write_text("import torch\nimport torch_npu  # noqa: F401\n\n\ndef main():\n"
                                   "    return torch.ones(2).npu()\n")
    _git("add", "-A", cwd=proj)
    p = pre_commit()
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Passed" in p.stdout


@pytest.mark.parametrize("target", ["npu", "cpu", "accelerator"])
def test_analyze_convert_and_check_count_the_same(tmp_path, target):
    """One count, one vocabulary: the changes, unsupported APIs and items to review of analyze (per target),
    convert and check are the same findings, on a project with a touchpoint of every category."""
    from collections import Counter

    from torchport.api import analyze

    proj = Path(__file__).resolve().parent / "fixtures" / "analyze_project" / "proj"

    def counts(findings):
        n = Counter(f.action for f in findings)
        return (sum(n[a] for a in ("insert", "modify", "delete")), n["unsupported"], n["advice"], n["error"])

    def keys(findings):
        return sorted((f.file.split("/")[-1], f.line, f.rule, f.action) for f in findings)

    converted = torchport.convert(proj, target, tmp_path / "out", write_reports=False)
    analyzed = analyze(proj, target, write_reports=False).target_findings(target)
    checked = check([proj], target).findings
    assert counts(converted.findings)[:3] == counts(analyzed)[:3] == counts(checked)[:3]
    assert keys(f for f in converted.findings if f.action != "error") == keys(analyzed) == keys(checked)
    assert counts(converted.findings)[0] >= 3 and counts(converted.findings)[2] > 0, "the fixture proves something"
