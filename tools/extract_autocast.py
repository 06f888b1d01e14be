"""Extract a vendor's autocast op lists into src/torchport/kb/sim/autocast/<target>.json.

Reads the vendor's autocast registration file (the `TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m)` block):

  KERNEL_*(op[, overload], policy)                 one op, its policy
  KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_*(..., "op.overload", ..., policy)
  AT_FORALL_<LIST>(MACRO)                          every op of PyTorch's list, expanded from the
                                                   autocast_mode.h of the torch the vendor builds against
                                                   (--torch-header), with the policy MACRO's #define names
  m.impl(TORCH_SELECTIVE_NAME("aten::op"), TORCH_FN((&f_banned)))
                                                   a banned op; the message is f's string literals

Each op keeps where it was read (file:line, and the header's line for a macro list).  Commented-out lines are
skipped.  Nothing is imported or compiled: the files are read as text (fetch them first, e.g. with
`git --git-dir=... show <commit>:<path> > file`).

  python tools/extract_autocast.py mlu VENDOR_FILE --repo Cambricon/torch_mlu --commit SHA --path PATH_IN_REPO \
      --torch-header autocast_mode.h --torch-version 2.4.1 --torch-header-from "where the header was read"
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "torchport" / "kb" / "sim" / "autocast"
POLICIES = ("lower_precision_fp", "fp32", "fp32_set_opt_dtype", "fp32_append_dtype", "promote", "banned")


def _strip_comment(line: str) -> str:
    return line.split("//", 1)[0]


def _groups(text: str, opener: str):
    """(offset, inner text) of each `opener(...)` in text, parentheses balanced."""
    for m in re.finditer(r"(?<!\w)" + re.escape(opener) + r"\s*\(", text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        yield m.start(), text[m.end():i - 1]


def _split_args(inner: str) -> list:
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return [p for p in parts if p]


def _op_of(args: list) -> str:
    """`op` or `op.overload` from a KERNEL entry's arguments (policy already removed), or its quoted name."""
    quoted = [a for a in args if a.startswith('"')]
    if quoted:
        return quoted[0].strip('"')
    return ".".join(args[:2])


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def header_lists(header: str) -> dict:
    """{LIST name: [(op, policy or None, line)]} for every `#define AT_FORALL_*(_)` of autocast_mode.h."""
    lists = {}
    lines = header.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"#define (AT_FORALL_\w+)\(_\)", line)
        if not m:
            continue
        j, body = i, []
        while lines[j].rstrip().endswith("\\"):
            j += 1
            body.append(lines[j])
        start = i + 2   # 1-based line of the first body line
        text = "\n".join(body).replace("\\\n", "\n")
        entries = []
        for offset, inner in _groups(text, "_"):
            if text[offset - 1:offset].isalnum() or text[offset - 1:offset] == "_":
                continue   # ADD_NS(...) inside an entry
            args = _split_args(inner)
            policy = args[-1] if args[-1] in POLICIES else None
            entries.append((_op_of(args[:-1] if policy else args), policy, start + _line_of(text, offset) - 1))
        lists[m.group(1)] = entries
    return lists


def _block(source: str) -> tuple:
    """(offset, text) of the `TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) { ... }` block."""
    m = re.search(r"TORCH_LIBRARY_IMPL\(\s*aten\s*,\s*AutocastPrivateUse1\s*,\s*m\s*\)\s*\{", source)
    if not m:
        raise SystemExit("no TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) block")
    depth, i = 1, m.end()
    while depth:
        depth += {"{": 1, "}": -1}.get(source[i], 0)
        i += 1
    return m.end(), source[m.end():i - 1]


def banned_message(source: str, function: str) -> str:
    """The string literals of `function`'s body, joined as C++ joins adjacent literals."""
    m = re.search(r"\b" + re.escape(function) + r"\s*\([^)]*\)\s*\{", source, re.S)
    if not m:
        raise SystemExit(f"no body for {function}")
    depth, i = 1, m.end()
    while depth:
        depth += {"{": 1, "}": -1}.get(source[i], 0)
        i += 1
    literals = re.findall(r'"((?:[^"\\]|\\.)*)"', source[m.end():i])
    return "".join(literals).encode().decode("unicode_escape")


def extract(source: str, path: str, header: str = "", header_name: str = "") -> tuple:
    """(ops, banned message) of a vendor autocast file; `header` expands its AT_FORALL_* lists."""
    # the comment-stripped text keeps every line where it was, so offsets give the file's lines
    clean = "\n".join(_strip_comment(line) for line in source.splitlines())
    start, block = _block(clean)
    # the block's own #define lines (continued with backslashes) are read below as macros, not as entries;
    # blanked to spaces so that offsets still give the file's lines
    block = re.sub(r"(?m)^[ \t]*#(?:.*\\\n)*.*$", lambda m: re.sub(r"[^\n]", " ", m.group(0)), block)
    macro_policy = {m.group(1): m.group(2) for m in
                    re.finditer(r"#define\s+(\w+)\(\.\.\.\)\s*\\?\s*\w+\(__VA_ARGS__,\s*(\w+)\)", clean)}
    lists = header_lists(header) if header else {}
    ops, message = [], ""
    events = []
    for opener in re.findall(r"\b(KERNEL_\w+|AT_FORALL_\w+)\s*\(", block):
        if opener not in [e[1] for e in events]:
            events += [(o, opener, inner) for o, inner in _groups(block, opener)]
    for offset, opener, inner in sorted(events):
        line = _line_of(clean, start + offset)
        args = _split_args(inner)
        if opener.startswith("AT_FORALL_"):
            if not header:
                raise SystemExit(f"{path}:{line} uses {opener}: give --torch-header")
            if opener not in lists:
                raise SystemExit(f"{path}:{line}: {opener} is not in {header_name}")
            policy = macro_policy.get(args[0]) if args else None
            for op, own_policy, hline in lists[opener]:
                ops.append({"op": op, "policy": own_policy or policy,
                            "source": f"{path}:{line} {opener} <- {header_name}:{hline}"})
        elif args and args[-1] in POLICIES:
            ops.append({"op": _op_of(args[:-1]), "policy": args[-1], "source": f"{path}:{line}"})
    for m in re.finditer(r'm\.impl\(\s*TORCH_SELECTIVE_NAME\("aten::(\w+(?:\.\w+)?)"\)\s*,\s*TORCH_FN\(\(?&?([\w:]+)\)?\)',
                         block):
        function = m.group(2).split("::")[-1]
        if not function.endswith("_banned"):
            raise SystemExit(f"{path}:{_line_of(clean, start + m.start())}: m.impl of {function}: not a banned op")
        message = banned_message(source, function)
        ops.append({"op": m.group(1), "policy": "banned", "source": f"{path}:{_line_of(clean, start + m.start())}"})
    for e in ops:
        if e["policy"] not in POLICIES:
            raise SystemExit(f"{e['source']}: unknown policy {e['policy']!r} for {e['op']}")
    return ops, message


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target")
    ap.add_argument("file", help="the vendor's autocast source file, as read from the repository")
    ap.add_argument("--repo", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--ref", default="", help="the branch or tag the commit is on")
    ap.add_argument("--path", required=True, help="the file's path in the repository")
    ap.add_argument("--torch-header", help="autocast_mode.h of the torch the vendor builds against")
    ap.add_argument("--torch-version", default="")
    ap.add_argument("--torch-version-source", default="", help="where the vendor says which torch it builds against")
    ap.add_argument("--torch-header-from", default="", help="where the header was read")
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args()
    source = Path(a.file).read_text(encoding="utf-8")
    header = Path(a.torch_header).read_text(encoding="utf-8") if a.torch_header else ""
    header_name = f"pytorch/pytorch@v{a.torch_version} aten/src/ATen/autocast_mode.h" if header else ""
    ops, message = extract(source, a.path, header, header_name)
    data = {
        "schema": 1,
        "target": a.target,
        "extracted": datetime.date.today().isoformat(),
        "method": "tools/extract_autocast.py: the TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1) block of the vendor's "
                  "file; AT_FORALL_* lists expanded from the autocast_mode.h of the torch it builds against",
        "vendor": {"repo": a.repo, "ref": a.ref, "commit": a.commit, "path": a.path,
                   "sha256": hashlib.sha256(source.encode()).hexdigest()},
        "torch": ({"version": a.torch_version, "version_source": a.torch_version_source,
                   "file": "aten/src/ATen/autocast_mode.h", "read_from": a.torch_header_from,
                   "sha256": hashlib.sha256(header.encode()).hexdigest()} if header else None),
        "banned_message": message,
        "ops": ops,
    }
    out = Path(a.out) / f"{a.target}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    counts = {p: sum(e["policy"] == p for e in ops) for p in POLICIES}
    print(f"{out}: {len(ops)} ops {counts}")


if __name__ == "__main__":
    main()
