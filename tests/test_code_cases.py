"""Each code's folder of before/after cases (tests/codes/<CODE>/, see its README): every case converts to its
expected text and reports its folder's code.  `pytest tests/test_code_cases.py -k TP206` runs one code."""
import pytest
from code_cases import ROOT, cases, converted

from torchport.core.codes import CODES

CASES = cases()


@pytest.mark.parametrize("code, case, target, before, after", CASES,
                         ids=[f"{code}-{case}-{target}" for code, case, target, _b, _a in CASES])
def test_case(code, case, target, before, after):
    text, findings = converted(before.name, before.read_text(), target)
    assert text == after.read_text(), f"{before.relative_to(ROOT)} -> {target}"
    assert code in {f.rule for f in findings}, f"{case} does not report {code}"


def test_every_case_folder_is_a_code_with_a_before_for_each_after():
    for folder in ROOT.iterdir():
        if folder.is_dir():
            assert folder.name in CODES, f"tests/codes/{folder.name}: not a code of the catalogue"
    assert CASES and all(before.is_file() for *_x, before, _after in CASES)
