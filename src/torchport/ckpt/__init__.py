"""Checkpoints written on CUDA machines: what is in one, and a copy that loads on the target.

Everything is read with `torch.load(..., weights_only=True)`: tensors, containers and plain values only,
no pickled code runs.  A checkpoint that pickled other objects (an `argparse.Namespace` of the training
arguments, say) is refused with the names of those globals; `allow` lists the ones the user trusts
(`torch.serialization.safe_globals`).  Where each storage was saved ("cuda:0") is read through a
`map_location` function while every storage is put on the CPU.

`inspect` finds the parts a training checkpoint holds (model state dicts and their `module.` or
`_orig_mod.` prefixes, optimizer, GradScaler and apex amp states) and the problems they cause on another
machine; `fix` writes a copy mapped to the CPU (which loads on any device) with prefixes stripped,
optionally loaded into the user's model to prove it fits.
`build_model` and `load_model_state` are the one way a user's model is built and its checkpoint
loaded into it (`ckpt fix --check-model`, `torchport export onnx`).
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import os
import re
import reprlib
import stat
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..core.errors import UsageError
from ..core.files import same_file
from . import pickles

PREFIXES = {"module.": "saved from DataParallel/DistributedDataParallel",
            "_orig_mod.": "saved from a torch.compile'd model"}
# in torch.load's refusals: "Unsupported global: GLOBAL eval was not an allowed global", "Trying to load unsupported
# GLOBAL posix.system whose module posix is blocked" (a bare name is a builtin)
UNSUPPORTED_GLOBAL = re.compile(r"[Uu]nsupported (?:global: )?GLOBAL ([\w.]+)")
SCALER_KEYS = {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}


@dataclass
class Part:
    """One piece of a checkpoint: where it is (`model`, `state_dict`, `[0]`), what it is, what is wrong."""

    where: str
    kind: str                       # state-dict | optimizer | grad-scaler | apex-amp | tensor | value
    tensors: int = 0
    prefix: str = ""                # a prefix every key of a state dict carries
    detail: str = ""


@dataclass
class Inspection:
    path: str
    tensors: int = 0
    locations: Counter = field(default_factory=Counter)   # saved location ("cuda:0") -> storages
    dtypes: Counter = field(default_factory=Counter)
    parts: list = field(default_factory=list)
    problems: list = field(default_factory=list)           # (what, fix)

    def to_dict(self) -> dict:
        return {"path": self.path, "tensors": self.tensors, "locations": dict(self.locations),
                "dtypes": dict(self.dtypes),
                "parts": [vars(p) for p in self.parts],
                "problems": [{"problem": what, "fix": fix} for what, fix in self.problems]}


def _torch():
    try:
        import torch
    except ImportError:
        raise UsageError("torchport ckpt needs PyTorch in this environment (pip install torch)") from None
    return torch


# What loading may unpack: the larger of EXPAND_LIMIT_FACTOR times the file's size and EXPAND_LIMIT_FLOOR.  torch.save
# stores tensors uncompressed, so a checkpoint it wrote unpacks to about its own size; a zip that unpacks to far more
# (2 MB to 2.3 GB) is a zip bomb, refused before anything is read.
EXPAND_LIMIT_FACTOR = 4
EXPAND_LIMIT_FLOOR = 256 << 20


def unpacked_size(path: Path) -> int:
    """What a zip-format checkpoint's records unpack to (0 for the legacy format, which is not a zip)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            return sum(i.file_size for i in z.infolist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return 0
    except NotImplementedError as e:   # a zip feature (compression, version) Python's zipfile does not read
        raise UsageError(f"{path}: a zip archive torchport cannot read ({e}): not loaded") from None


def load(path, allow=(), trust=()) -> tuple:
    """(object, Counter of saved locations) of a checkpoint, every storage on the CPU, no pickled code run."""
    torch = _torch()
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"checkpoint not found (or not a file): {path}")
    size, unpacked = path.stat().st_size, unpacked_size(path)
    if unpacked > max(EXPAND_LIMIT_FACTOR * size, EXPAND_LIMIT_FLOOR):
        raise UsageError(f"{path}: its records unpack to {unpacked / 2**20:.0f} MiB from {size / 2**20:.1f} MiB, more "
                         f"than {EXPAND_LIMIT_FACTOR} times its size (a compressed archive torch.save does not "
                         "write): not loaded")
    locations: Counter = Counter()

    def to_cpu(storage, location):
        locations[location] += 1
        return storage

    dangerous = [name for name in (*allow, *trust) if runs_code(name)]
    if dangerous:
        raise UsageError(f"--{'allow' if dangerous[0] in allow else 'trust'} {dangerous[0]}: a pickle that calls it "
                         "runs code or reaches the system; torchport never loads such a checkpoint (open it with "
                         "torch.load yourself only if you wrote it)")
    unvouched = [name for name in allow if not vouched(name)]
    if unvouched:
        raise UsageError(f"--allow {unvouched[0]}: torchport vouches only for plain data types ({', '.join(SAFE_SHOWN)}, "
                         "numpy arrays...); a pickle can call anything else with arguments of its choosing, and "
                         f"loading may run code: if you wrote this checkpoint and trust it, give --trust {unvouched[0]}")
    named = pickles.globals_in(path)   # read from the opcodes, before torch reads anything
    allocating = [name for name in named if name in ALLOCATORS]
    if allocating:   # torch's default allowlist takes them, with a size the pickle chooses
        raise UsageError(f"{path}: the checkpoint builds {', '.join(allocating)} objects of a size it chooses (a "
                         "checkpoint's storages never come that way: a 1 KB file can ask for gigabytes); not loaded")
    code = [name for name in named if runs_code(name)]
    if code:   # read from the opcodes, before torch reads anything: whatever the protocol, nothing is unpickled
        raise UsageError(f"{path}: the checkpoint calls {', '.join(code)} when it is loaded: loading it would run "
                         "code; torchport does not load it")
    trusted = [_global(name) for name in (*allow, *trust)]
    try:
        with torch.serialization.safe_globals(trusted), warnings.catch_warnings():
            warnings.simplefilter("ignore")   # "Detected pickle protocol 4": the refusal below says it in one line
            obj = torch.load(path, map_location=to_cpu, weights_only=True)
    except Exception as e:  # noqa: BLE001 - the unpickler's refusals come as several types
        text = str(e)
        names = sorted(set(_unsupported_globals(text)))
        code = [n for n in names if runs_code(n)]
        if code:
            raise UsageError(f"{path}: the checkpoint calls {', '.join(code)} when it is loaded: loading it would run "
                             "code; torchport does not load it") from None
        if names:
            plain, other = [n for n in names if vouched(n)], [n for n in names if not vouched(n)]
            how = " ".join([*(f"--allow {n}" for n in plain), *(f"--trust {n}" for n in other)])
            kind = ("plain data types torchport vouches for" if not other else
                    "objects torchport cannot vouch for: a pickle may call them with arguments of its choosing")
            raise UsageError(f"{path}: the checkpoint pickles objects that are not tensors or plain values "
                             f"({', '.join(names)}: {kind}); if you wrote it and trust it, add {how}") from None
        raise UsageError(f"{path}: not a checkpoint torch.load can read ({_reason(text) or type(e).__name__})") \
            from None
    return obj, locations


# What `--allow` takes: plain data types whose construction only stores the values it is given (torchport vouches
# for them; the suggestion names them).  Any other global needs `--trust` (a class's constructor or a function may do
# anything with the arguments a pickle passes: cProfile.run, logging.FileHandler, torch.storage._load_from_bytes...),
# and the ones below that run code are refused even then.
SAFE_GLOBALS = frozenset({
    "argparse.Namespace", "collections.OrderedDict", "collections.defaultdict", "collections.Counter",
    "collections.deque", "builtins.set", "builtins.frozenset", "builtins.slice", "builtins.range", "builtins.complex",
    "datetime.datetime", "datetime.date", "datetime.time", "datetime.timedelta", "datetime.timezone",
    "decimal.Decimal", "fractions.Fraction", "uuid.UUID", "numpy.core.multiarray._reconstruct",
    "numpy._core.multiarray._reconstruct", "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar",
    "numpy.ndarray", "numpy.dtype", "torch.torch_version.TorchVersion"})
SAFE_PREFIXES = ("numpy.dtypes.",)   # numpy's dtype classes (numpy.dtypes.Float32DType)
SAFE_SHOWN = ("argparse.Namespace", "collections.*", "datetime.*", "builtins.set")
# Allowed by torch's weights-only loader by default, with a size the pickle passes: never in a torch.save checkpoint.
ALLOCATORS = frozenset({"builtins.bytearray", "torch.storage.UntypedStorage", "torch.UntypedStorage",
                        "torch.storage.TypedStorage", "torch.TypedStorage"})


def vouched(name: str) -> bool:
    """Is `module.Name` a plain data type `--allow` takes (see SAFE_GLOBALS)?"""
    if "." in name:
        name = pickles.python3_name(*name.rsplit(".", 1))
    return name in SAFE_GLOBALS or name.startswith(SAFE_PREFIXES)


# Globals that run code or reach the system when a pickle calls them: never suggested, never allowed.
CODE_RUNNING_MODULES = frozenset({"os", "posix", "nt", "subprocess", "sys", "importlib", "pickle", "shutil", "socket",
                                  "runpy", "code", "codeop", "ctypes", "multiprocessing", "pty", "marshal", "types",
                                  "webbrowser", "urllib", "http", "ftplib", "smtplib", "tempfile", "io",
                                  "asyncio", "signal", "threading", "_thread", "gc", "inspect",
                                  "operator", "torch.hub", "torch.jit", "torch.package", "torch._C", "torch.ops",
                                  "torch.library", "torch.serialization", "torch.utils", "torch.cuda", "pathlib",
                                  "glob", "fileinput", "zipfile", "tarfile", "shelve", "dbm", "sqlite3",
                                  "distutils", "setuptools", "pip", "site", "numpy.lib.npyio", "numpy.ctypeslib",
                                  "numpy.distutils", "numpy.f2py", "numpy.testing", "cProfile", "profile", "pydoc",
                                  "_osx_support", "logging", "trace", "pdb", "bdb", "timeit", "doctest", "unittest",
                                  "ensurepip", "venv", "idlelib", "tkinter", "turtle", "_posixsubprocess", "_winapi",
                                  "msvcrt", "winreg", "resource", "platform", "mailcap", "pipes", "commands", "popen2",
                                  "zipimport", "pkgutil", "sysconfig", "atexit", "builtins.__loader__"})
# ... and single names of modules whose other names a checkpoint may need (numpy arrays, torch's own classes)
CODE_RUNNING_NAMES = frozenset({"torch.load", "torch.save", "torch.from_file", "torch.compile", "numpy.load",
                                "torch.storage._load_from_bytes",
                                "numpy.save", "numpy.savez", "numpy.fromfile", "numpy.tofile", "numpy.memmap",
                                "numpy.loadtxt", "numpy.genfromtxt", "numpy.savetxt"})
CODE_RUNNING_BUILTINS = frozenset({"eval", "exec", "compile", "open", "__import__", "getattr", "setattr", "delattr",
                                   "globals", "locals", "vars", "input", "breakpoint", "help", "memoryview"})


def runs_code(name: str) -> bool:
    """Does the global `module.Name` execute code or touch the system when a pickle calls it?  Python 2's
    names count as the modules Python 3 imports for them (`commands.Popen` is subprocess.Popen)."""
    if "." in name:
        name = pickles.python3_name(*name.rsplit(".", 1))
    module, _, attr = name.rpartition(".")
    if module in ("builtins", "__builtin__"):
        return attr in CODE_RUNNING_BUILTINS
    return name in CODE_RUNNING_NAMES or any(module == m or module.startswith(m + ".") for m in CODE_RUNNING_MODULES)


def _unsupported_globals(text: str) -> list:
    """The `module.Name` globals a weights_only load refused, from torch's message (a bare name: builtins'), as
    Python 3 names them."""
    names = [name if "." in name else f"builtins.{name}" for name in UNSUPPORTED_GLOBAL.findall(text)]
    return [pickles.python3_name(*name.rsplit(".", 1)) for name in names]


def _reason(text: str) -> str:
    """torch.load's reason for a refusal, whole: a weights-only refusal's own error ("Unsupported operand 149"),
    not the preamble that starts every such message; other errors' first line."""
    start = text.find("WeightsUnpickler error:")
    if start >= 0:
        body = text[start + len("WeightsUnpickler error:"):]
        end = body.find("Check the documentation")
        reason = " ".join((body if end < 0 else body[:end]).split())
        number = reason.removeprefix("Unsupported operand ")
        if number != reason and number.isdigit():
            reason += f" (the pickle opcode {_opcode_name(int(number))}, which torch's weights-only loader does not read)"
        return reason
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def _opcode_name(code: int) -> str:
    import pickletools

    return next((op.name for op in pickletools.opcodes if op.code.encode("latin-1") == bytes([code])), str(code))


def _global(name: str):
    """An object named `package.module.Name`, imported: what --allow trusts."""
    module, _, attr = name.rpartition(".")
    if not module:
        raise UsageError(f"--allow needs a dotted name (module.Name), got {name!r}")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise UsageError(f"--allow {name}: cannot import it ({e})") from None


def inspect(path, allow=(), trust=()) -> Inspection:
    torch = _torch()
    obj, locations = load(path, allow, trust)
    result = Inspection(str(path), locations=locations)
    _walk(torch, obj, "", result)
    devices = sorted(loc for loc in locations if not loc.startswith("cpu"))
    if devices:
        said = "; ".join(_load_error(loc) for loc in sorted({loc.split(":")[0] for loc in devices}))
        result.problems.append((
            f"storages saved on {', '.join(devices)}: torch.load without map_location fails on a machine without "
            f"that device ({said})",
            "torch.load(..., map_location=\"cpu\") in the code, or `torchport ckpt fix` for a copy saved on the CPU"))
    for part in result.parts:
        if part.prefix:
            result.problems.append((
                f"{part.where or 'the checkpoint'}: every key starts with '{part.prefix}' ({PREFIXES[part.prefix]}); "
                "load_state_dict into the plain model fails with missing and unexpected keys",
                f"`torchport ckpt fix --strip-prefix {part.prefix}`, or strip it before load_state_dict"))
        if part.kind == "apex-amp":
            result.problems.append((
                f"{part.where}: apex amp's loss-scaler state; torch.amp.GradScaler cannot load it",
                "start the scaler afresh (its scale adapts in a few steps), or set init_scale to the saved "
                "loss_scale"))
    return result


MAX_DEPTH = 64   # containers nested deeper than this are not walked (a crafted 100,000-deep list overflowed the stack)


def _walk(torch, obj, where: str, result: Inspection, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        if not any(p.detail.startswith("nested deeper") for p in result.parts):
            result.parts.append(Part(where[:60], "value", detail=f"nested deeper than {MAX_DEPTH} levels: not listed"))
        return
    if isinstance(obj, torch.Tensor):
        result.tensors += 1
        result.dtypes[str(obj.dtype).replace("torch.", "")] += 1
        if not where or "." not in where and "[" not in where:
            result.parts.append(Part(where, "tensor", 1, detail=f"{tuple(obj.shape)} {obj.dtype}"))
        return
    if isinstance(obj, dict):
        kind = _dict_kind(torch, obj)
        if kind == "state-dict":
            tensors = [v for v in obj.values() if isinstance(v, torch.Tensor)]
            for t in tensors:
                result.tensors += 1
                result.dtypes[str(t.dtype).replace("torch.", "")] += 1
            result.parts.append(Part(where, kind, len(tensors), prefix=common_prefix(obj)))
            return
        if kind == "optimizer":
            groups = obj.get("param_groups", [])
            before = result.tensors
            _count_tensors(torch, obj, result)
            result.parts.append(Part(where, kind, result.tensors - before,
                                     detail=f"{len(groups)} param group(s), {len(obj.get('state', {}))} parameter "
                                            "state(s)"))
            return
        if kind == "grad-scaler":
            result.parts.append(Part(where, kind, detail=f"scale {obj.get('scale')}"))
            return
        if kind == "apex-amp":
            scales = [v.get("loss_scale") for v in obj.values() if isinstance(v, dict)]
            result.parts.append(Part(where, kind, detail=f"loss_scale {scales[0] if scales else '?'}"))
            return
        if not obj and where and "." not in where and "[" not in where:
            result.parts.append(Part(where, "value", detail="{} (empty)"))   # an empty scaler state, say
        for key, value in obj.items():
            _walk(torch, value, f"{where}.{key}" if where else str(key), result, depth + 1)
        return
    if isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            _walk(torch, value, f"{where}[{i}]", result, depth + 1)
        return
    if where and "." not in where and "[" not in where:
        text = reprlib.repr(obj)   # bounded: a value's repr is not the size of the value
        result.parts.append(Part(where, "value", detail=text if len(text) <= 60 else text[:57] + "..."))


def _load_error(device: str) -> str:
    """What torch.load says on a machine without `device` (torch 2.13 serialization.py)."""
    if device == "cuda":
        return "\"Attempting to deserialize object on a CUDA device\""
    return f"\"don't know how to restore data location of torch.storage.UntypedStorage (tagged with {device}:0)\""


def _count_tensors(torch, obj, result: Inspection) -> None:
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            result.tensors += 1
            result.dtypes[str(item.dtype).replace("torch.", "")] += 1
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def _dict_kind(torch, obj: dict) -> str:
    keys = set(obj)
    # a module's state dict: tensors only (beside a module's `_extra_state`); {"args": ns, "w": tensor} is none
    if keys and all(isinstance(k, str) for k in keys) and any(isinstance(v, torch.Tensor) for v in obj.values()) and \
            all(isinstance(v, torch.Tensor) or k.endswith("_extra_state") for k, v in obj.items()):
        return "state-dict"
    if {"state", "param_groups"} <= keys:
        return "optimizer"
    if SCALER_KEYS <= keys:
        return "grad-scaler"
    if keys and all(isinstance(k, str) and k.startswith("loss_scaler") for k in keys):
        return "apex-amp"
    return ""


def common_prefix(state: dict, prefix: str = "") -> str:
    """The prefix every key carries: `prefix` if they all do, else a known one ('module.', '_orig_mod.'), or ''."""
    for candidate in (prefix,) if prefix else PREFIXES:
        if state and all(isinstance(k, str) and k.startswith(candidate) for k in state):
            return candidate
    return ""


@dataclass
class Fixed:
    output: str
    stripped: Counter = field(default_factory=Counter)    # prefix -> state dicts it was stripped from
    locations: Counter = field(default_factory=Counter)   # where the storages had been saved
    checked: Optional[str] = None                          # the model factory it was loaded into


def fix(path, output, strip=(), allow=(), check_model: Optional[str] = None, force: bool = False,
        trust=()) -> Fixed:
    """Write `output`: the checkpoint with every storage on the CPU and the given key prefixes stripped from
    the state dicts that carry them on every key; with `check_model` ('pkg.mod:factory'), first load the
    (first) model state dict into factory()'s model, strictly."""
    torch = _torch()
    src, out = Path(path), Path(output)
    if same_file(out, src):
        raise UsageError("-o must name a new file: torchport does not overwrite the checkpoint it reads")
    if out.exists() and not force:
        raise UsageError(f"{out} exists (use --force to replace it)")
    for prefix in strip:
        if not prefix:
            raise UsageError("--strip-prefix needs a prefix (module., _orig_mod.)")
    obj, locations = load(src, allow, trust)
    result = Fixed(str(out), locations=locations)
    _strip(torch, obj, tuple(strip), result.stripped)
    if check_model:
        _check_model(torch, obj, check_model)
        refuse_overwriting_source(out, check_model)
        result.checked = check_model
    buffer = io.BytesIO()
    try:
        torch.save(obj, buffer)
    except RecursionError:
        raise UsageError(f"{src}: nested too deep for torch.save to write again (more than Python's recursion "
                         "limit): not written") from None
    from ..core import writes

    out.parent.mkdir(parents=True, exist_ok=True)
    writes.write_file(out, buffer.getvalue(), mode=(0o666 & ~writes.UMASK) & stat.S_IMODE(src.stat().st_mode))   # never more readable than the input
    return result


def _strip(torch, obj, prefixes: tuple, stripped: Counter, depth: int = 0) -> None:
    """Cut the prefixes from the keys of every state dict (in place) whose keys all carry one, its `_metadata`
    in step (torch's consume_prefix_in_state_dict_if_present); containers deeper than MAX_DEPTH are left."""
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

    if depth > MAX_DEPTH:
        return
    if isinstance(obj, dict):
        if _dict_kind(torch, obj) == "state-dict":
            for prefix in prefixes:
                if common_prefix(obj, prefix):
                    consume_prefix_in_state_dict_if_present(obj, prefix)
                    stripped[prefix] += 1
            return
        for value in obj.values():
            _strip(torch, value, prefixes, stripped, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            _strip(torch, value, prefixes, stripped, depth + 1)


def _check_model(torch, obj, spec: str) -> None:
    """Load the checkpoint's model state dict into `pkg.mod:factory`'s model (strict); a mismatch is an error
    naming the first keys that differ."""
    load_model_state(torch, build_model(spec, "--check-model"), obj, spec, "--check-model")


def build_model(spec: str, option: str = "--model"):
    """The model `factory()` returns, for `pkg.mod:factory` (imported with the current folder on sys.path) or
    `path/to/file.py:factory` (the file's folder on sys.path, for its own imports); `option` names the
    command-line option in errors."""
    module_name, _, attr = spec.rpartition(":")
    if not module_name or not attr or not attr.isidentifier():
        raise UsageError(f"{option} needs module:factory (mypkg.models:build) or file.py:factory, got {spec!r}")
    import sys

    is_file = module_name.endswith(".py") or os.sep in module_name or "/" in module_name
    if is_file and not Path(module_name).is_file():
        raise UsageError(f"{option} {spec}: {module_name} is not a file")
    folder = str(Path(module_name).resolve().parent) if is_file else os.getcwd()
    sys.path.insert(0, folder)
    try:
        if is_file:
            from importlib import util

            # its own name, never the file's stem: a model file called io.py or numpy.py must not take the place
            # of the real module in sys.modules
            name = f"_torchport_model_{hashlib.sha256(str(Path(module_name).resolve()).encode()).hexdigest()[:12]}"
            loader = util.spec_from_file_location(name, module_name)
            if loader is None or loader.loader is None:
                raise UsageError(f"{option} {spec}: cannot import {module_name} (not a Python file)")
            module = sys.modules[name] = util.module_from_spec(loader)
            with _no_hard_exit(f"{option} {spec}: importing it"):
                loader.loader.exec_module(module)
        else:
            with _no_hard_exit(f"{option} {spec}: importing it"):
                module = importlib.import_module(module_name)
        if not hasattr(module, attr):
            raise UsageError(_no_factory(option, spec, module, module_name, attr))
        factory = getattr(module, attr)
    except UsageError:
        raise
    except SystemExit as e:   # a module that exits when imported: nothing was built, and that is no success
        raise UsageError(f"{option} {spec}: importing it called sys.exit({e.code!r})") from None
    except Exception as e:  # noqa: BLE001 - the user's module failed to import: their error, one line
        raise UsageError(f"{option} {spec}: cannot import it ({type(e).__name__}: {e})") from None
    finally:
        sys.path.remove(folder)
    if not callable(factory):
        raise UsageError(f"{option} {spec}: {attr} is not callable")
    try:
        with _no_hard_exit(f"{option} {spec}: {attr}()"):
            model = factory()
    except UsageError:
        raise
    except SystemExit as e:   # `sys.exit(0)` in the factory: no model, and no success either
        raise UsageError(f"{option} {spec}: {attr}() called sys.exit({e.code!r}) instead of returning a model") \
            from None
    except Exception as e:  # noqa: BLE001 - the user's factory failed: their error, one line
        raise UsageError(f"{option} {spec}: {attr}() failed ({type(e).__name__}: {e})") from None
    if not isinstance(model, _torch().nn.Module):
        raise UsageError(f"{option} {spec}: {attr}() returned {type(model).__name__}, not a torch.nn.Module")
    return model


def model_source(spec: str) -> Optional[Path]:
    """The file `build_model(spec)` imported the factory from (after it has), or None."""
    module_name = spec.rpartition(":")[0]
    if module_name.endswith(".py") or os.sep in module_name or "/" in module_name:
        return Path(module_name)
    import sys

    file = getattr(sys.modules.get(module_name), "__file__", None)
    return Path(file) if file else None


def refuse_overwriting_source(out: Path, spec: str) -> None:
    """-o must not name the model's source file (`-o pkg/m.py` with `--model pkg.m:build`)."""
    source = model_source(spec)
    if source is not None and same_file(out, source):
        raise UsageError(f"-o must name a new file: {out} is the model's source ({spec}), which torchport does not "
                         "overwrite")


def _no_factory(option: str, spec: str, module, module_name: str, attr: str) -> str:
    """Why `module_name:attr` named no factory; says so when a file here has that name but Python's own
    (or an installed) module of that name was imported instead."""
    where = getattr(module, "__file__", None) or "built in"
    text = f"{option} {spec}: {module_name} ({where}) has no {attr}"
    local = Path(module_name.replace(".", os.sep) + ".py")
    if local.is_file() and (where == "built in" or not os.path.samefile(local, where)):
        text += f"; ./{local} is not the module of that name Python imports: give the file, {local}:{attr}"
    return text


@contextlib.contextmanager
def _no_hard_exit(what: str):
    """While the user's model code runs, `os._exit` is an error: it would end torchport with the exit code the
    user's code chose, having written nothing and said nothing."""
    real = os._exit

    def refuse(code=0):
        raise UsageError(f"{what} called os._exit({code!r}), which would end torchport having done nothing")

    os._exit = refuse
    try:
        yield
    finally:
        os._exit = real


def load_model_state(torch, model, obj, spec: str, option: str = "--check-model", strip: tuple = ()) -> list:
    """Load the checkpoint's model state dict (see _model_state) into `model`, strictly, after cutting each
    prefix of `strip` that every key carries and the model's keys do not; returns the prefixes cut.  A
    mismatch is an error naming the first keys that differ."""
    state = _model_state(torch, obj)
    if state is None:
        raise UsageError(f"{option}: the checkpoint holds no state dict to load")
    own = model.state_dict()
    cut = []
    for prefix in strip:
        if common_prefix(state, prefix) and not common_prefix(own, prefix):
            from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

            consume_prefix_in_state_dict_if_present(state, prefix)  # in place: the object is the loaded copy
            cut.append(prefix)
    try:
        missing, unexpected = model.load_state_dict(state, strict=False)
    except RuntimeError as e:  # shapes that differ
        detail = " ".join(str(e).split("\n\t")[1:2]) or str(e).splitlines()[0]
        raise UsageError(f"{option} {spec}: the state dict does not fit the model: {detail.strip()[:300]}") from None
    if missing or unexpected:
        raise UsageError(f"{option} {spec}: the state dict does not fit the model: "
                         f"missing {list(missing)[:3]}, unexpected {list(unexpected)[:3]}")
    return cut


def _model_state(torch, obj):
    """The checkpoint's model state dict: itself, or under 'model'/'state_dict'/'model_state_dict'/'net', else
    the first state dict found."""
    if isinstance(obj, dict) and _dict_kind(torch, obj) == "state-dict":
        return obj
    if isinstance(obj, dict):
        for key in ("model", "state_dict", "model_state_dict", "net", "module"):
            value = obj.get(key)
            if isinstance(value, dict) and _dict_kind(torch, value) == "state-dict":
                return value
        for value in obj.values():
            found = _model_state(torch, value)
            if found is not None:
                return found
    return None
