"""CI's time against its budget: each stage's wall time (written by .ci/run) and the total, against 25 minutes.

.ci/run appends one line per stage to a times file ("NAME SECONDS"; stages that ran side by side carry the
same "+group" suffix) and, last, "total SECONDS", the whole run's wall time as it measured it.  This
prints them as a table, the total and its share of the budget (without a total line, the total is
worked out: stages one after another, a group of side-by-side stages at its longest).  The hard limit is 90 minutes (after which nothing lands); the
budget leaves room for slower machines and for the suites the next issues add.  Exit 0 within the
budget; over it, exit 0 with a warning, or 1 with --strict.

    python bench/ci_budget.py .ci-times [--budget-minutes 25] [--strict]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

BUDGET_MINUTES = 25.0
LIMIT_MINUTES = 90.0


def read_times(path: Path) -> list:
    """[(stage, seconds, group)] in the order written; group is '' for a stage that ran alone."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"{path}:{number}: expected 'STAGE SECONDS', got {line!r}")
        name, seconds = parts
        stage, _, group = name.partition("+")
        rows.append((stage, float(seconds), group))
    return rows


def total_seconds(rows: list) -> float:
    """Wall time of the whole run: stages one after another, each group of side-by-side stages at its longest."""
    alone = sum(seconds for _, seconds, group in rows if not group)
    groups: dict = {}
    for _, seconds, group in rows:
        if group:
            groups[group] = max(groups.get(group, 0.0), seconds)
    return alone + sum(groups.values())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("times", type=Path)
    ap.add_argument("--budget-minutes", type=float, default=BUDGET_MINUTES)
    ap.add_argument("--strict", action="store_true", help="exit 1 when the total is over the budget")
    args = ap.parse_args(argv)
    try:
        rows = read_times(args.times)
    except (OSError, ValueError) as e:
        print(f"ci_budget: {e}", file=sys.stderr)
        return 2
    measured = [seconds for stage, seconds, _ in rows if stage == "total"]
    rows = [row for row in rows if row[0] != "total"]
    print(f"{'stage':14} {'seconds':>8}")
    for stage, seconds, group in rows:
        print(f"{stage:14} {seconds:8.0f}" + (f"   (side by side: {group})" if group else ""))
    total, budget = (measured[-1] if measured else total_seconds(rows)), args.budget_minutes * 60
    verdict = "within" if total <= budget else "OVER"
    print(f"{'total':14} {total:8.0f}   {total / 60:.1f} min, {total / budget:.0%} of the {args.budget_minutes:g}-minute "
          f"budget: {verdict} (CI's hard limit: {LIMIT_MINUTES:g} min)")
    return 1 if args.strict and total > budget else 0


if __name__ == "__main__":
    sys.exit(main())
