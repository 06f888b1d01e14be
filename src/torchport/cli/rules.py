"""`torchport rules [CODE]`: the code catalogue; one code in full with its example converted for every target."""
from __future__ import annotations

import json
import sys

from ..core.errors import UsageError
from ..core.words import closest
from .common import write_out


def run(args) -> int:
    from ..core.codes import CODES, REDIRECTS, resolve
    from ..report.rules_doc import rule_text, rules_markdown, rules_table

    if args.code:
        if args.code.upper() in REDIRECTS:
            print(f"{args.code.upper()} was renamed {REDIRECTS[args.code.upper()]} (the old id still works)\n")
        code = CODES.get(resolve(args.code.upper()))
        if code is None:
            close = closest(args.code.upper(), CODES)
            raise UsageError(f"unknown code '{args.code}'" + (f" (did you mean {close}?)" if close else "")
                             + "; `torchport rules` lists them")
        write_out(rule_text(code))
    elif args.markdown:
        write_out(rules_markdown())
    elif args.json:
        json.dump(rules_table(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for r in rules_table():
            status = f"[{r['status']}] " if r["status"] != "stable" else ""
            print(f"{r['id']:6} {r['category']:14} {r['name']:26} {status}{r['summary']}")
    return 0


def add(sub) -> None:
    r = sub.add_parser("rules", help="list the codes torchport reports, or show one in full",
                       description="Without CODE: one line per code. With CODE (TP201): its documentation and its "
                                   "example converted for every target.")
    r.add_argument("code", nargs="?", metavar="CODE", help="one code to show in full (e.g. TP201)")
    r.add_argument("--markdown", action="store_true", help="print the full reference (docs/rules.md)")
    r.add_argument("--json", action="store_true", help="print the codes as JSON")
    r.set_defaults(func=run)
