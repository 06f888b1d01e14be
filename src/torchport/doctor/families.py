"""Error families `torchport explain` reads by structure (kb/error_families.toml): whose stack a log comes from,
which vendor package owns a shared library a log says is missing, what a vendor's code means (HCCL's return codes,
the Ascend runtime's return codes, torch_npu's ERRmmccc codes, CANN's EE1001/EI0006/EZ9999 codes; the tables in
kb/acl_codes.json and kb/cann_codes.json), and messages with a parameter (a device type torch was built without,
the torch version IPEX needs, an op a vendor runs on the CPU).  Each answer is the fields of a known error made from the data, so `explain` reports it like an entry of
kb/errors.toml.
"""
from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from ..core.tomlfile import tomllib

KB = Path(__file__).resolve().parents[1] / "kb" / "error_families.toml"
_TOKEN = re.compile(r"[a-z][a-z0-9_.+-]*")
_PART = re.compile(r"[a-z][a-z0-9]*")   # the parts of a token: ascend_transport.so names "ascend"
# a library a log names: "libascend_hal.so: cannot open shared object file", "libmupti.so.0.9", "ascend_transport.so"
# (ASCII lookarounds: "提示libmupti.so.0.9找不到" names libmupti.so.0.9)
_LIBRARY = re.compile(r"(?<![A-Za-z0-9_.+-])([A-Za-z_][A-Za-z0-9_+-]*\.so(?:\.[0-9][0-9.]*)?)(?![A-Za-z0-9_-])")
_MISSING_WORDS = re.compile(r"cannot open shared object|no such file|not found|cannot find|could not (?:load|find|open)"
                            r"|undefined symbol|failed to load|找不到|缺少|缺失", re.IGNORECASE)
_HCCL_CODE = re.compile(r"HCCL[^\n]{0,300}?error code is (\d+)", re.IGNORECASE)
_ACL_CODE = re.compile(r"error code is (\d{6})\b", re.IGNORECASE)
ACL_CODES = Path(__file__).resolve().parents[1] / "kb" / "acl_codes.json"
CANN_CODES = Path(__file__).resolve().parents[1] / "kb" / "cann_codes.json"
# CANN's code: E (W: a warning), the module's character, 4 digits, then ":" or the end of a word ("EZ9999: Inner Error!")
_CANN_CODE = re.compile(r"(?<![\w-])([EW][A-Z0-9]\d{4})(?![\w-])")
_PTA_CODE = re.compile(r"(?<![\w-])ERR(\d\d)(\d{3})(?![\w-])")   # torch_npu's ERR00100 PTA call acl api failed
_STAMP = re.compile(r"^(?:\[PID:\s*\d+\]\s*)?(?:\d{4}-\d\d-\d\d(?:[-\s][\d:.-]+)?\s*)?")   # "[PID: 1] 2025-01-01-10:00:00.123 "
_COULD_NOT_RUN = re.compile(r"Could not run '([\w:.]+)' with arguments from the '(\w+)' backend")
_NO_DTYPE = re.compile(r"(?<![\w:.])\"?([\w:.]+)\"? not implemented for '(\w+)'")   # AT_DISPATCH's "addmm_cuda" not implemented for 'Bool'
_AUTOLOAD = re.compile(r"Failed to load the backend extension: (\w+(?:\.\w+)*)")
_CANN_PAIR = re.compile(r"CANN package version (\S+) and PyTorch version (\S+) do not match")
_VENDOR_PACKAGE = re.compile(r"\b(torch_npu|torch_mlu|torch_musa)\b")
_TORCH_VERSION_CHECK = re.compile(r"(?:torch|pytorch) version\b[^\n]{0,200}?\b(?:must|should|requires?|needs?|but|expected)\b",
                                  re.IGNORECASE)
_SYMBOL_VERSION = re.compile(r"version [`'\u2018][\w.]{1,40}['\u2019] not found")   # `GLIBCXX_3.4.30' not found
_UNDEFINED = re.compile(r"undefined symbol:?\s*([\w$.@]+)", re.IGNORECASE)
_LINK_UNDEFINED = re.compile(r"undefined reference to [`'\u2018\"]([^'\u2019\"\n]{1,500})['\u2019\"]")
_NO_MODULE = re.compile(r"No module named ['\"]?([\w.]+)['\"]?")
_NO_ATTRIBUTE = re.compile(r"module ['\"]((?:torch_npu|torch_mlu|torch_musa|intel_extension_for_pytorch|triton|torch\.(?:npu|"
                           r"mlu|musa|xpu))(?:\.\w+)*)['\"] has no attribute ['\"](\w+)['\"]|cannot import name ['\"](\w+)['\"] "
                           r"from ['\"]((?:torch_npu|torch_mlu|torch_musa|intel_extension_for_pytorch|triton)(?:\.\w+)*)['\"]")
_NO_HEADER = re.compile(r"fatal error: ['\"]?([\w./+-]+\.(?:h|hpp|hxx|cuh|muh))['\"]?:? (?:No such file|file not found)",
                        re.IGNORECASE)
_DYNAMO = re.compile(r"torch\._(?:dynamo|inductor)\.exc\.(\w+)|BackendCompilerFailed: backend='(\w+)'")
_PORT_TAKEN = re.compile(r"Address already in use|errno:? ?98\b|EADDRINUSE|listen on ip\[[^\]\n]{0,80}\] and "
                         r"(?:specific )?port\[(\d+)\] fail", re.IGNORECASE)
_STORE_TIMEOUT = re.compile(r"client socket has timed out after \d+m?s while trying to connect to|Timed out after \d+ "
                            r"seconds waiting for clients\. (\d+)/(\d+) clients joined", re.IGNORECASE)
_GENERATOR_DEVICE = re.compile(r"Expected a '(\w+)' device type for generator but found '(\w+)'")
_SOC = re.compile(r"Unsupported soc version:? ?([\w.-]*)|\b(?:soc|chip)[ _]?(?:version|name|type)?\b[^\n]{0,80}?"
                  r"(?:not (?:be )?supported|unsupported|does not match|mismatch)", re.IGNORECASE)
_DS_ACCELERATOR = re.compile(r"Setting ds_accelerator to (cuda|cpu)\b")
_VENDOR_LOG = re.compile(r"\[(CNNL|MLUOP|MLU-OPS|MLU_OPS|CNCL|CNRT)\]\s*\[Error\]:?\s*\[?(\w*)\]?\s*([^\n]{0,300})",
                         re.IGNORECASE)
_MUDNN_LOG = re.compile(r"ERROR#\s*(\w+) in (\w+)(?:::(\w+))?")
_WIN_DLL = re.compile(r"WinError 126", re.IGNORECASE)
_DLL_NAME = re.compile(r"Error loading \"?([^\"\n]{1,300}?\.dll)", re.IGNORECASE)
_MANGLED = re.compile(r"^_ZN?K?(\d+)")   # _ZN3c1010TensorTypeC1Ev -> 3 -> "c10"
_SIZE = r"([\d.]+) ?([KMGT]i?B|bytes)"
_OOM_ASKED = re.compile(r"out of memory\. Tried to allocate " + _SIZE, re.IGNORECASE)
_OOM_FREE = re.compile(r"of which " + _SIZE + r" is free|;\s*" + _SIZE + r" free\b", re.IGNORECASE)
# "(GPU 0; 15.11 GiB total capacity; ... 13.90 GiB reserved in total": a size's digits bounded, not rescanned
_OOM_TOTAL = re.compile(r"(?<![\d.])([\d.]{1,12}) ?([KMGT]i?B|bytes) total capacity", re.IGNORECASE)
_OOM_HELD = re.compile(r"(?<![\d.])([\d.]{1,12}) ?([KMGT]i?B|bytes) reserved in total", re.IGNORECASE)
_ONE_BLOCK_LIMIT = re.compile(r"can NOT allocate memory block with size larger than (\w+)", re.IGNORECASE)
_CANN_DTYPE = re.compile(r"\bDT_([A-Z0-9]+)\b")   # a dtype as CANN names it, on a line that says it is refused
_REFUSED = re.compile(r"not support|not implemented|unsupported", re.IGNORECASE)
_CANN_OP = re.compile(r"\baclnn([A-Z]\w*?)(?:GetWorkspaceSize)?\b|\bOp(?:type)? \[?(\w+)|\bop\s*\[(\w+)\]")
_EXCEPTION = re.compile(r"^\W*(?:\[rank\d+\]:\s*)?[A-Za-z_][\w.]*(?:Error|Exception):\s*\S")
_DCMI = re.compile(r"\b(?:ret|return code|error code|errno)\s*(?:is|=|:)?\s*(-80\d\d)\b", re.IGNORECASE)
_ACL_TEXT = re.compile(r"\[Error\]:\s*(.+?)\s*$")   # torch_npu prints a code's meaning as "[Error]: <meaning>"
_NOT_LINKED = re.compile(r"not linked with support for (\w+) devices", re.IGNORECASE)
_IPEX_VERSION = re.compile(r"needs to work with PyTorch ([\d.*]+),? but PyTorch ([\w.+-]+) is found", re.IGNORECASE)
# where a log line's message starts: an exception's or warning's name, or the end of a "[...] " log prefix
_MESSAGE_START = re.compile(r"(?<![\w.])[A-Za-z_][\w.]{0,100}(?:Error|Exception|Warning)\b:?|\] ")
_CPU_FALLBACK = re.compile(r"operator '([\w:.]+)' is not currently supported on the (\w+) backend and will fall back "
                           r"to run on the CPU", re.IGNORECASE)


@lru_cache(maxsize=1)
def _data() -> dict:
    return tomllib.loads(KB.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _acl_codes() -> dict:
    import json

    return json.loads(ACL_CODES.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _statuses() -> tuple:
    return tuple((re.compile(s["pattern"], re.IGNORECASE), s) for s in _data()["status"])


@lru_cache(maxsize=1)
def _cann_codes() -> dict:
    import json

    return json.loads(CANN_CODES.read_text(encoding="utf-8"))


def _error(id_: str, target: str, title: str, cause: str, fix: str, source: str, example: str,  # noqa: PLR0913
           confidence: str = "documented", defers: bool = False) -> dict:
    return {"id": id_, "target": target, "title": title, "cause": cause, "fix": fix, "source": source,
            "example": example, "confidence": confidence, "defers": defers}


@lru_cache(maxsize=4)   # explain asks for one log's vendors several times; a str's hash is computed once
def vendors_in(text: str) -> frozenset:
    """The vendors whose stack the text names (kb/error_families.toml [vendor.*] words, and the libraries it
    names); "cuda" is never one of them."""
    low = text.lower()
    tokens = set(_TOKEN.findall(low)) | set(_PART.findall(low))
    found = {name for name, v in _data()["vendor"].items() if tokens & set(v["words"])}
    found |= {name for name, models in _models() if models.search(low)}
    for lib in _LIBRARY.findall(text):
        entry = _library(lib)
        if entry is not None and entry["vendor"] != "cuda":
            found.add(entry["vendor"])
    return frozenset(found)


@lru_cache(maxsize=1)
def _models() -> tuple:
    """(vendor, regex) of each vendor's device models (Ascend910B4, MLU370, MTT S80, Arc A770...) and the marks of
    its own log format (CANN's plog lines, "[ERROR] RUNTIME(1234,python):")."""
    return tuple((name, re.compile(rf"(?<![\w-])(?:{v['models']})(?![\w-])" + (f"|{v['marks']}" if "marks" in v else ""),
                                   re.IGNORECASE))
                 for name, v in _data()["vendor"].items() if v.get("models"))


def message_of(line: str) -> str:
    """The message part of a log line: from its exception's name on ("RuntimeError: ..."), else after its last "] "
    log prefix, else the whole line."""
    starts = list(_MESSAGE_START.finditer(line))
    named = next((m for m in starts if m.group(0) != "] "), None)
    start = named.start() if named else starts[-1].end() if starts else 0
    return line[start:].strip()


def vendor_facts(name: str) -> dict:
    """A vendor's [vendor.*] table: its title, package, device type, device tool and tracing advice."""
    return _data()["vendor"].get(name, {})


def _library(name: str) -> Optional[dict]:
    low = name.lower()
    return next((e for e in _data()["library"] if any(low.startswith(p) for p in e["prefixes"])), None)


def refinements(text: str) -> list:
    """[(line, fields)] for lines whose own parameters say more than any entry that matches them: an out-of-memory
    error whose free memory exceeds the request, a platform's limit on one allocation, a CANN operator refusing a
    dtype.  `explain` puts each in place of the entries matching its line."""
    vendors = vendors_in(text)
    low = text.lower()
    words = set(_TOKEN.findall(low)) | set(_PART.findall(low))
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for refine in REFINERS:
            error = refine(line, vendors, words)
            if error is not None:
                out.append((n, error))
                break
    return out


def _bytes(number: str, unit: str) -> float:
    return float(number) * 1024 ** "BKMGT".index(unit[0].upper() if unit != "bytes" else "B")


def _oom_with_free_memory(line: str, vendors: AbstractSet[str], words: set) -> Optional[dict]:
    asked, free = _OOM_ASKED.search(line), _OOM_FREE.search(line)
    if not (asked and free):
        return None
    number, unit = (free.group(1), free.group(2)) if free.group(1) else (free.group(3), free.group(4))
    if _bytes(*asked.groups()) > _bytes(number, unit) * 0.8:
        return None   # the memory is used up: the entries' advice holds
    on = next(iter(sorted(vendors))) if len(vendors) == 1 else "any"
    return _error("family:oom-with-free-memory", on,
                  f"Out of memory with {number} {unit} free for a {asked.group(1)} {asked.group(2)} request",
                  "The device says more memory is free than was asked for, so the memory is not used up: the free "
                  "memory is in pieces smaller than the request (fragmentation), or the request is over the device's "
                  "limit for one allocation (Intel GPUs without 2D block arrays allow at most 4 GB in one block; "
                  "Level Zero reports the limit as maxMemAllocSize), or another allocator in the process holds it.",
                  "Split the large tensor (a smaller batch or sequence chunk, or tiling the op) so that no single "
                  "allocation is that large; against fragmentation set PYTORCH_<DEVICE>_ALLOC_CONF="
                  "expandable_segments:True where the device's allocator supports it (the CUDA-like ones do) and call "
                  "empty_cache() between phases.",
                  "the out-of-memory message of torch's caching allocators (\"Tried to allocate X ... of which Y is "
                  "free\", c10/cuda and c10/xpu CachingAllocator; the vendors' copies print the same)", line.strip())


def _one_block_limit(line: str, vendors: AbstractSet[str], words: set) -> Optional[dict]:
    m = _ONE_BLOCK_LIMIT.search(line)
    if not m:
        return None
    return _error("family:one-block-limit", "xpu", f"One allocation over {m.group(1)} is refused on this GPU",
                  f"Intel GPUs without 2D block array support (the Arc A-series and Flex ones IPEX calls ATS-M) cannot "
                  f"hold one memory block over {m.group(1)}, whatever memory is free: the request is refused by "
                  "design, not for lack of memory.",
                  "Keep every tensor under that size: a smaller batch, sequence or image size, or the op run in "
                  "chunks (attention slicing, tiled VAE decoding in diffusion pipelines).",
                  "intel/intel-extension-for-pytorch csrc/gpu/runtime/CachingDeviceAllocator.cpp (has_2d_block_array, "
                  "the 4 GB stateful limit)", line.strip())


def _cann_dtype(line: str, vendors: AbstractSet[str], words: set) -> Optional[dict]:
    m = _CANN_DTYPE.search(line)
    if not m or not vendors <= {"npu"} or not _REFUSED.search(line):
        return None
    dtype = m.group(1)
    named = _CANN_OP.search(line)
    op = next((g for g in named.groups() if g), "the operator") if named else "the operator"
    return _error("family:cann-dtype", "npu", f"{op} does not take {dtype} on this NPU",
                  f"CANN's {op} kernel was called with a {dtype} input, which this chip (or this CANN release) does "
                  "not support for it: the message names the dtype. torch_npu counts bfloat16 as supported only from "
                  "the Ascend 910B on (torch.npu.is_bf16_supported()); float64 and some integer types are missing "
                  "for many operators.",
                  "Cast the inputs of that operator to a dtype it takes (float32 or float16; int32 for indices) and "
                  "back after it, or use a dtype the chip supports for the whole model (float16 instead of bfloat16 "
                  "where is_bf16_supported() is False); `torchport ops check --to npu` lists what the vendor's op list "
                  "says.",
                  "CANN's operator messages (\"DT_<TYPE> ... not supported\", the GE data type names DT_FLOAT, DT_BF16, "
                  "DT_DOUBLE ...); Ascend/pytorch torch_npu/csrc/core/npu/NpuVariables.cpp:105-107 (bf16 from "
                  "Ascend910B1)", line.strip())


def _xpu_large_request(line: str, vendors: AbstractSet[str], words: set) -> Optional[dict]:
    asked = _OOM_ASKED.search(line)
    if not (asked and "xpu" in line.lower() and _bytes(*asked.groups()) >= 4 * 1024 ** 3):
        return None
    total, held = _OOM_TOTAL.search(line), _OOM_HELD.search(line)
    if total and held and _bytes(*asked.groups()) > _bytes(*total.groups()) - _bytes(*held.groups()):
        return None   # more than the card has left: exhaustion, not the one-block limit
    return _error("family:xpu-large-allocation", "xpu", f"One {asked.group(1)} {asked.group(2)} allocation on an "
                  "Intel GPU", "A request of 4 GB or more in one block is over the Level Zero driver's default limit "
                  "for one allocation on many Intel GPUs (and a lower one under WSL2), whatever memory is free: the "
                  "out-of-memory error is that limit, not exhaustion.",
                  "Keep each tensor under 4 GB (a smaller batch or sequence, chunked attention, tiled decoding), or "
                  "set UR_L0_ENABLE_RELAXED_ALLOCATION_LIMITS=1 (Unified Runtime's Level Zero adapter) to allow larger "
                  "blocks where the driver supports it; on WSL2, prefer native Linux for large models.",
                  "the Level Zero driver's maximum allocation size (maxMemAllocSize); intel/intel-extension-for-pytorch "
                  "csrc/gpu/runtime/CachingDeviceAllocator.cpp (the 4 GB limit)", line.strip(), confidence="weak")


SERVERS = {"vllm": "--gpu-memory-utilization", "vllm_ascend": "--gpu-memory-utilization",
           "sglang": "--mem-fraction-static", "lmdeploy": "--cache-max-entry-count", "mindie": "its npuMemSize setting"}


def _oom_in_server(line: str, vendors: AbstractSet[str], words: set) -> Optional[dict]:
    """An out-of-memory error in an inference server, which reserves most of the device for its KV cache first."""
    server = next((w for w in SERVERS if w in words), None)
    if server is None or not _OOM_ASKED.search(line):
        return None
    on = next(iter(sorted(vendors))) if len(vendors) == 1 else "any"
    return _error("family:oom-in-server", on, f"Out of memory in {server}, which reserves the device's memory first",
                  f"{server} takes a fixed share of the device's memory for its KV cache when it starts, and what is "
                  "left must hold the model's activations, the graphs it captures and any draft model; the request "
                  "that failed did not fit in that rest.",
                  f"Lower the reserved share ({SERVERS[server]}), or the work per step (maximum sequences, model "
                  "length, prefill chunk size), or use more devices (tensor parallelism); other processes on the "
                  "device count too (npu-smi info / the vendor's tool).",
                  "the servers' memory settings (vLLM gpu_memory_utilization, SGLang mem_fraction_static, LMDeploy "
                  "cache_max_entry_count)", line.strip(), confidence="weak")


VENDOR_NAMESPACES = {"torch_ipex": "xpu", "ipex": "xpu", "npu": "npu", "torch_npu": "npu", "atb": "npu", "mlu": "mlu",
                     "torch_mlu": "mlu", "musa": "musa", "torch_musa": "musa"}


def _vendor_private_op(line: str, vendors: AbstractSet[str], words: set) -> Optional[dict]:
    """Could not run 'torch_ipex::X' ...: an operator of a vendor package's own namespace, not an aten one."""
    m = _COULD_NOT_RUN.search(line)
    namespace = m.group(1).split("::")[0] if m and "::" in m.group(1) else None
    if namespace not in VENDOR_NAMESPACES:
        return None
    assert m is not None   # namespace is None without a match
    package = {"ipex": "torch_ipex"}.get(namespace, namespace)
    return _error("family:vendor-private-op", VENDOR_NAMESPACES[namespace],
                  f"{m.group(1)} is an operator of {package}'s own, with no kernel for the '{m.group(2)}' backend",
                  f"{m.group(1)} belongs to the vendor package's namespace, not to torch's aten: the package registers "
                  "it for the devices and dtypes it supports, as an internal building block of its public API. It was "
                  f"called for '{m.group(2)}', which has no kernel for it in this release: called directly by user or "
                  "third-party code, or with inputs on another device, or from another release of the package.",
                  "Call the package's public API instead of the internal operator (for IPEX: "
                  "intel_extension_for_pytorch.llm.functional and ipex.optimize), with inputs on the device the "
                  "package serves, and the package release that pairs with your torch. A CPU fallback setting does not "
                  "help: the operator is the vendor's, not torch's.",
                  "torch's dispatcher message (\"Could not run '<ns>::<op>' with arguments from the '<backend>' "
                  "backend\"); the vendors' operator namespaces (torch_ipex::, npu::, mlu::, musa::)", line.strip())


REFINERS = (_xpu_large_request, _oom_with_free_memory, _one_block_limit, _oom_in_server, _cann_dtype,
            _vendor_private_op)


def family_errors(text: str, covered: set) -> list:
    """[(line, fields)] for the lines of `text` (1-based) not in `covered` that a family explains: the fields of a
    known error (explain.KnownError's, less its patterns)."""

    vendors = vendors_in(text)
    lines = text.splitlines()
    cann = _cann_in(lines) if vendors <= {"npu"} else []
    out, ids = [], set()
    for n, line in enumerate(lines, 1):
        if n in covered:
            continue
        error = _explain_line(line, vendors, Log(cann, lines[max(0, n - 4):n - 1], tuple(lines[n:n + 1])))
        if error is not None and error["id"] not in ids:   # a code every rank repeats is answered once
            ids.add(error["id"])
            out.append((n, error))
    return out


def _cann_in(lines: list) -> list:
    """[(line, code, what it says)] of the CANN codes in a log, first seen first, each code once: the first line of
    the code, and the first of its lines that says more than a header ("EZ9999: Inner Error!" is followed by
    "EZ9999: [PID: 1] ... <the operator's message>")."""
    table, modules = _cann_codes()["codes"], _data()["cann"]["modules"]
    found: dict[str, tuple[int, str]] = {}
    for n, line in enumerate(lines, 1):
        for m in _CANN_CODE.finditer(line):
            code = m.group(1)
            if code not in table and not (code.endswith("9999") and code[1] in modules):
                continue
            said = _STAMP.sub("", line[m.end():].lstrip(" :]")).strip(" :")
            first, text = found.get(code, (n, ""))
            if not text and said.lower().rstrip("!. ") not in ("inner error", "internal error", ""):
                text = said
            found[code] = (first, text)
    return sorted((n, code, text) for code, (n, text) in found.items())


def _cann_note(cann: list) -> str:
    """What the CANN codes of a log add to an answer about another line of it."""
    if not cann:
        return ""
    said = "; ".join(f"{code} at line {n}" + (f" ({rest[:120]})" if rest else "") for n, code, rest in cann[:3])
    return f" The CANN codes in this log say more, the first one most: {said}."


@dataclass(frozen=True)
class Log:
    """What a reader may need beyond its line: the log's CANN codes, the lines just before it and the one after it
    (where a library's "Reason:" goes on)."""
    cann: list[tuple[int, str, str]]   # _cann_in's
    before: list
    after: tuple = ()


def _what_failed(line: str, log: Log) -> str:
    """The message torch_npu reports its ERR code for: the text before "[ERROR]" on the line, or the exception line
    just above it."""
    head = line.split("[ERROR]")[0].strip(" :")
    said = head if len(head) > 15 else next((b.strip() for b in reversed(log.before) if _EXCEPTION.search(b)), "")
    return f" What failed, as torch_npu says it: \"{said[:300]}\"." if said else ""


def _explain_line(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    """The first family that reads `line` (READERS, in order), or None."""
    for reader in READERS:
        error = reader(line, vendors, log)
        if error is not None:
            return error
    return None


def _not_linked_xpu(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _NOT_LINKED.search(line)
    if not (m and m.group(1).lower() == "xpu"):
        return None
    return _error("family:not-linked-xpu", "xpu", "This torch has no XPU support",
                  "The torch in use was built without XPU devices: a CPU or CUDA wheel, or (torch 2.4 and "
                  "older) Intel Extension for PyTorch was not imported, which adds them.",
                  "Install torch's XPU build (pip install torch --index-url https://download.pytorch.org/whl/xpu), "
                  "or with IPEX on torch 2.4 or older `import intel_extension_for_pytorch` before using 'xpu'.",
                  "torch's message (c10: 'PyTorch is not linked with support for xpu devices')", line.strip())


def _backend_autoload(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _AUTOLOAD.search(line)
    if not m:
        return None
    package = m.group(1)
    owner = next((v for v, data in _data()["vendor"].items() if package.lower() in data["words"]), "any")
    return _error("family:backend-autoload", owner, f"torch could not import {package} at start-up",
                  f"torch (2.5 and later) imports the device packages installed beside it when it starts "
                  f"(their 'torch.backends' entry point); importing {package} failed. The reason is the error "
                  "printed with it (often a shared library that is not found, or a torch the package was not "
                  "built for).",
                  f"Run `python -c \"import {package}\"` to see that error and fix it; if you do not use "
                  f"{package} in this environment, uninstall it or set TORCH_DEVICE_BACKEND_AUTOLOAD=0.",
                  "torch/__init__.py _import_device_backends (\"Failed to load the backend extension: <name>. You "
                  "can disable extension auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0.\")", line.strip())


def _cann_torch_npu_pair(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _CANN_PAIR.search(line)
    if not m:
        return None
    return _error("family:cann-torch-npu-pair", "npu", f"CANN {m.group(1)} is not a release torch_npu {m.group(2)} "
                  "is paired with", "torch_npu checks the installed CANN against its table of the CANN releases each "
                  f"torch_npu release supports: CANN {m.group(1)} is not listed for torch_npu {m.group(2)}. Operators "
                  "may be missing or fail (aclnn calls that are not found, undefined symbols, EZ9999 errors).",
                  "Install the CANN release the torch_npu README's version table pairs with this torch_npu (or "
                  "the torch_npu release paired with your CANN), then source its set_env.sh again.",
                  "Ascend/pytorch@9e73e708 torch_npu/_init/registry/registry_manager.py:58-62 (cann_pytorch_version_map)",
                  line.strip())


def _vendor_torch_version(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _VENDOR_PACKAGE.search(line)
    if not (m and _TORCH_VERSION_CHECK.search(line)):
        return None
    package = m.group(1)
    return _error("family:vendor-torch-version", package.split("_")[1], f"{package} was built for another torch",
                  f"{package} is built against one torch release and checks the torch it is imported with; the "
                  "installed torch is not that release.",
                  f"Install the torch release {package}'s release notes pair with it (and torchvision/torchaudio of "
                  f"the same release), or the {package} release built for the installed torch.",
                  "MooreThreads/torch_musa@8b583b3 torch_musa/__init__.py:26-39 (the torch version check); each "
                  "vendor's release table pairs one torch with one package release", line.strip())


def _ipex_torch_version(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _IPEX_VERSION.search(line)
    if not m:
        return None
    return _error("family:ipex-torch-version", "xpu", "IPEX was built for another torch",
                  f"Intel Extension for PyTorch checks the torch it runs with: it needs {m.group(1)}, and "
                  f"torch {m.group(2)} is installed.",
                  f"Install torch {m.group(1).rstrip('.*')} (and the torchvision/torchaudio of the same "
                  "release), or the IPEX release built for the installed torch (Intel's installation table "
                  "pairs them).", "intel_extension_for_pytorch's own version check message", line.strip())


def _cpu_fallback(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _CPU_FALLBACK.search(line)
    if not m:
        return None
    device = m.group(2).lower()
    return _error("family:cpu-fallback", device if device in ("npu", "mlu", "musa", "xpu") else "any",
                  f"{m.group(1)} runs on the CPU (a warning, not an error)",
                  f"The {m.group(2)} backend has no kernel for {m.group(1)}; the vendor's CPU fallback copies its "
                  "inputs to the host, runs it there and copies the results back. The run goes on, slower.",
                  "Nothing to fix for correctness. If it is in a hot loop, replace the op with one the device "
                  "has (`torchport ops check` lists them), or move that step off the device yourself.",
                  "torch's CPU fallback warning for a PrivateUse1 backend", line.strip(), confidence="documented")


def _hccl_code(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _HCCL_CODE.search(line)
    if not (m and m.group(1) in _data()["hccl_codes"]):
        return None
    meaning = _data()["hccl_codes"][m.group(1)]
    return _error(f"family:hccl-{m.group(1)}", "npu", f"HCCL returned {meaning.split(':')[0]}",
                  f"An HCCL collective (or communicator set-up) returned {m.group(1)}, {meaning}. HCCL's own "
                  "lines around it (and the plog of each rank: ~/ascend/log/debug/plog) name the failing step; "
                  "with several ranks, the first rank that failed is the cause and the others follow.",
                  "Read the first [ERROR] HCCL line of the first failing rank (ASCEND_GLOBAL_LOG_LEVEL=1 makes "
                  "plogs verbose); check that every rank runs the same CANN and torch_npu, the devices' "
                  "network (hccn_tool) and the ports (HCCL_IF_IP, HCCL_CONNECT_TIMEOUT for slow starts).",
                  _data()["hccl_codes"]["source"], line.strip())


def _acl_return_code(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    code = _acl_code(line) if vendors <= {"npu"} else None
    if code is None:
        return None
    meaning = _acl_codes()["codes"][code]
    return _error(f"family:acl-{code}", "npu", f"The Ascend runtime returned {code}: {meaning}",
                  f"torch_npu reports the return code of the ACL call that failed: {code} is \"{meaning}\". "
                  "The detail (which operator or device, and why) is in the Ascend log of that process."
                  + _cann_note(log.cann),
                  "Read the [ERROR] lines around the failure in the plog (~/ascend/log/debug/plog, "
                  "ASCEND_GLOBAL_LOG_LEVEL=3 keeps errors); ASCEND_LAUNCH_BLOCKING=1 makes the failing operator "
                  "the one reported; check that the driver, CANN and torch_npu are one release's.",
                  _acl_codes()["source"], line.strip())


def _library_status(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    for pattern, status in _statuses():
        m = pattern.search(line)
        if m and (not vendors or status["vendor"] in vendors):
            return _status_error(status, m.group(1).strip(), line)
    return None


def _could_not_run(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _COULD_NOT_RUN.search(line)
    return _no_kernel(m.group(1), m.group(2), vendors, line) if m else None


def _not_implemented_for(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _NO_DTYPE.search(line)
    if m and (vendors or "cpu" not in m.group(1).lower()):
        return _no_dtype(m.group(1), m.group(2), vendors, line)
    return None


def _cann_code(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _CANN_CODE.search(line)
    hit = next((c for c in log.cann if m and c[1] == m.group(1)), None)
    return _cann_error(*hit, line) if hit is not None else None


def _pta_code(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _PTA_CODE.search(line)
    return _pta_error(m.group(1), m.group(2), line, log) if m and vendors <= {"npu"} else None


def _dcmi_code(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _DCMI.search(line)
    name = _cann_codes()["dcmi"]["codes"].get(m.group(1)) if m and vendors <= {"npu"} else None
    if name is None:
        return None
    assert m is not None   # name is None without a match
    meaning = _data()["dcmi"]["names"].get(name, name.lower().replace("_", " "))
    return _error(f"family:dcmi{m.group(1)}", "npu", f"The NPU driver returned {m.group(1)} ({name})",
                  f"The driver's management library (DCMI, which npu-smi and torch_npu's device queries use) "
                  f"returned {m.group(1)}, {name}: {meaning}.", _data()["dcmi"]["fix"],
                  _cann_codes()["dcmi"]["source"], line.strip())


def _missing_library(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    if not _MISSING_WORDS.search(line) or _SYMBOL_VERSION.search(line):   # a runtime too old is no missing library
        return None
    for lib in _LIBRARY.findall(line):
        entry = _library(lib)
        if entry is None:
            return _unknown_library(lib, line)
        cause = entry["cause"]
        if entry["vendor"] == "cuda":
            on = ", ".join(sorted(vendors)) or "this machine"
            title = f"{lib}: a CUDA build of a package on {on}"
        elif "undefined symbol" in line.lower() or "符号" in line:   # found, but not the release it was built against
            symbol = _symbol_owner(line)
            if symbol is not None:
                return _undefined_symbol(lib, entry, symbol, vendors, line)
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


def _acl_code(line: str) -> Optional[str]:
    """The ACL return code a line gives: "error code is 507015", or its meaning after "[Error]:"."""
    codes = _acl_codes()["codes"]
    m = _ACL_CODE.search(line)
    if m and m.group(1) in codes:
        return m.group(1)
    m = _ACL_TEXT.search(line)
    if m:
        text = m.group(1).rstrip(".").lower()
        return next((code for code, meaning in codes.items() if meaning and meaning.rstrip(".").lower() == text), None)
    return None


def _cann_error(n: int, code: str, rest: str, line: str) -> dict:
    entry = _cann_codes()["codes"].get(code)
    module = _data()["cann"]["modules"][code[1]]
    internal = code.endswith("9999") and (entry is None or entry["message"] in ("", "%s"))
    title_words = (entry or {}).get("title", "") or ("Inner error" if internal else "")
    kind = "warning" if code[0] == "W" else "error"
    if internal:
        what = (f"{code} is an internal {kind} of {module['name']}: it has no template, the text printed with it is "
                "the module's own message" + (f": \"{rest[:300]}\"" if rest else " (on the lines after it)") + ".")
    else:
        what = (f"{code} is {module['name']}'s {kind} \"{title_words.replace('_', ' ')}\", printed as \""
                f"{entry['message']}\"" + (f"; here: \"{rest[:300]}\"" if rest else "") + ".")
    low = title_words.lower()
    hint = next((h["hint"] for h in _data()["cann"]["title_hint"] if any(w in low for w in h["words"])), "")
    title = f"CANN {code}: {module['name']}" + (f", {title_words.replace('_', ' ')}" if title_words else "")
    return _error(f"family:cann-{code}", "npu", title,
                  what + " In a CANN log, the first of these codes is the one to read; the torch_npu error "
                  "(ERR00100...) and the Python traceback after it follow from it.",
                  (hint + " " if hint else "") + module["fix"],
                  f"{code}: " + (_cann_codes()["sources"][entry["source"]] if entry else "the code's form") + "; "
                  + _data()["cann"]["source"], line.strip())


def _pta_error(module: str, number: str, line: str, log: Log) -> dict:
    pta = _acl_codes()["pta"]
    sub = pta["submodules"].get(module, {"words": f"module {module}"})["words"]
    meaning = pta["codes"].get(number, {"words": f"code {number}"})["words"]
    calls = {"100": "ACL (the Ascend runtime)", "200": "HCCL", "300": "GE (graph mode)"}
    if number in calls:
        cause = (f"torch_npu's {sub} part called {calls[number]} and the call failed. ERR{module}{number} says only that; "
                 "the reason is the return code and the CANN code (EZ9999, EE1001...) printed with it, or the plog.")
        fix = ("Read the CANN code or the \"[Error]:\" line printed before this one (ASCEND_LAUNCH_BLOCKING=1 makes the "
               "failing operator the one reported), then the plog (~/ascend/log/debug/plog); check that the driver, "
               "CANN and torch_npu are one release's.")
    else:
        cause = (f"torch_npu's {sub} part reports \"{meaning}\" (ERR{module}{number}); the text before the code on that "
                 "line says what it checked.")
        fix = {"007": "Use another API or argument: this torch_npu does not support the one the message names.",
               "006": "Memory ran out or was misused: lower the batch size or free what other processes hold (npu-smi info).",
               "008": "A file or resource torch_npu looks for is missing: check the CANN environment (set_env.sh) and the paths the message names.",
               "011": "Something waited past its limit: with several ranks, look for the rank that failed first.",
               "012": "Check the permissions of the files and devices the message names (/dev/davinci*, the log folder)."}.get(
                   number, "Read the message before the code: it names the argument or resource; the source of this "
                   "code (torch_npu's troubleshooting guide, 'Error Code') lists what each code means.")
    return _error(f"family:pta-ERR{module}{number}", "npu", f"torch_npu ERR{module}{number}: {sub} {meaning}",
                  cause + _what_failed(line, log) + _cann_note(log.cann), fix, pta["source"], line.strip(),
                  defers=bool(log.cann) and number in calls)


def _status_error(status: dict, said: str, line: str) -> dict:
    low = said.lower()
    meaning = next((text for words, text in status["statuses"] if words in low), None)
    what = f"{status['library']} reported \"{said[:200]}\"" + (f": {meaning}." if meaning else ".")
    return _error(f"family:status-{status['id']}", status["vendor"],
                  f"{status['library'].split(',')[0]}: {said[:80]}", what, status["fix"], status["source"], line.strip())


def _device_of(backend: str, vendors: AbstractSet[str]) -> str:
    devices = _data()["backends"]
    device = devices.get(backend, devices.get(backend.replace("Autograd", ""), None))
    if device == "":   # PrivateUse1: the vendor the log names
        return next(iter(sorted(vendors)), "") if len(vendors) == 1 else ""
    if device is None and backend.upper().startswith("NPU"):   # NPUTensorId (old torch_npu)
        return "npu"
    return device or ""


def _no_kernel(op: str, backend: str, vendors: AbstractSet[str], line: str) -> dict:
    device = _device_of(backend, vendors)
    on = device or f"the '{backend}' backend"
    fallback = {"mps": " PYTORCH_ENABLE_MPS_FALLBACK=1 runs it on the CPU instead."}.get(device, "")
    package = op.split("::")[0] if "::" in op else "aten"
    owner = ("the device's package (or this release of it) does not implement that operator, or the package that "
             "registers it was not imported" if package in ("aten", "prims") else
             f"{package}, which defines it, was built without a kernel for that device (a wheel built for another "
             f"device or torch: install the {package} build that goes with this torch and device)")
    return _error("family:no-kernel", device if device in ("npu", "mlu", "musa", "xpu", "mps") else "any",
                  f"{op} has no kernel for {on}",
                  f"torch's dispatcher found no implementation of {op} registered for {on}: {owner}.",
                  "Check the operator against the target (`torchport ops check`), update the vendor's package to a "
                  "release that has it, or run that step on the CPU (move its inputs with .cpu() and back)." + fallback,
                  _data()["backends"]["source"], line.strip())


def _no_dtype(op: str, dtype: str, vendors: AbstractSet[str], line: str) -> dict:
    on = ", ".join(sorted(vendors)) or "the device in use"
    return _error("family:no-dtype", next(iter(sorted(vendors))) if len(vendors) == 1 else "any",
                  f"{op} has no kernel for {dtype}",
                  f"The kernel that runs {op} ({on}) was not built for {dtype}: devices other than CUDA often lack "
                  "some dtypes (float64, bfloat16, integer or bool variants) that CUDA's kernels have.",
                  f"Cast the inputs of that operator to a dtype it takes (for example `.float()` around it, and back to "
                  f"{dtype} after), or run it on the CPU; `torchport ops check` lists the dtypes a target's kernels take "
                  "where the vendor publishes them.",
                  "torch's AT_DISPATCH message (\"<kernel> not implemented for '<dtype>'\", c10/core/ScalarType and "
                  "ATen/Dispatch.h)", line.strip())


def _symbol_owner(line: str) -> Optional[tuple]:
    """(symbol, [[symbol]] entry) for the undefined symbol a line names, where the data knows who defines it."""
    m = _UNDEFINED.search(line)
    if not m:
        return None
    owner = _owner_of(m.group(1))
    return (m.group(1), owner) if owner is not None else None


def _owner_of(symbol: str) -> Optional[dict]:
    """The [[symbol]] entry of who defines `symbol`: a C name by its prefix, a C++ one by its first namespace
    (mangled _ZN3c10..., or demangled c10::... as a linker prints it)."""
    mangled = _MANGLED.match(symbol)
    namespace = symbol[mangled.end():mangled.end() + int(mangled.group(1))] if mangled else \
        symbol.split("::")[0] if "::" in symbol else None
    for entry in _data()["symbol"]:
        if namespace is not None and namespace in entry.get("namespaces", ()):
            return entry
        if namespace is None and any(symbol.startswith(p) for p in entry.get("prefixes", ())):
            return entry
    return None


def _undefined_symbol_alone(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    """"undefined symbol: S" with no library named on the line (a tool or a Go/C program that loads the SDK itself)."""
    if _LIBRARY.search(line):
        return None   # _missing_library answers it with the library
    found = _symbol_owner(line)
    if found is None:
        return None
    name, owner = found
    return _error(f"symbol:{owner['id']}", _SYMBOL_VENDOR.get(owner["id"], "any"),
                  f"{name} is missing from the installed {owner['owner']}",
                  f"A program or library was built against a release of {owner['owner']} that has {name}; the "
                  "release loaded here does not (usually an older one: the driver or SDK on this machine is older "
                  "than the one it was built with).", owner["fix"], owner["source"], line.strip())


def _undefined_reference(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _LINK_UNDEFINED.search(line)
    owner = _owner_of(m.group(1).split("(")[0]) if m else None
    if owner is None:
        return None
    assert m is not None   # owner is None without a match
    return _error(f"link:{owner['id']}", _SYMBOL_VENDOR.get(owner["id"], "any"),
                  f"The link step cannot find {m.group(1)[:80]} ({owner['owner']})",
                  f"The linker (ld), building an extension or a program, found no library on its link line that "
                  f"defines {m.group(1)[:120]}; {owner['owner']} defines it. The library is not linked, or the one "
                  "found is another release without it.",
                  f"Add {owner['owner']}'s library to the link (its -L folder and -l name: the vendor's setup.py or "
                  "CMake helper does this), and build against the release you run with. " + owner["fix"],
                  owner["source"], line.strip())


def _undefined_symbol(lib: str, entry: dict, symbol: tuple, vendors: AbstractSet[str], line: str) -> dict:
    name, owner = symbol
    return _error(f"symbol:{owner['id']}", entry["vendor"] if entry["vendor"] != "cuda" else "any",
                  f"{lib} needs {name} from {owner['owner']}: built against another release of it",
                  f"{lib} (part of {entry['package']}) was found and loaded, but it calls {name}, which "
                  f"{owner['owner']} defines and the installed release of it does not have: the two are not a pair.",
                  owner["fix"], f"{owner['source']}; {entry['source']}", line.strip())


def _no_module(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _NO_MODULE.search(line)
    if not m:
        return None
    name = m.group(1)
    entry = next((p for p in _data()["package"] for n in p["names"] if name == n or name.startswith(n + ".")), None)
    if entry is None:
        return None
    top = name.split(".")[0]
    if entry["kind"] == "cuda-only":
        on = ", ".join(sorted(vendors)) or "a machine without NVIDIA GPUs"
        return _error(f"package:{top}", "any", f"{top} is {entry['what']} ({on})",
                      f"The code imports {name}, {entry['what']}: it is not installed here, and its CUDA build would "
                      "not run on this device anyway.", entry["fix"], entry["source"], line.strip())
    return _error(f"package:{top}", entry["vendor"], f"{top} is not installed in this interpreter",
                  f"The code (or a library it imports) needs {name} ({entry['what']}); this Python does not have it "
                  "(another virtual environment or container has it, or it was never installed).",
                  entry["fix"], entry["source"], line.strip())


def _vendor_api_missing(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _NO_ATTRIBUTE.search(line)
    if not m:
        return None
    module, name = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
    package = {"torch.npu": "torch_npu", "torch.mlu": "torch_mlu", "torch.musa": "torch_musa", "torch.xpu": "torch"}.get(
        ".".join(module.split(".")[:2]), module.split(".")[0])
    if package == "triton":
        return _error("family:triton-api-missing", "any", f"The installed Triton has no {module}.{name}",
                      f"The calling library (a kernel library such as FlagGems, an inference engine, torch.compile's "
                      f"generated code) uses {module}.{name}, which the installed Triton does not have: the device's "
                      "Triton (triton-ascend, the vendors' Triton builds for MLU and MUSA, Intel's XPU backend) and "
                      "that library are not releases made for each other.",
                      "Install the Triton release the library's own docs pair with it for this device (the vendor's "
                      "Triton build, not the PyPI CUDA one), or the library release written for your Triton; where the "
                      "library can, turn the Triton kernel off for that op so the device's torch kernel runs.",
                      "the Triton backends' release pairings (triton-ascend, the vendors' Triton builds)", line.strip())
    vendor = {"torch_npu": "npu", "torch_mlu": "mlu", "torch_musa": "musa"}.get(package, "xpu")
    return _error("family:vendor-api-missing", vendor, f"The installed {package} has no {module}.{name}",
                  f"The code (or a library built on {package}: an inference engine, a training framework, a model's "
                  f"own scripts) calls {module}.{name}, which this release of {package} does not have: it was written "
                  f"for another release, where {name} exists (or is named so).",
                  f"Install the {package} release the calling project's version table names (and the torch and SDK "
                  f"that go with it), or the project release written for your {package}; `pip show {package}` gives "
                  "the installed one.", "the vendors' release tables pair each package release with a torch release",
                  line.strip())


def _missing_header(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _NO_HEADER.search(line)
    if not m:
        return None
    header = m.group(1)
    entry = next((h for h in _data()["header"] if any(header.startswith(p) for p in h["prefixes"])), None)
    if entry is None:
        return None
    cuda = entry["vendor"] == "cuda"
    on = f" on {', '.join(sorted(vendors))}" if vendors and cuda else ""
    cause = (f"The build compiles CUDA code (it includes {header}), and this machine has no CUDA toolkit{on}." if cuda
             else f"The compiler looked for {header}, a header of {entry['owner']}, and did not find it: the SDK is "
             "not installed, or its include folder is not the one the build uses.")
    return _error(f"header:{entry['vendor']}", "any" if cuda else entry["vendor"],
                  f"{header} is not found: it belongs to {entry['owner']}{on}", cause, entry["fix"],
                  entry["source"], line.strip())


def _compile_failed(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _DYNAMO.search(line)
    if not m:
        return None
    what = m.group(1) or f"BackendCompilerFailed ({m.group(2)})"
    device = next(iter(sorted(vendors))) if len(vendors) == 1 else "any"
    backend = {"npu": " (on Ascend, torchair's npu backend: torchair.get_npu_backend())"}.get(device, "")
    return _error("family:compile-failed", device, f"torch.compile failed: {what}",
                  f"torch.compile (TorchDynamo tracing the Python code, then a backend compiling the graph) raised "
                  f"{what}. Unsupported: Dynamo cannot trace a construct; BackendCompilerFailed and the inductor errors: "
                  "the backend could not compile the graph for this device (inductor needs a Triton backend for the "
                  "device, which vendors provide separately and for some torch releases only).",
                  f"Run the model without compiling to confirm the model itself works (remove torch.compile, "
                  f"torch.compiler.disable, or the framework's eager option such as vLLM's --enforce-eager); then use "
                  f"the backend the vendor supports{backend}, or the torch and vendor releases its docs pair; "
                  "TORCHDYNAMO_VERBOSE=1 shows where tracing stopped.",
                  "torch/_dynamo/exc.py and torch/_inductor/exc.py (the exception classes torch.compile raises)",
                  line.strip())


def _port_taken(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _PORT_TAKEN.search(line)
    if not m:
        return None
    hccl = "npu" in vendors or "hccl" in line.lower()
    port = f" (port {m.group(1)})" if m.group(1) else ""
    return _error("family:port-taken", "npu" if hccl else "any", f"A port the job listens on is taken{port}",
                  "A process of the job could not listen on its port: another process holds it, most often a rank "
                  "of an earlier run that did not exit, or another job on the same host.",
                  "End the leftover processes (ps/npu-smi info list them) and start again, or move the job to free "
                  "ports: MASTER_PORT for torch.distributed" + (", HCCL_IF_BASE_PORT (the first of HCCL's host ports) "
                  "for HCCL" if hccl else "") + "; with several jobs on one host give each its own range.",
                  "the socket error EADDRINUSE (errno 98) as torch.distributed's TCPStore and HCCL's socket layer "
                  "report it; CANN's HCCL_IF_BASE_PORT variable", line.strip())


def _store_timeout(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _STORE_TIMEOUT.search(line)
    if not m:
        return None
    joined = f" ({m.group(1)} of {m.group(2)} joined)" if m.group(1) else ""
    return _error("family:rendezvous-timeout", "any", f"The workers did not all reach the master's store{joined}",
                  "torch.distributed starts by meeting at a TCP store on the master (MASTER_ADDR:MASTER_PORT); some "
                  "workers never connected: a wrong address or network interface, a firewall, a worker that failed "
                  "before it got there, or one that started too late.",
                  "Make MASTER_ADDR:MASTER_PORT reachable from every node (the interface variables: GLOO_SOCKET_IFNAME, "
                  "HCCL_SOCKET_IFNAME / NCCL_SOCKET_IFNAME, a framework's own host IP setting), open the port, then "
                  "read the log of the first worker that failed: its error is the cause.",
                  "pytorch/pytorch torch/csrc/distributed/c10d/TCPStore.cpp and socket.cpp (the store's timeouts)",
                  line.strip())


def _generator_device(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _GENERATOR_DEVICE.search(line)
    if not m:
        return None
    wanted, found = m.group(1), m.group(2)
    return _error("family:generator-device", wanted if wanted in ("npu", "mlu", "musa", "xpu", "mps") else "any",
                  f"A random generator on {found} used for a tensor made on {wanted}",
                  f"A torch.Generator made on {found} was passed to an op that makes its tensor on {wanted}: often a "
                  f"sampler's CPU generator (RandomSampler, randperm) after torch.set_default_device('{wanted}'), or a "
                  "pipeline's seed generator made on the CPU for a device model.",
                  f"Make the generator on the device the op runs on (torch.Generator(device='{wanted}')), or give the op "
                  "the generator's device (device=...), or keep the default device on the CPU while data loaders "
                  "sample.", "torch's generator check (\"Expected a '<device>' device type for generator but found "
                  "'<device>'\", ATen's check_generator)", line.strip())


def _unsupported_soc(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _SOC.search(line)
    if not m or not (vendors & {"npu"} or m.group(1) is not None):
        return None
    chip = f" ({m.group(1)})" if m.group(1) else ""
    return _error("family:npu-chip", "npu", f"This Ascend chip{chip} is not one the installed software supports",
                  "torch_npu (or a framework such as vllm-ascend, or a prebuilt kernel package) reads the chip's SoC "
                  "name and refuses it: the wheel, image or kernel package was built for another chip family (Atlas "
                  "A2 / A3 / 310P ...), or the release does not support this chip at all.",
                  "Install the build made for your chip (`npu-smi info` names it: the matching image or wheel; for a "
                  "kernel package, build it again with the chip option set to yours), or a release whose support list "
                  "includes it.", "Ascend/pytorch torch_npu/csrc/core/npu/NpuVariables.cpp:58-60 (Unsupported soc "
                  "version); the chip tables of the adapters (vllm-ascend utils)", line.strip())


def _ds_accelerator(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _DS_ACCELERATOR.search(line)
    vendor = next(iter(sorted(vendors - {"cuda"})), None) if len(vendors) == 1 else None
    if not m or vendor is None:
        return None
    return _error("family:deepspeed-accelerator", vendor, f"DeepSpeed chose the {m.group(1)} accelerator on {vendor}",
                  f"DeepSpeed detects its accelerator when it is imported; it picked {m.group(1)} although this is a "
                  f"{vendor} machine (the vendor package was not imported first, or not installed where DeepSpeed "
                  "looks), so it uses NCCL/CUDA or CPU paths that fail or run slowly.",
                  f"export DS_ACCELERATOR={vendor} (and import the vendor's package, e.g. torch_{vendor}, before "
                  "deepspeed), with a DeepSpeed release that has that accelerator.",
                  "deepspeedai/DeepSpeed accelerator/real_accelerator.py (DS_ACCELERATOR; npu, mlu, musa and xpu "
                  "accelerators in accelerator/)", line.strip())


def _cambricon_log(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _VENDOR_LOG.search(line)
    if not m:
        return None
    library, api, text = m.group(1).upper(), m.group(2), m.group(3).strip()
    status = next((entry for _rx, entry in _statuses() if entry["id"] == "cnnl"), None)
    meaning = next((t for w, t in status["statuses"] if w in text.lower()), None) if status else None
    where = f" in {api}" if api else ""
    return _error(f"family:cambricon-log-{library.lower()}", "mlu", f"{library} reported an error{where}",
                  f"Cambricon's {library} library logged an error{where}: \"{text[:200]}\""
                  + (f" ({meaning})." if meaning else ".") + " A parameter error names the call that passed it (a "
                  "descriptor or argument the caller made wrong); an internal error when a handle is made usually "
                  "means the toolkit, driver or build do not match, or the MLU is not visible.",
                  "Check the call the message names; check the MLU is visible (cnmon) and that torch_mlu, Neuware "
                  "(CNToolkit, CNNL, MLU-OPS) and the driver are the versions the release notes pair; "
                  "MLU_LAUNCH_BLOCKING=1 reports the failing call where it happens.",
                  "Cambricon/mlu-ops core/logging.h (the [<LIB>] [Error]:[<api>] log lines)", line.strip())


def _mudnn_log(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    m = _MUDNN_LOG.search(line)
    if not m or not ("mudnn" in line.lower() or vendors & {"musa"}):
        return None
    status, op = m.group(1), m.group(2)
    reason = log.after[0].strip() if line.rstrip().endswith("Reason:") and log.after else ""
    runtime: dict[str, Any] = next((entry for rx, entry in _statuses() if entry["id"] == "musa-runtime"),
                                   {"statuses": []})
    meaning = next((text for words, text in runtime["statuses"] if words and words in reason.lower()), None)
    return _error("family:mudnn-log", "musa", f"muDNN {status} in {op}" + (f": {meaning}" if meaning else ""),
                  f"muDNN, Moore Threads' operator library, refused {op} with {status}"
                  + (": it has no kernel for these inputs (dtype, layout or mode) on this GPU generation." if
                     "SUPPORT" in status.upper() else ".")
                  + (f" Its reason, on the next line: \"{reason[:200]}\"" + (f": {meaning}." if meaning else ".")
                     if reason else ""),
                  runtime["fix"] if meaning else
                  "Run that operator in a dtype muDNN takes (a cast around it, float32 or float16), or on the CPU, or "
                  "upgrade the MUSA SDK and torch_musa together (newer muDNN covers more); MUSA_LAUNCH_BLOCKING=1 "
                  "names the failing operator.", "muDNN's log line (ERROR# <status> in <Op>::Run), as torch_musa's "
                  "users see it; MooreThreads/torch_musa MUSAException.h (CHECK_MUDNN_STATUS)", line.strip())


def _windows_dll(line: str, vendors: AbstractSet[str], log: Log) -> Optional[dict]:
    if not _WIN_DLL.search(line):
        return None
    named = _DLL_NAME.search(line)
    dll = named.group(1).replace("\\", "/").rsplit("/", 1)[-1] if named else "a DLL"
    intel = vendors & {"xpu"} or "intel" in line.lower() or "sycl" in line.lower()
    return _error("family:windows-dll", "xpu" if intel else "any", f"Windows could not load {dll} or a DLL it needs",
                  f"Importing torch (or an extension) loads {dll}; Windows could not load it or one of the DLLs it "
                  "depends on (WinError 126): a runtime the wheel needs is not installed or is another version"
                  + (" (for Intel GPUs: the oneAPI runtime, DPC++ and oneMKL DLLs the XPU wheel was built with)." if intel
                     else " (the Visual C++ redistributable, a vendor runtime)."),
                  "Install the runtime packages at the versions the wheel's release notes name"
                  + (" (Intel's XPU install guide lists the oneAPI runtime pip packages and the GPU driver)" if intel
                     else " (the latest Visual C++ redistributable)") + "; Dependencies or `dumpbin /dependents` shows "
                  "which DLL is missing.", "Windows' LoadLibrary error 126 as torch's __init__.py reports it",
                  line.strip(), confidence="weak")


_SYMBOL_VENDOR = {"cann": "npu", "cann-profiler": "npu", "hccl": "npu", "nnal": "npu", "torch_npu": "npu",
                  "neuware": "mlu", "torch_mlu": "mlu", "musa-sdk": "musa", "oneapi": "xpu"}

# The families, in the order a line is read: messages with a parameter first, then codes, then libraries.
READERS = (_not_linked_xpu, _backend_autoload, _cann_torch_npu_pair, _vendor_torch_version, _ipex_torch_version,
           _cpu_fallback, _hccl_code, _acl_return_code, _library_status, _could_not_run, _not_implemented_for,
           _cann_code, _pta_code, _dcmi_code, _undefined_reference, _no_module, _vendor_api_missing, _missing_header,
           _compile_failed, _port_taken, _store_timeout, _generator_device, _unsupported_soc, _ds_accelerator,
           _cambricon_log, _mudnn_log, _windows_dll,
           _missing_library, _undefined_symbol_alone)
