"""Shared by the golden tests and tests/golden/regen.py."""
from pathlib import Path

from torchport.converter.run import Converter, kind_of

CASES = Path(__file__).resolve().parent / "golden" / "cases"
EXPECTED = Path(__file__).resolve().parent / "golden" / "expected"


def case_names():
    return sorted(p.name for p in CASES.iterdir() if p.is_file())


def findings_text(findings) -> str:
    lines = []
    for f in findings:
        change = f" {f.old!r} -> {f.new!r}" if f.new else f" {f.old!r}"
        lines.append(f"{f.line}-{f.end_line} {f.rule} {f.action}{change}")
    return "\n".join(lines) + "\n"


def convert_case(target: str, name: str):
    """(output bytes, findings text) for one case, as the CLI would produce them."""
    conv = Converter(target)
    data = (CASES / name).read_bytes()
    try:
        new, findings, _ = conv.convert_text(name, data, kind_of(name))
    except SyntaxError as e:
        return data, f"syntax error line {e.lineno}\n"
    return (new if new is not None else data), findings_text(findings)


def expected_outputs(target: str) -> dict:
    return {name: convert_case(target, name) for name in case_names()}


# ---- port-ext: the bundled example extension, ported to each port target
PORT_EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cuda_extension"
PORT_EXPECTED = Path(__file__).resolve().parent / "golden" / "port"
PORT_TARGETS = ("musa", "hip")


def port_example(target: str, out: Path):
    """Port the example into `out`; (result, findings text with file names)."""
    from torchport.api import port_ext as port

    result = port(PORT_EXAMPLE, target, out, write_reports=False, jobs=1)
    by_file = {}
    for f in result.findings:
        by_file.setdefault(f.file, []).append(f)
    text = "".join(f"== {name}\n" + findings_text(fs) for name, fs in sorted(by_file.items()))
    return result, text
