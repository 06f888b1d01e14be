"""What a checkpoint's pickles would import, read without running them.

`globals_in(path)` walks the pickle opcodes (pickletools, nothing is unpickled) of a checkpoint: the `*.pkl`
records of torch.save's zip format, or the pickles at the start of the legacy format.  It resolves
`GLOBAL` and protocol 4's `STACK_GLOBAL` (its two names come from string opcodes or the memo), and gives
each global under the name Python 3 would import: a protocol 0-2 pickle says `commands.Popen` or
`__builtin__.eval` where Python imports `subprocess.Popen` or `builtins.eval` (`_compat_pickle`).
`ckpt.load` refuses a checkpoint that names a code-running global before torch reads a byte of it.
"""
from __future__ import annotations

import _compat_pickle
import io
import pickletools
import zipfile
from pathlib import Path

STRING_OPS = frozenset({"STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE",
                        "BINUNICODE8"})
GET_OPS = frozenset({"GET", "BINGET", "LONG_BINGET"})
PUT_OPS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
LEGACY_PICKLES = 4        # the legacy format: magic number, protocol, system info, then the object
MAX_RECORD = 64 << 20     # a pickle record larger than this is not read whole (the scan stops there)


def python3_name(module: str, name: str) -> str:
    """`module.name` as Python 3's unpickler imports it (protocol 0-2 pickles may use Python 2's names)."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    elif module in _compat_pickle.IMPORT_MAPPING:
        module = _compat_pickle.IMPORT_MAPPING[module]
    return f"{module}.{name}"


def _globals_of(stream) -> tuple:
    """(globals, ended) of one pickle read from `stream`: ended is False when it was not a whole pickle
    (the end of the pickles, or bytes that are not one).  A STACK_GLOBAL whose names are not strings
    pushed before it is `?.?`."""
    found: list = []
    memo: dict = {}
    recent: list = []          # the last values pushed, strings or None, for STACK_GLOBAL and MEMOIZE
    ended = True
    try:
        for op, arg, _pos in pickletools.genops(stream):
            name = op.name
            if name in STRING_OPS:
                value = arg.decode("latin-1") if isinstance(arg, bytes) else arg
                recent.append(value)
            elif name in GET_OPS:
                recent.append(memo.get(arg))
            elif name in PUT_OPS:
                memo[arg] = recent[-1] if recent else None
                continue
            elif name == "MEMOIZE":
                memo[len(memo)] = recent[-1] if recent else None
                continue
            elif name == "GLOBAL":
                module, _, attr = str(arg).partition(" ")
                found.append(python3_name(module, attr))
                recent.append(None)
            elif name == "STACK_GLOBAL":
                pushed_module, pushed_attr = (recent[-2], recent[-1]) if len(recent) >= 2 else (None, None)
                found.append(f"{pushed_module}.{pushed_attr}"
                             if isinstance(pushed_module, str) and isinstance(pushed_attr, str) else "?.?")
                recent.append(None)
            elif name in ("FRAME", "PROTO", "MARK"):
                continue
            else:
                recent.append(None)
            del recent[:-4]
    except (ValueError, EOFError, OverflowError, UnicodeError, TypeError):
        ended = False
    return found, ended


def globals_in(path: Path) -> list:
    """The globals (sorted `module.Name`) the checkpoint at `path` would import when loaded; what cannot be
    read as pickles adds nothing (torch.load refuses it later)."""
    found: set = set()
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as z:
                for info in z.infolist():
                    if info.filename.endswith(".pkl") and info.file_size <= MAX_RECORD:
                        found.update(_globals_of(io.BytesIO(z.read(info)))[0])
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, RuntimeError, EOFError):
            pass
        return sorted(found)
    try:
        with open(path, "rb") as f:
            for _ in range(LEGACY_PICKLES):
                names, ended = _globals_of(f)
                found.update(names)
                if not ended:
                    break
    except OSError:
        pass
    return sorted(found)
