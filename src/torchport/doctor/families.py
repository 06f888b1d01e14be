"""Error families `torchport explain` reads by structure (kb/error_families.toml): whose stack a log comes from,
which vendor package owns a shared library a log says is missing, what an HCCL return code means, and messages
with a parameter (a device type torch was built without, the torch version IPEX needs, an op a vendor runs on the
CPU).  Each answer is the fields of a known error made from the data, so `explain` reports it like an entry of
kb/errors.toml.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Optional

from ..core.tomlfile import tomllib

KB = Path(__file__).resolve().parents[1] / "kb" / "error_families.toml"
_TOKEN = re.compile(r"[a-z][a-z0-9_.+-]*")
_PART = re.compile(r"[a-z][a-z0-9]*")   # the parts of a token: ascend_transport.so names "ascend"
# a library a log names: "libascend_hal.so: cannot open shared object file", "libmupti.so.0.9", "ascend_transport.so"
_LIBRARY = re.compile(r"(?<![\w.+-])([A-Za-z_][A-Za-z0-9_+-]*\.so(?:\.[0-9][0-9.]*)?)(?![\w-])")
_MISSING_WORDS = re.compile(r"cannot open shared object|no such file|not found|cannot find|could not (?:load|find|open)"
                            r"|undefined symbol|failed to load|找不到|缺少|缺失", re.IGNORECASE)
_HCCL_CODE = re.compile(r"HCCL[^\n]{0,300}?error code is (\d+)", re.IGNORECASE)
_ACL_CODE = re.compile(r"error code is (\d{6})\b", re.IGNORECASE)
ACL_CODES = Path(__file__).resolve().parents[1] / "kb" / "acl_codes.json"
_NOT_LINKED = re.compile(r"not linked with support for (\w+) devices", re.IGNORECASE)
_IPEX_VERSION = re.compile(r"needs to work with PyTorch ([\d.*]+),? but PyTorch ([\w.+-]+) is found", re.IGNORECASE)
_CPU_FALLBACK = re.compile(r"operator '([\w:.]+)' is not currently supported on the (\w+) backend and will fall back "
                           r"to run on the CPU", re.IGNORECASE)


@lru_cache(maxsize=1)
def _data() -> dict:
    return tomllib.loads(KB.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _acl_codes() -> dict:
    import json

    return json.loads(ACL_CODES.read_text(encoding="utf-8"))


def _error(id_: str, target: str, title: str, cause: str, fix: str, source: str, example: str,
           confidence: str = "documented") -> dict:
    return {"id": id_, "target": target, "title": title, "cause": cause, "fix": fix, "source": source,
            "example": example, "confidence": confidence}


def vendors_in(text: str) -> set:
    """The vendors whose stack the text names (kb/error_families.toml [vendor.*] words, and the libraries it
    names); "cuda" is never one of them."""
    low = text.lower()
    tokens = set(_TOKEN.findall(low)) | set(_PART.findall(low))
    found = {name for name, v in _data()["vendor"].items() if tokens & set(v["words"])}
    for lib in _LIBRARY.findall(text):
        entry = _library(lib)
        if entry is not None and entry["vendor"] != "cuda":
            found.add(entry["vendor"])
    return found


def _library(name: str) -> Optional[dict]:
    low = name.lower()
    return next((e for e in _data()["library"] if any(low.startswith(p) for p in e["prefixes"])), None)


def family_errors(text: str, covered: set) -> list:
    """[(line, fields)] for the lines of `text` (1-based) not in `covered` that a family explains: the fields of a
    known error (explain.KnownError's, less its patterns)."""

    vendors = vendors_in(text)
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if n in covered:
            continue
        error = _explain_line(line, vendors)
        if error is not None:
            out.append((n, error))
    return out


def _explain_line(line: str, vendors: set) -> Optional[dict]:
    m = _NOT_LINKED.search(line)
    if m and m.group(1).lower() == "xpu":
        return _error("family:not-linked-xpu", "xpu", "This torch has no XPU support",
                          "The torch in use was built without XPU devices: a CPU or CUDA wheel, or (torch 2.4 and "
                          "older) Intel Extension for PyTorch was not imported, which adds them.",
                          "Install torch's XPU build (pip install torch --index-url https://download.pytorch.org/whl/xpu), "
                          "or with IPEX on torch 2.4 or older `import intel_extension_for_pytorch` before using 'xpu'.",
                          "torch's message (c10: 'PyTorch is not linked with support for xpu devices')", line.strip())
    m = _IPEX_VERSION.search(line)
    if m:
        return _error("family:ipex-torch-version", "xpu", "IPEX was built for another torch",
                          f"Intel Extension for PyTorch checks the torch it runs with: it needs {m.group(1)}, and "
                          f"torch {m.group(2)} is installed.",
                          f"Install torch {m.group(1).rstrip('.*')} (and the torchvision/torchaudio of the same "
                          "release), or the IPEX release built for the installed torch (Intel's installation table "
                          "pairs them).", "intel_extension_for_pytorch's own version check message", line.strip())
    m = _CPU_FALLBACK.search(line)
    if m:
        device = m.group(2).lower()
        return _error("family:cpu-fallback", device if device in ("npu", "mlu", "musa", "xpu") else "any",
                          f"{m.group(1)} runs on the CPU (a warning, not an error)",
                          f"The {m.group(2)} backend has no kernel for {m.group(1)}; the vendor's CPU fallback copies its "
                          "inputs to the host, runs it there and copies the results back. The run goes on, slower.",
                          "Nothing to fix for correctness. If it is in a hot loop, replace the op with one the device "
                          "has (`torchport ops check` lists them), or move that step off the device yourself.",
                          "torch's CPU fallback warning for a PrivateUse1 backend", line.strip(), confidence="documented")
    m = _HCCL_CODE.search(line)
    if m and m.group(1) in _data()["hccl_codes"]:
        meaning = _data()["hccl_codes"][m.group(1)]
        return _error(f"family:hccl-{m.group(1)}", "npu", f"HCCL returned {meaning.split(':')[0]}",
                          f"An HCCL collective (or communicator set-up) returned {m.group(1)}, {meaning}. HCCL's own "
                          "lines around it (and the plog of each rank: ~/ascend/log/debug/plog) name the failing step; "
                          "with several ranks, the first rank that failed is the cause and the others follow.",
                          "Read the first [ERROR] HCCL line of the first failing rank (ASCEND_GLOBAL_LOG_LEVEL=1 makes "
                          "plogs verbose); check that every rank runs the same CANN and torch_npu, the devices' "
                          "network (hccn_tool) and the ports (HCCL_IF_IP, HCCL_CONNECT_TIMEOUT for slow starts).",
                          _data()["hccl_codes"]["source"], line.strip())
    m = _ACL_CODE.search(line)
    if m and m.group(1) in _acl_codes()["codes"]:
        code, meaning = m.group(1), _acl_codes()["codes"][m.group(1)]
        return _error(f"family:acl-{code}", "npu", f"The Ascend runtime returned {code}: {meaning}",
                          f"torch_npu reports the return code of the ACL call that failed: {code} is \"{meaning}\". "
                          "The detail (which operator or device, and why) is in the Ascend log of that process.",
                          "Read the [ERROR] lines around the failure in the plog (~/ascend/log/debug/plog, "
                          "ASCEND_GLOBAL_LOG_LEVEL=3 keeps errors); ASCEND_LAUNCH_BLOCKING=1 makes the failing operator "
                          "the one reported; check that the driver, CANN and torch_npu are one release's.",
                          _acl_codes()["source"], line.strip())
    if _MISSING_WORDS.search(line):
        for lib in _LIBRARY.findall(line):
            entry = _library(lib)
            if entry is None:
                return _unknown_library(lib, line)
            cause = entry["cause"]
            if entry["vendor"] == "cuda":
                on = ", ".join(sorted(vendors)) or "this machine"
                title = f"{lib}: a CUDA build of a package on {on}"
            elif "undefined symbol" in line.lower():   # found, but not the release the caller was built against
                title = f"{lib} was built against another release (undefined symbol; part of {entry['package']})"
                cause = (f"{lib} was found, but it needs a symbol the libraries loaded with it do not have: it was "
                         "built against another release of what it links (torch, or the vendor's SDK). Otherwise: "
                         + cause)
            else:
                title = f"{lib} is missing: it is part of {entry['package']}"
            return _error(f"library:{entry['prefixes'][0]}", entry["vendor"] if entry["vendor"] != "cuda" else "any",
                              title, cause, entry["fix"], entry["source"], line.strip(),
                              confidence=entry.get("confidence", "documented"))
    return None


def _unknown_library(lib: str, line: str) -> dict:
    return _error("library:unknown", "any", f"{lib} is not found",
                      f"A shared library the program (or an extension it imports) links is not on the library path; "
                      f"torchport does not know which package ships {lib}.",
                      f"Find the package that provides it (`find / -name '{lib.split('.so')[0]}*' 2>/dev/null`, "
                      "`pip show` of the failing import), install it, or add its folder to LD_LIBRARY_PATH; an "
                      "extension built for another torch must be rebuilt.", "torchport (no vendor source names it)",
                      line.strip(), confidence="weak")
