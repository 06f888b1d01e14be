"""`torchport explain`: known error messages -> cause and fix."""
from __future__ import annotations

import json
import sys

from ..core.names import printable
from .common import target_name


def run(args) -> int:
    from ..doctor.explain import MIN_SIMILARITY, explain, unexplained

    if args.to:
        from ..backends import load_target

        load_target(args.to)  # an unknown target is a usage error, not a filter that matches nothing
    if args.file:
        from ..core.files import read_data

        path = "/dev/stdin" if args.file == "-" else args.file   # `--file -`: a log piped in
        text = read_data(path, "log", pipes=True).decode("utf-8", errors="replace")
    else:
        text = " ".join(args.text)
    matches, nearest = explain(text, target=args.to)
    others = unexplained(text, matches) if matches else []
    known = any(m.error.confidence != "inferred" for m in matches)   # a reading of the words is not a known error
    if args.json:
        rows = [{"id": m.error.id, "line": m.line, "also": list(m.also), "text": m.text, "score": m.score,
                 "title": m.error.title, "cause": m.error.cause, "fix": m.error.fix, "source": m.error.source,
                 "confidence": m.error.confidence} for m in matches or nearest]
        json.dump({"known": known, "matches": rows,
                   "unexplained": [{"line": n, "text": line} for n, line in others]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0 if known else 1
    if matches and not known:
        print("not a known error; what its words say:")
    for m in matches:
        e = m.error
        where = f" (line {m.line}{_also(m.also)})" if args.file else ""
        print(f"{e.title} [{e.id}, {e.target}]{where}")
        if args.file:
            print(f"  > {printable(m.text[:200])}")
        print(f"  cause: {e.cause}")
        print(f"  fix:   {e.fix}")
        print(f"  source: {e.source}" + _CAVEAT.get(e.confidence, ""))
    if others:
        print(f"not explained: {len(others)} other exception line{'s' if len(others) != 1 else ''} in the text "
              "(`torchport explain \"LINE\"` looks for the nearest known errors):")
        for n, line in others[:10]:
            print(f"  line {n}: {printable(line[:200])}")
        if len(others) > 10:
            print(f"  ... and {len(others) - 10} more")
    if not matches and not nearest:
        print(f"not a known error, and no known error is similar to it (similarity under {MIN_SIMILARITY:.2f})")
    elif not matches:
        print("not a known error; the nearest known ones (similarity 0 to 1):")
        for m in nearest:
            print(f"  {m.score:.2f}  {m.error.title} [{m.error.id}]")
            print(f"        fix: {m.error.fix}")
    return 0 if known else 1


_CAVEAT = {"weak": "  (weak: the source shows this error only as a screenshot or without a cause; the advice is "
                   "torchport's)",
           "inferred": "  (read from the message's shape: torchport's reading of its words, not a documented error)"}


def _also(lines: tuple) -> str:
    """"; also at 80, 95" for an error found again further down a log."""
    if not lines:
        return ""
    shown = ", ".join(map(str, lines[:5]))
    return f"; also at {shown}" + (f" and {len(lines) - 5} more" if len(lines) > 5 else "")


def add(sub) -> None:
    ex = sub.add_parser("explain", help="known error messages -> cause and fix (text or --file LOG)",
                        description="Match an error message (the words given, or the lines of a log file) "
                                    "against the targets' known errors and print each one's cause and fix.")
    ex.add_argument("text", nargs="*", help="the error text")
    ex.add_argument("-f", "--file", metavar="LOG", help="a log file to search ('-': standard input)")
    ex.add_argument("-t", "--to", metavar="TARGET", type=target_name, help="only this target's errors (and generic ones)")
    ex.add_argument("--json", action="store_true", help="print the matches as JSON")
    ex.set_defaults(func=run)
