"""Rewrite the golden expectations: python tests/golden/regen.py, then review `git diff`."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from torchport.backends import available_targets

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from golden_support import PORT_EXPECTED, PORT_TARGETS, expected_outputs, port_example  # noqa: E402

if __name__ == "__main__":
    for target in available_targets():
        out = HERE / "expected" / target
        out.mkdir(parents=True, exist_ok=True)
        for name, (data, findings) in expected_outputs(target).items():
            (out / name).write_bytes(data)
            (out / f"{name}.findings").write_text(findings, encoding="utf-8")
    import shutil

    for target in PORT_TARGETS:
        out = PORT_EXPECTED / target
        shutil.rmtree(out, ignore_errors=True)
        _, findings = port_example(target, out)
        (PORT_EXPECTED / f"{target}.findings").write_text(findings, encoding="utf-8")
    print("regenerated; review with git diff tests/golden")
