"""`torchport doctor`: check this machine's setup for a target."""
from __future__ import annotations

import json
import os
import sys
from collections import Counter

from ..core.names import printable
from ..core.words import counted
from .common import installed_target, target_name


def run(args) -> int:
    from ..backends import load_target
    from ..doctor import FAIL, run_checks

    name = args.to or os.environ.get("TORCHPORT_TARGET") or installed_target()
    rows = run_checks(load_target(name))
    if args.json:
        json.dump({"target": name, "checks": [r.to_dict() for r in rows]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skip": "skip"}
        print(f"torchport doctor --to {printable(name)}")
        for r in rows:
            print(f"  {marks[r.status]}  {r.name}: {printable(r.detail)}")
            if r.fix and r.status in ("warn", "fail"):
                print(f"        fix: {printable(r.fix)}")
        counts = Counter(r.status for r in rows)
        print(f"  {counts['fail']} failed, {counted(counts['warn'], 'warning')}, {counts['ok']} ok")
    return 1 if any(r.status == FAIL for r in rows) else 0


def add(sub) -> None:
    dr = sub.add_parser("doctor", help="check this machine's setup for a target (one row per check, with fixes)",
                        description="Check this machine's setup for a target: Python, torch and the vendor's "
                                    "extension, the management tool, the distributed backend, the CPU governor and "
                                    "environment variables; one row per check, with its fix.")
    dr.add_argument("-t", "--to", metavar="TARGET", type=target_name, help="default: TORCHPORT_TARGET, else the installed vendor stack")
    dr.add_argument("--json", action="store_true", help="print the checks as JSON")
    dr.set_defaults(func=run)
