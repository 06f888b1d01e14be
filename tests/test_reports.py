"""Report writers: valid Markdown, Ascend-compatible CSV safe for spreadsheets, consistent JSON."""
import csv
import io
import json

import pytest
from conftest import ROOT

import torchport
from torchport.core.csvfile import safe_cell as csv_cell
from torchport.core.finding import Finding
from torchport.report import change_list_csv, md_cell, unsupported_csv


def tables(md: str):
    """Yield the lines of each Markdown table."""
    block = []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            block.append(line)
        elif block:
            yield block
            block = []


def test_markdown_tables_are_valid(project, tmp_path):
    (project / "weird.py").write_text('import torch\nx = torch.cuda.nvtx  # a | pipe\ny = "nvidia-smi | grep x"\n')
    torchport.convert(project, "mps", tmp_path / "o")
    md = (tmp_path / "o_report" / "report.md").read_text()
    found = list(tables(md))
    assert len(found) >= 3
    for block in found:
        header_cells = block[0].count("|")
        assert set(block[1].replace("|", "")) == {"-"}, "separator row right after the header"
        for row in block[2:]:
            assert row.replace("\\|", "").count("|") == header_cells, row
    assert "| No. | File | Description | Rule |" in md
    assert 'add "import' not in md  # mps needs no registration import
    assert 'change "torch.cuda.device_count" to "torch.mps.device_count"' in md


def test_cambricon_style_rows(project, tmp_path):
    torchport.convert(project, "mlu", tmp_path / "o")
    md = (tmp_path / "o_report" / "report.md").read_text()
    assert '| 1 | run.sh:2 | change "CUDA_VISIBLE_DEVICES" to "MLU_VISIBLE_DEVICES" | TP801 |' in md
    assert '| train.py:1 | add "import torch_mlu"<br>registers the \'mlu\' device with PyTorch | TP001 |' in md


def test_csv_columns_and_formula_injection():
    bad = Finding("=cmd|' /C calc'!A0.py", 3, 4, "TP101", "device-api", "unsupported",
                  old="@SUM(1+1)", message="-2+3")
    change = Finding("a.py", 1, 1, "TP001", "import", "insert", new="+import torch_npu")
    rows = list(csv.reader(io.StringIO(unsupported_csv([bad, change]))))
    assert rows[0] == ["File", "Start Line", "End Line", "OP", "Tips"]
    assert rows[1] == ["'=cmd|' /C calc'!A0.py", "3", "4", "'@SUM(1+1)", "'-2+3"]
    assert len(rows) == 2
    rows = list(csv.reader(io.StringIO(change_list_csv([bad, change]))))
    assert rows[0] == ["File", "Start Line", "End Line", "Operation Type", "Message"]
    assert rows[1] == ["a.py", "1", "1", "INSERT", 'add "+import torch_npu"']
    for value in ("=1", "+1+1", "-1+2", "-inf", "@x", "\tx", "\rx"):
        assert csv_cell(value).startswith("'")
    assert csv_cell("plain") == "plain" and csv_cell("-0.25") == "-0.25", "a plain number stays a number"
    assert md_cell("a|b\nc`d") == "a\\|b<br>c`d"  # backticks stay: no `\\``


def test_json_counts_match_findings(project, tmp_path):
    result = torchport.convert(project, "accelerator", tmp_path / "o")
    data = json.loads((tmp_path / "o_report" / "report.json").read_text())
    actions = [f["action"] for f in data["findings"]]
    assert data["summary"]["changes"] == sum(a in ("insert", "modify", "delete") for a in actions)
    assert data["summary"]["unsupported"] == actions.count("unsupported")
    assert {f["file"] for f in data["findings"]} <= {r["path"] for r in data["files"]}
    assert all(f["line"] >= 1 and f["end_line"] >= f["line"] for f in data["findings"])
    assert data["tool"]["name"] == "torchport" and result.target == "accelerator"
    csv_rows = list(csv.reader(io.StringIO((tmp_path / "o_report" / "unsupported_api.csv").read_text())))
    assert len(csv_rows) - 1 == data["summary"]["unsupported"]


def test_json_schema_matches_the_documentation(project, tmp_path):
    torchport.convert(project, "npu", tmp_path / "o")
    data = json.loads((tmp_path / "o_report" / "report.json").read_text())
    assert set(data) == {"schema_version", "tool", "command", "started", "target", "input", "output",
                         "report_dir", "backup", "mode", "rule_files", "summary", "files", "findings", "suppressed"}
    assert set(data["findings"][0]) == {"file", "line", "end_line", "col", "rule", "category", "action",
                                        "old", "new", "message"}
    assert set(data["files"][0]) == {"path", "kind", "status", "lines", "message"}
    doc = (ROOT / "docs" / "reports.md").read_text()
    for key in list(data) + list(data["summary"]):
        assert f'"{key}"' in doc, key


@pytest.mark.subprocess
def test_diff_of_a_file_without_final_newline_keeps_lines_apart(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "t.py"
    script.write_text("import torch\nx = torch.zeros(1).cuda()")
    p = subprocess.run([sys.executable, "-m", "torchport", "convert", str(script), "--to", "npu", "--diff"],
                       capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    assert "-x = torch.zeros(1).cuda()\n\\ No newline at end of file\n" in p.stdout
    assert p.stdout.endswith("+x = torch.zeros(1).npu()\n\\ No newline at end of file\n")
    if subprocess.run(["which", "patch"], capture_output=True).returncode == 0:
        (tmp_path / "d.patch").write_text(p.stdout)
        ok = subprocess.run(["patch", "-s", "-p1", "-i", "d.patch"], cwd=tmp_path, capture_output=True, text=True)
        assert ok.returncode == 0, ok.stderr
        assert script.read_text().endswith("torch.zeros(1).npu()")


COMMANDS = ("torchport.commands.migrate", "torchport.commands.analyze", "torchport.commands.convert", "torchport.commands.port",
            "torchport.commands.check")


def test_report_writers_never_import_a_command():
    """The writers read the result a command returns, never the command's module (at module level or inside a
    function): what they need of it comes with the result (MigrateResult.rows(), .risks, .risk_titles, .efforts;
    AnalysisResult.package_of()) or from a lower module (core.codes' categories)."""
    import ast

    src = ROOT / "src"
    found = []
    for path in sorted((src / "torchport" / "report").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        package = parts[:-1]   # a module's package; an __init__'s is its own folder
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                names = [".".join(base + ([node.module] if node.module else []))]
                names += [f"{names[0]}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            found += [(path.name, n) for n in names if any(n == c or n.startswith(c + ".") for c in COMMANDS)]
    assert found == []


def test_the_reports_touchpoint_groups_are_analyzes():
    from torchport.commands.analyze import TOUCHPOINT_GROUPS
    from torchport.report.assessment import TOUCHPOINT_GROUPS as shown

    assert shown == TOUCHPOINT_GROUPS


def test_a_suggested_fix_shows_its_commands_as_code_not_as_backquotes():
    """migrate.html's Fix cells: `torchport rules TP114` is <code>, the rest escaped (new-user trial: the
    backquotes showed as they are)."""
    from torchport.report.html.migrate import _coded

    assert _coded("see (`torchport rules TP114` explains it) <b>") == \
        "see (<code>torchport rules TP114</code> explains it) &lt;b&gt;"
    assert _coded("a lone ` stays") == "a lone ` stays"
    assert _coded("`<script>`") == "<code>&lt;script&gt;</code>"
