"""Golden tests: every case under golden/cases, converted for every target, equals the reviewed expectation."""
import ast
import io
import tokenize
from collections import Counter

import pytest
from golden_support import CASES, EXPECTED, case_names, convert_case

from torchport.backends import available_targets
from torchport.converter.run import Converter, kind_of

TARGETS = available_targets()
PAIRS = [(t, n) for t in TARGETS for n in case_names()]


@pytest.mark.parametrize("target,name", PAIRS)
def test_matches_expectation(target, name):
    data, findings = convert_case(target, name)
    assert data == (EXPECTED / target / name).read_bytes(), f"regenerate with tests/golden/regen.py and review ({target}/{name})"
    assert findings == (EXPECTED / target / f"{name}.findings").read_text(encoding="utf-8")


@pytest.mark.parametrize("target,name", [p for p in PAIRS if p[1] != "syntax_error.py"])
def test_second_conversion_changes_nothing(target, name):
    out = (EXPECTED / target / name).read_bytes()
    new, findings, _ = Converter(target).convert_text(name, out, kind_of(name))
    assert new is None
    assert not [f for f in findings if f.is_change]


@pytest.mark.parametrize("target,name", [p for p in PAIRS if p[1].endswith(".py") and p[1] != "syntax_error.py"])
def test_output_parses(target, name):
    enc = "gbk" if name == "gbk.py" else "utf-8"
    ast.parse((EXPECTED / target / name).read_bytes().decode(enc))


@pytest.mark.parametrize("target", TARGETS)
def test_untouched_file_is_byte_identical(target):
    assert (EXPECTED / target / "untouched.py").read_bytes() == (CASES / "untouched.py").read_bytes()


@pytest.mark.parametrize("target", TARGETS)
def test_crlf_and_encodings_survive(target):
    crlf = (EXPECTED / target / "crlf.py").read_bytes()
    assert crlf.count(b"\n") == crlf.count(b"\r\n") > 5
    gbk = (EXPECTED / target / "gbk.py").read_bytes().decode("gbk")
    assert "中文说明" in gbk and "注释 cuda" in gbk and '"设备"' in gbk
    tabs = (EXPECTED / target / "tabs.py").read_text()
    assert "\t\t\treturn x." in tabs and "    " not in tabs


def test_syntax_error_case_is_reported():
    with pytest.raises(SyntaxError):
        Converter("npu").convert_text("syntax_error.py", (CASES / "syntax_error.py").read_bytes(), "python")


@pytest.mark.parametrize("target", TARGETS)
def test_comments_docstrings_and_user_names_untouched(target):
    """Everything that is not code in a device/backend position keeps its text."""
    for name in case_names():
        if not name.endswith(".py") or name in ("syntax_error.py", "gbk.py"):
            continue
        before = (CASES / name).read_text()
        after = (EXPECTED / target / name).read_text()
        for line in before.splitlines():
            stripped = line.strip()
            if stripped.startswith("#") or "configure_nccl" in line or "logger.info" in line:
                assert line in after.splitlines(), (target, name, line)
        for ident in ("num_gpus_per_machine", "gpu_mem_usage", "cuda_device", "input_cuda", "configure_nccl"):
            assert before.count(ident) == after.count(ident)


def _comments(text: str) -> Counter:
    return Counter(t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT)


@pytest.mark.parametrize("target", TARGETS)
def test_every_comment_survives_verbatim(target):
    """Edits are anchored to code: no rule writes into a comment (comments_in_calls.py puts `(` and `,` in
    comments right where arguments are added)."""
    for name in case_names():
        if not name.endswith(".py") or name == "syntax_error.py":
            continue
        enc = "gbk" if name == "gbk.py" else "utf-8"
        before = _comments((CASES / name).read_bytes().decode(enc))
        after = _comments((EXPECTED / target / name).read_bytes().decode(enc))
        assert not before - after, (target, name, before - after)
