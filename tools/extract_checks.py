"""Regenerate src/torchport/kb/vendor_checks.json: the messages the vendors' PyTorch plug-ins (and the vendors' own
adapters of popular frameworks: IPEX, vllm-ascend, MindSpeed) raise or warn with, read from bare git copies of their
sources, each with where it is raised and the condition that raises it.

C++: TORCH_CHECK(cond, msg...), TORCH_CHECK_WITH(kind, cond, msg...), AT_ERROR(msg...), TORCH_WARN(_ONCE),
TORCH_NPU_WARN(_ONCE) and `throw std::runtime_error(msg)` (the `if` just above as its condition); Python: `raise
SomeError(msg)`, logger.warning/error(msg) and warnings.warn(msg) (the `if` just above).  A message is its string literals in order, with "{}" where an expression is
put in (f-string fields, %s, streamed values); a message with fewer than 15 letters of its own or 3 words is left
out (it says nothing alone), as are tests, third-party folders, messages two packages share (torch's own wording,
copied) and checks inside a macro definition (an error macro's
envelope, "NPU function error: {}", which many calls share: the code it carries says what failed).  `torchport explain` finds a log line that holds
a message's parts in order and answers with the file, line and condition (doctor/vendor_checks.py).

    python tools/extract_checks.py [--mirror /work/.mirror]
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
from pathlib import Path

KB = Path(__file__).resolve().parents[1] / "src" / "torchport" / "kb" / "vendor_checks.json"
# (vendor, package, repository as the mirror names it, folders read)
SOURCES = (
    ("npu", "torch_npu", "Ascend/pytorch", ("torch_npu/",)),
    ("npu", "op-plugin", "Ascend/op-plugin", ("op_plugin/",)),
    ("mlu", "torch_mlu", "Cambricon/torch_mlu", ("torch_mlu/",)),
    ("musa", "torch_musa", "MooreThreads/torch_musa", ("torch_musa/",)),
    ("xpu", "torch-xpu-ops", "intel/torch-xpu-ops", ("src/",)),
    ("xpu", "intel_extension_for_pytorch", "intel/intel-extension-for-pytorch", ("csrc/", "intel_extension_for_pytorch/")),
    ("npu", "vllm_ascend", "vllm-project/vllm-ascend", ("vllm_ascend/", "csrc/")),
    ("npu", "mindspeed", "Ascend/MindSpeed", ("mindspeed/",)),
)
SKIP = re.compile(r"(?:^|/)(?:tests?|testing|third_party|benchmarks?|examples?|docs?)/")
CPP_CALL = re.compile(r"\b(TORCH_CHECK_WITH|TORCH_CHECK|AT_ERROR|TORCH_NPU_WARN_ONCE|TORCH_NPU_WARN|TORCH_WARN_ONCE|"
                      r"TORCH_WARN|throw std::runtime_error)\s*\(")
PY_RAISE = re.compile(r"\braise\s+([\w.]*(?:Error|Exception|Warning))\s*\(|\b(?:logger|logging|log)\.(warning_once|"
                      r"warning|warn|error|critical)\s*\(|\bwarnings\.(warn)\s*\(")
CPP_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
PY_STRING = re.compile(r"""([rRfFbBuU]{0,2})(?:"((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)')""")
FORMAT = re.compile(r"%[-+ #0-9.]*(?:l{0,2}|z)[sdifuxgep]|\{[^{}]*\}")
LETTERS = re.compile(r"[A-Za-z]")
IF_LINE = re.compile(r"^\s*(?:if|elif|else if)\s*(.*?)\s*:?\s*\{?\s*$")


def _git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True,
                          errors="replace").stdout


def _arguments(text: str, start: int, limit: int = 4000) -> list:
    """The top-level arguments of the call whose "(" is at text[start - 1], each as source text."""
    args, depth, i, arg_start, quote = [], 0, start, start, ""
    end = min(len(text), start + limit)
    while i < end:
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append(text[arg_start:i])
                return args
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[arg_start:i])
            arg_start = i + 1
        i += 1
    return []


def _message(args: list, python: bool) -> str:
    """The message the arguments make: their string literals in order, "{}" where anything else is put in."""
    pieces = []
    for arg in args:
        last = 0
        literals = PY_STRING.finditer(arg) if python else CPP_STRING.finditer(arg)
        for m in literals:
            between = arg[last:m.start()].strip(" +\n\t\\")
            if between and pieces:
                pieces.append("{}")
            if python:
                prefix, body = m.group(1).lower(), m.group(2) if m.group(2) is not None else m.group(3)
                body = re.sub(r"\{[^{}]*\}", "{}", body) if "f" in prefix else body
            else:
                body = m.group(1)
            pieces.append(body.replace('\\"', '"').replace("\\'", "'").replace("\\n", " ").replace("\\t", " ")
                          .replace("\\\\", "\\"))
            last = m.end()
        if last == 0 and arg.strip() and pieces:
            pieces.append("{}")
    text = FORMAT.sub("{}", "".join(pieces))
    text = re.sub(r"(?:\{\}\s*)+", "{} ", text)
    return " ".join(text.split()).strip(" {}:,")


def _condition_above(lines: list, n: int) -> str:
    """The `if` condition on the line above line n (1-based), if there is one."""
    for k in range(n - 2, max(-1, n - 3), -1):
        m = IF_LINE.match(lines[k])
        if m:
            return " ".join(m.group(1).split())[:200]
    return ""


def checks_in(path: str, text: str) -> list:
    """[(line, kind, condition, message)] of one source file."""
    python = path.endswith(".py")
    lines = text.splitlines()
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    out = []
    for m in (PY_RAISE if python else CPP_CALL).finditer(text):
        args = _arguments(text, m.end())
        if not args:
            continue
        kind = next(g for g in m.groups() if g)
        kind = {"warning_once": "logger.warning", "warning": "logger.warning", "warn": "WARN",
                "error": "logger.error", "critical": "logger.error"}.get(kind, kind) if python else kind
        if any("\\\n" in arg for arg in args):   # inside a #define: an envelope for many calls, not a message
            continue
        line = next(i for i, s in enumerate(starts) if s > m.start())
        if python:
            cond, message = _condition_above(lines, line), _message(args, True)
        elif kind == "TORCH_CHECK":
            cond, message = " ".join(args[0].split())[:200], _message(args[1:], False)
        elif kind == "TORCH_CHECK_WITH":
            cond, message = " ".join(args[1].split())[:200], _message(args[2:], False)
        else:
            cond, message = _condition_above(lines, line), _message(args, False)
        own = "".join(message.split("{}"))
        if len(LETTERS.findall(own)) < 15 or len(own.split()) < 3:
            continue
        out.append((line, kind, cond, message))
    return out


def extract(mirror: Path) -> dict:
    sources, checks, seen = [], [], set()
    for vendor, package, repo, folders in SOURCES:
        git = str(mirror / repo.replace("/", "+") / "repo")
        commit = _git(git, "rev-parse", "HEAD").strip()
        sources.append({"vendor": vendor, "package": package, "repository": f"github:{repo}", "commit": commit})
        files = [f for f in _git(git, "ls-tree", "-r", "--name-only", commit, "--", *folders).splitlines()
                 if f.endswith((".cpp", ".h", ".hpp", ".cc", ".mu", ".mlu", ".py")) and not SKIP.search(f)]
        for path in files:
            text = _git(git, "show", f"{commit}:{path}")
            for line, kind, cond, message in checks_in(path, text):
                if (vendor, message) in seen:   # the same message raised in several places: its first place
                    continue
                seen.add((vendor, message))
                checks.append([vendor, len(sources) - 1, f"{path}:{line}", kind, cond, message])
    packages: dict = {}
    for row in checks:
        packages.setdefault(row[5], set()).add(sources[row[1]]["package"])
    # a message two packages share is torch's own wording copied ("Input type ({}) and bias type ({}) should be the
    # same"): where a log's copy was raised cannot be told, and explain's general readings say more
    checks = [row for row in checks if len(packages[row[5]]) == 1]
    return {"about": "Messages the vendors' PyTorch plug-ins raise or warn with (TORCH_CHECK and the like, Python "
                     "raises), with where and on what condition; extracted by tools/extract_checks.py.",
            "generated": datetime.date.today().isoformat(), "sources": sources,
            "fields": ["vendor", "source", "where", "kind", "condition", "message"], "checks": checks}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", default="/work/.mirror", help="folder of the bare git copies (owner+name/repo)")
    args = ap.parse_args()
    data = extract(Path(args.mirror))
    KB.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{KB}: {len(data['checks'])} messages from {len(data['sources'])} sources")


if __name__ == "__main__":
    main()
