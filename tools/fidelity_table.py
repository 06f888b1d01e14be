"""Print the simulator's fidelity counts (verdicts per vendor) from tests/fidelity/*.toml as a markdown table;
`--write` puts it into docs/sim.md between its fidelity-table markers (tests/test_fidelity.py checks it is current).

    python tools/fidelity_table.py [--write]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fidelity"))
import runner  # noqa: E402

BEGIN, END = "<!-- fidelity-table: tools/fidelity_table.py --write -->", "<!-- /fidelity-table -->"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update docs/sim.md")
    args = parser.parse_args()
    table = runner.markdown_counts(runner.load_rows())
    if not args.write:
        print(table)
        return 0
    docs = ROOT / "docs" / "sim.md"
    text = docs.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        print(f"tools/fidelity_table.py: docs/sim.md has no '{BEGIN}' ... '{END}' markers", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    docs.write_text(f"{head}{BEGIN}\n{table}\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
