"""Reports and a command line people read: every note in report.md, Markdown escaped only where it must be, counts
in the right number, wide HTML pages that wrap, help for every command and option, the hint for options given after
the program, a single file printed rather than written beside it, and what `--force` replaces."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, tree_digest

import torchport
from torchport.cli import build_parser, main
from torchport.core.names import md_cell
from torchport.core.words import counted

AMP = ("import torch\nx = torch.ones(2).cuda()\nwith torch.cuda.amp.autocast():\n    y = x * 2\n"
       "z = torch.cuda.get_device_properties(0)\n")


def run_cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.run([sys.executable, "-m", "torchport", *map(str, args)], capture_output=True, text=True,
                       cwd=cwd, env=env)
    return p.returncode, p.stdout, p.stderr


# ------------------------------------------------------------------ report.md
def test_report_md_keeps_every_change_note_that_json_carries(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "train.py").write_text(AMP)
    torchport.convert(src, "xpu", tmp_path / "out")
    md = (tmp_path / "out_report" / "report.md").read_text()
    data = json.loads((tmp_path / "out_report" / "report.json").read_text())
    notes = [f["message"] for f in data["findings"] if f["action"] in ("insert", "modify", "delete") and f["message"]]
    assert any("float16" in n for n in notes), "the autocast dtype note is a finding's message"
    for note in notes:
        assert md_cell(note) in md, note
    assert "torch.cuda.amp.autocast defaulted to float16" in md


def test_report_md_has_no_html_entities_or_escaped_backticks(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "train.py").write_text(AMP)
    (src / "fused.py").write_text("import apex\nm = apex.normalization.FusedLayerNorm(3)\n"
                                  "s = 'a | b -> c & d `e`'\nt = torch.ones(1).cuda()\n")
    torchport.convert(src, "xpu", tmp_path / "out")
    md = (tmp_path / "out_report" / "report.md").read_text()
    assert "->" in md, "the LayerNorm note's arrow, as written"
    for bad in ("&gt;", "&lt;", "&amp;", "&quot;", "\\`"):
        assert bad not in md, bad


def test_md_cell_escapes_only_what_markdown_needs():
    assert md_cell("a -> b & c < d") == "a -> b & c < d"
    assert md_cell("use `x|y` here") == "use `x\\|y` here", "| ends a cell even in a code span (GFM)"
    assert md_cell("a|b\nc`d") == "a\\|b<br>c`d"
    assert md_cell("<script>alert(1)</script>") == "\\<script>alert(1)\\</script>", "no raw HTML"
    assert md_cell("&lt; is an entity") == "\\&lt; is an entity", "shown as typed, not as <"
    assert md_cell("`<b>` stays code") == "`<b>` stays code", "no backslash inside a code span (it would show)"
    assert md_cell("C:\\dir\\*.py") == "C:\\dir\\\\*.py", "a backslash before punctuation is kept visible"
    assert md_cell("a\x1b[2Jb") == "a\\x1b[2Jb"


# ------------------------------------------------------------------ counts
def test_counted_plural_forms():
    assert [counted(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]
    assert counted(1, "entry", "entries") == "1 entry" and counted(3, "entry", "entries") == "3 entries"


@pytest.mark.subprocess
def test_convert_prints_one_file_not_one_files(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "a.py").write_text("import torch; x = torch.ones(1).cuda()")
    code, out, err = run_cli("convert", src, "--to", "npu", "-o", tmp_path / "o")
    assert code == 0, err
    assert "1 file (1 converted), 1 line of code inspected in" in out and "0 errors" in out and "2 changes" in out
    log = (tmp_path / "o_report" / "torchport.log").read_text()
    assert "done: 1 file, 2 changes," in log


# ------------------------------------------------------------------ help
def _parsers(parser, path):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                assert helps.get(name), f"{' '.join(path + [name])}: no help line in its parent's list"
                yield from _parsers(sub, path + [name])


def test_every_command_has_a_description_and_every_option_a_help():
    missing = []
    for path, parser in _parsers(build_parser(), ["torchport"]):
        if not parser.description:
            missing.append(f"{' '.join(path)}: no description")
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}: no help")
    assert not missing, "\n".join(missing)


def test_every_command_the_data_and_docs_name_exists():
    """`torchport CMD [SUB]` in the known errors, target files, codes, doctor's advice, the README and docs/ names
    a command of the parser (and, where CMD has subcommands, one of them): advice never sends users to a command
    that is not there (kb/error_shapes.toml named `torchport debug compare`)."""
    import re

    commands = {tuple(path[1:]) for path, _ in _parsers(build_parser(), ["torchport"])}
    mention = re.compile(r"`torchport ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?")
    src = ROOT / "src" / "torchport"
    files = [*src.glob("kb/*.toml"), *src.glob("backends/*.toml"), src / "core" / "codes.py",
             *src.glob("doctor/*.py"), ROOT / "README.md", *ROOT.glob("docs/*.md")]
    wrong = []
    for path in files:
        for m in mention.finditer(path.read_text(encoding="utf-8")):
            first, second = m.groups()
            named = (first, second) if second and any(c[:1] == (first,) and len(c) == 2 for c in commands) else (first,)
            if named not in commands:
                wrong.append(f"{path.relative_to(ROOT)}: `torchport {' '.join(named)}`")
    assert len(files) > 20 and not wrong, "\n".join(wrong)


# ------------------------------------------------------------------ options after the program
@pytest.mark.parametrize("argv", [["profile", "train.py", "-o", "out"], ["ops", "record", "train.py", "-o", "o.json"],
                                  ["debug", "dump", "train.py", "-o", "out"]])
def test_an_option_after_the_program_gets_a_one_line_hint(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "-o comes after the program" in err and "-- before the program" in err, err


def test_without_a_misplaced_option_the_usual_error_stays(capsys):
    assert main(["profile", "train.py"]) == 2
    err = capsys.readouterr().err
    assert "required: -o/--output" in err and "comes after" not in err


# ------------------------------------------------------------------ a single file
@pytest.mark.subprocess
def test_a_single_file_is_printed_and_nothing_is_written_beside_it(tmp_path):
    (tmp_path / "train.py").write_text(AMP)
    before = tree_digest(tmp_path)
    code, out, err = run_cli("convert", "train.py", "--to", "xpu", cwd=tmp_path)
    assert code == 0, err
    assert tree_digest(tmp_path) == before, "no train_xpu.py, no report folder"
    assert "x = torch.ones(2).xpu()" in out and 'torch.amp.autocast("xpu")' in out
    assert "torchport" not in out, "stdout holds the converted file only"
    assert "-> stdout" in err and "float16" in err, "the summary and the notes go to stderr"
    (tmp_path / "train_xpu.py").write_text(out)
    compile((tmp_path / "train_xpu.py").read_text(), "train_xpu.py", "exec")


@pytest.mark.subprocess
def test_a_single_file_with_json_writes_nothing_either(tmp_path):
    (tmp_path / "train.py").write_text(AMP)
    code, out, err = run_cli("convert", "train.py", "--to", "npu", "--json", cwd=tmp_path)
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "dry-run" and data["output"] is None and data["summary"]["changes"] >= 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


@pytest.mark.subprocess
def test_a_single_file_is_written_where_asked(tmp_path):
    (tmp_path / "train.py").write_text(AMP)
    code, out, err = run_cli("convert", "train.py", "--to", "npu", "-o", "out/t.py", cwd=tmp_path)
    assert code == 0, err
    assert "torch.ones(2).npu()" in (tmp_path / "out" / "t.py").read_text()
    assert (tmp_path / "out" / "t_report" / "report.md").is_file()
    code, out, err = run_cli("convert", "train.py", "--to", "npu", "--report-dir", "r", cwd=tmp_path)
    assert code == 0 and (tmp_path / "r" / "report.md").is_file() and "torch.ones(2).npu()" in out


@pytest.mark.subprocess
def test_a_single_file_with_distributed_asks_for_an_output(tmp_path):
    (tmp_path / "train.py").write_text(AMP)
    code, out, err = run_cli("convert", "train.py", "--to", "npu", "--distributed", cwd=tmp_path)
    assert code == 2 and err.count("\n") == 1 and out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


# ------------------------------------------------------------------ --force
def _tree(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


@pytest.mark.subprocess
def test_force_removes_what_it_wrote_before_and_nothing_else(tmp_path):
    src = tmp_path / "proj"
    (src / "sub").mkdir(parents=True)
    (src / "a.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    (src / "sub" / "b.py").write_text("import torch\ny = torch.ones(1).cuda()\n")
    (src / "c.txt").write_text("data\n")
    (src / "d.txt").write_text("data\n")
    out = tmp_path / "proj_npu"
    code, stdout, err = run_cli("convert", src, "--to", "npu")
    assert code == 0, err
    assert _tree(out) == ["a.py", "c.txt", "d.txt", "sub/b.py"]
    record = json.loads((tmp_path / "proj_npu_report" / "output_files.json").read_text())
    assert sorted(record["files"]) == _tree(out) and record["output"] == str(out)
    (src / "sub" / "b.py").unlink()
    (src / "c.txt").unlink()
    (src / "d.txt").unlink()
    (out / "mine.txt").write_text("mine\n")               # the user's own file
    (out / "d.txt").write_text("edited after the run\n")  # written by torchport, then changed by the user
    code, stdout, err = run_cli("convert", src, "--to", "npu", "--force")
    assert code == 0, err
    assert _tree(out) == ["a.py", "d.txt", "mine.txt"], "stale sub/b.py and c.txt removed, the user's files kept"
    assert not (out / "sub").exists(), "the folder they leave empty goes too"
    assert (out / "mine.txt").read_text() == "mine\n" and (out / "d.txt").read_text() == "edited after the run\n"
    line = next(x for x in stdout.splitlines() if "--force" in x)
    assert str(out) in line and "1 file rewritten" in line and "2 stale files it had written removed" in line
    assert "1 file changed since kept" in line and "1 file torchport did not write left as it is" in line
    assert sorted(json.loads((tmp_path / "proj_npu_report" / "output_files.json").read_text())["files"]) == ["a.py"]


@pytest.mark.subprocess
def test_force_without_a_record_removes_nothing(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "a.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    out = tmp_path / "o"
    out.mkdir()
    (out / "old.py").write_text("mine\n")
    code, stdout, err = run_cli("convert", src, "--to", "npu", "-o", out, "--force")
    assert code == 0, err
    assert _tree(out) == ["a.py", "old.py"]
    assert re.search(r"--force: .*no record of an earlier run there: nothing removed\); 1 file torchport did not "
                     r"write left as it is", stdout), stdout


def test_a_record_for_another_folder_is_not_used(tmp_path):
    from torchport.core import manifest

    out, reports = tmp_path / "out", tmp_path / "reports"
    out.mkdir()
    reports.mkdir()
    (out / "a.py").write_text("x\n")
    stamp = [os.lstat(out / "a.py").st_size, os.lstat(out / "a.py").st_mtime_ns]
    (reports / manifest.NAME).write_text(json.dumps({"format": 1, "output": str(tmp_path / "elsewhere"),
                                                     "files": {"a.py": stamp, "../x": stamp}}))
    settled = manifest.settle(out, reports, [], manifest.start())
    assert not settled.earlier and settled.removed == [] and (out / "a.py").exists()


# ------------------------------------------------------------------ wide HTML pages
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (CI installs it)")
def test_wide_report_pages_wrap_instead_of_scrolling(tmp_path):
    from playwright.sync_api import sync_playwright

    from torchport.api import analyze

    src = tmp_path / "proj"
    src.mkdir()
    long_name = "x" * 300
    (src / "train.py").write_text(f"import torch\n{long_name} = torch.ones(1).cuda()  # {'y' * 400}\n"
                                  f"torch.cuda.nvtx.range_push('{'z' * 300}')\n")
    (src / ("n" * 200 + ".py")).write_text("import torch\nx = torch.zeros(1).cuda()\n")
    torchport.convert(src, "npu", tmp_path / "o")
    analyze(src, "npu", output=tmp_path / "a")
    from torchport.api import migrate

    migrate(src, "npu", tmp_path / "m")
    widths, broken = {}, {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                                                    "--disable-dev-shm-usage"])
        try:
            page = browser.new_context(viewport={"width": 800, "height": 900}).new_page()
            for html in (tmp_path / "o_report" / "report.html", tmp_path / "a" / "report.html",
                         tmp_path / "m" / "torchport-report" / "migrate.html"):
                page.goto(html.resolve().as_uri())
                page.wait_for_load_state("load")
                page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
                widths[html.parent.name] = page.evaluate(
                    "[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
                # short ids and headers keep their line: wrapping anywhere once split "TP110" into "TP 11 0"
                broken[html.parent.name] = page.evaluate(
                    "[...document.querySelectorAll('table.list th, table.list td.num, .id')]"
                    ".filter(e => { const r = document.createRange(); r.selectNodeContents(e);"
                    " return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size > 1; })"
                    ".map(e => e.textContent)")
        finally:
            browser.close()
    assert all(w[0] <= w[1] for w in widths.values()), f"a page scrolls sideways: {widths}"
    assert not any(broken.values()), f"ids or headers wrapped: {broken}"


@pytest.mark.subprocess
def test_port_ext_force_removes_its_stale_files_too(tmp_path):
    src = tmp_path / "ext"
    src.mkdir()
    (src / "a.cu").write_text("__global__ void k(float* x) { x[0] = 1; }\nvoid f() { cudaMalloc(0, 0); }\n")
    (src / "b.cpp").write_text("#include <cuda_runtime.h>\nvoid g() { cudaFree(0); }\n")
    out = tmp_path / "ext_musa"
    assert run_cli("port-ext", src, "--to", "musa")[0] == 0
    assert _tree(out) == ["a.mu", "b.cpp"], "a.cu is written as a.mu"
    (src / "b.cpp").unlink()
    code, stdout, err = run_cli("port-ext", src, "--to", "musa", "--force")
    assert code == 0, err
    assert _tree(out) == ["a.mu"] and "1 stale file it had written removed" in stdout


def test_commands_end_with_the_next_step(tmp_path, capsys):
    """analyze, convert and a failing check each end with a `next:` line naming a command that exists."""
    from torchport.cli import main

    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n", encoding="utf-8")
    assert main(["analyze", str(project), "--to", "npu", "-o", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"next: torchport migrate {project} --to npu"
    assert main(["convert", str(project), "--to", "npu", "-o", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"next: torchport check {tmp_path / 'c'} --to npu"
    assert main(["check", str(project), "--to", "npu"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith(f"next: torchport convert {project} --to npu -o OUT  (makes the 2 changes")
    assert main(["check", str(tmp_path / "c"), "--to", "npu"]) == 0  # the converted copy passes: no next step
    assert "next:" not in capsys.readouterr().err


def test_python_api_single_file_writes_nothing_beside_it(tmp_path):
    """torchport.convert(FILE, target) without an output is what `torchport convert FILE` is: nothing appears next
    to the source; the converted text comes back in the result. With an output it writes there."""
    src = tmp_path / "train.py"
    src.write_text("import torch\nx = torch.ones(2).cuda()\n")
    result = torchport.convert(src, "npu")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]
    assert result.mode == "dry-run" and ".npu()" in result.files[0].new_text and "import torch_npu" in \
        result.files[0].new_text
    torchport.convert(src, "npu", tmp_path / "train_npu.py")
    assert ".npu()" in (tmp_path / "train_npu.py").read_text()


def test_port_ext_ends_with_the_next_step(tmp_path, capsys):
    """port-ext: build the ported copy (after the flagged sites), or rewrite the kernels an inventory lists; a
    C++ tree with nothing to port has no next step."""
    from torchport.cli import main

    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1; }\nvoid f() { cudaMalloc(0, 0); }\n")
    (ext / "setup.py").write_text("from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n"
                                  "setup(name='e', ext_modules=[CUDAExtension('e', ['k.cu'])])\n")
    assert main(["port-ext", str(ext), "--to", "musa"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.endswith(f"cd {tmp_path / 'ext_musa'} && python setup.py build_ext --inplace"), last
    assert (tmp_path / "ext_musa" / "setup.py").is_file()
    assert main(["port-ext", str(ext), "--to", "npu", "-o", str(tmp_path / "inv")]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("next: rewrite the 1 kernel for npu (the list: ")
    cpp = tmp_path / "cpp"
    cpp.mkdir()
    (cpp / "ops.cpp").write_text("int twice(int x) { return 2 * x; }\n")
    assert main(["port-ext", str(cpp), "--to", "musa"]) == 0
    assert "next:" not in capsys.readouterr().out
