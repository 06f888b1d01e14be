"""Codes with a lifecycle (core/codes.py): preview codes reported only when asked for, renamed codes still
understood under their old id, removed codes understood and said so; every view of the catalogue says which."""
import dataclasses
import json

import pytest

from torchport.cli import main, settings
from torchport.converter.run import Converter
from torchport.core import codes, suppress
from torchport.core.errors import UsageError
from torchport.core.suppress import Selection

SOURCE = b"import torch\n\n\ndef on_gpu(x):\n    return x.is_cuda\n"


@pytest.fixture
def catalogue(monkeypatch):
    """The catalogue, changed for one test: `catalogue(TP502=dict(status=...))`, `catalogue(redirects={...})`."""
    def change(redirects=None, **entries):
        for cid, fields in entries.items():   # in place: every module holding the table sees the change
            base = codes.CODES.get(cid) or dataclasses.replace(codes.TP502, id=cid, name=f"gone-{cid.lower()}")
            monkeypatch.setitem(codes.CODES, cid, dataclasses.replace(base, **fields))
        for old, new in (redirects or {}).items():
            monkeypatch.setitem(codes.REDIRECTS, old, new)
    return change


def converted(source: bytes = SOURCE, selection=None):
    conv = Converter("npu", selection=selection) if selection is not None else Converter("npu")
    suppressed: list = []
    new, findings, _lines, _hunks = conv.convert_file("a.py", source, "python", suppressed)
    return (new or source).decode(), findings, suppressed


def test_a_code_in_preview_is_neither_reported_nor_made_unless_asked_for(catalogue):
    text, found, _ = converted()
    assert ".is_npu" in text and any(f.rule == "TP502" for f in found)       # stable: as always
    catalogue(TP502=dict(status=codes.PREVIEW))
    text, found, suppressed = converted()
    assert ".is_cuda" in text and not [f for f in found + suppressed if f.rule == "TP502"]
    text, found, _ = converted(selection=Selection(preview=True))
    assert ".is_npu" in text and any(f.rule == "TP502" for f in found)


def test_preview_from_the_command_line_and_the_project_settings(catalogue, tmp_path, capsys):
    catalogue(TP502=dict(status=codes.PREVIEW))
    src = tmp_path / "a.py"
    src.write_bytes(SOURCE)
    assert main(["convert", str(src), "--to", "npu", "--no-config"]) == 0
    assert ".is_cuda" in capsys.readouterr().out
    assert main(["convert", str(src), "--to", "npu", "--no-config", "--preview"]) == 0
    assert ".is_npu" in capsys.readouterr().out
    (tmp_path / "pyproject.toml").write_text("[tool.torchport]\npreview = true\n")
    assert main(["convert", str(src), "--to", "npu"]) == 0
    assert ".is_npu" in capsys.readouterr().out
    (tmp_path / "pyproject.toml").write_text("[tool.torchport]\npreview = 'yes'\n")
    assert main(["convert", str(src), "--to", "npu"]) == 2
    assert "preview: must be true or false" in capsys.readouterr().err


def test_a_renamed_code_keeps_working_under_its_old_id_and_says_its_new_one(catalogue, capsys):
    catalogue(redirects={"TP599": "TP502"})
    assert suppress.parse_codes("tp599,TP2", "--ignore") == ("TP502", "TP2")
    text, found, suppressed = converted(selection=Selection(ignore=("TP502",)))
    assert ".is_cuda" in text and [f.rule for f in suppressed] == ["TP502"]
    commented = SOURCE.replace(b"x.is_cuda", b"x.is_cuda  # torchport: ignore[TP599]")
    text, found, suppressed = converted(commented)
    assert ".is_cuda" in text and [f.rule for f in suppressed] == ["TP502"]
    assert any("'TP599'" in f.message and "TP502 now" in f.message for f in found)
    assert main(["rules", "TP599"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("TP599 was renamed TP502") and "TP502 is-cuda" in out


def test_a_removed_code_is_understood_never_selected_and_suppresses_nothing(catalogue):
    catalogue(TP598=dict(status=codes.REMOVED, note="merged into TP502"))
    with pytest.raises(ValueError, match="TP598 was removed: merged into TP502"):
        suppress.parse_codes("TP598", "--select")
    assert suppress.parse_codes("TP598", "--ignore", selecting=False) == ("TP598",)
    commented = SOURCE.replace(b"x.is_cuda", b"x.is_cuda  # torchport: ignore[TP598]")
    text, found, suppressed = converted(commented)
    assert ".is_npu" in text and not suppressed
    assert any("TP598" in f.message and "was removed (merged into TP502)" in f.message for f in found)
    with pytest.raises(UsageError, match="--select: TP598 was removed"):
        settings.codes_option("--select")("TP598")
    assert settings.codes_option("--ignore")("TP598") == ("TP598",)


def test_every_view_of_the_catalogue_says_a_codes_status(catalogue, capsys):
    from torchport.report.rules_doc import rule_text, rules_markdown, rules_table

    catalogue(TP502=dict(status=codes.DEPRECATED, note="use TP501"), redirects={"TP599": "TP502"})
    assert {r["id"]: r["status"] for r in rules_table()}["TP502"] == "deprecated"
    assert "Deprecated: use TP501" in rule_text(codes.CODES["TP502"])
    doc = rules_markdown()
    assert "| *deprecated*: " in doc and "## Renamed codes" in doc and "- TP599 is TP502" in doc
    assert main(["rules"]) == 0
    assert "[deprecated]" in next(line for line in capsys.readouterr().out.splitlines() if line.startswith("TP502"))
    assert main(["rules", "--json"]) == 0
    assert {r["id"]: r["status"] for r in json.loads(capsys.readouterr().out)}["TP501"] == "stable"


def test_the_catalogue_refuses_a_lifecycle_it_cannot_explain():
    with pytest.raises(ValueError, match="says why"):
        codes._define("TP597", "old-thing", "other", codes.CONVERT, codes.REPORT, "x", status=codes.DEPRECATED)
    with pytest.raises(ValueError, match="status"):
        codes._define("TP597", "old-thing", "other", codes.CONVERT, codes.REPORT, "x", status="retired")
    with pytest.raises(ValueError, match="must be free"):
        codes._renamed("TP501", "TP502")
    with pytest.raises(ValueError, match="must be free"):
        codes._renamed("TP597", "TP596")
    assert "TP597" not in codes.CODES and "TP597" not in codes.REDIRECTS
    assert all(c.status in codes.STATUSES for c in codes.CODES.values())
    assert all(new in codes.CODES and codes.CODES[new].status != codes.REMOVED for new in codes.REDIRECTS.values())
