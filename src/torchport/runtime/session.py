"""One patched process: the target, the options, every attribute replaced (so `undo` can put it
back), and the counters.

`Patcher` is the only place that changes objects outside torchport: each change is logged with
the value it replaced, and `undo` restores them newest first.
"""
from __future__ import annotations

import contextlib
import importlib
import warnings
from types import FrameType
from typing import Optional

from ..backends import Target
from . import standins
from .devices import DeviceMap
from .stats import Stats

_MISSING = object()


class TorchportUnsupported(RuntimeError):
    """A CUDA API was called that has no counterpart on the target."""


class TorchportWarning(UserWarning):
    """A CUDA API with no counterpart was called and ignored (on_missing="warn"), or answered
    with a neutral value, or a setting was changed for the target (once per API)."""


class TorchportMissing(AttributeError, TorchportUnsupported):
    """`torch.cuda.X` where the target has no X and no stand-in: an AttributeError, so
    `hasattr(torch.cuda, "X")` answers False, and a TorchportUnsupported naming the target."""

    def __init__(self, text: str, api: str):
        super().__init__(text)
        self.api = api


def _outside_torchport() -> int:
    """The warnings stacklevel of the first frame outside torchport and torch (the user's line)."""
    import sys

    frame: FrameType | None = sys._getframe(2)
    level = 2
    while frame is not None and ("/torchport/" in frame.f_code.co_filename
                                 or "/torch/" in frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 2


class Patcher:
    def __init__(self):
        self.log: list = []

    def set(self, obj, name: str, value) -> None:
        old = obj.__dict__.get(name, _MISSING) if hasattr(obj, "__dict__") else getattr(obj, name, _MISSING)
        self.log.append(("attr", obj, name, old))
        setattr(obj, name, value)

    def set_item(self, mapping: dict, key, value) -> None:
        self.log.append(("item", mapping, key, mapping.get(key, _MISSING)))
        mapping[key] = value

    def set_class(self, module, cls: type) -> None:
        """`module` (or any object) becomes an instance of `cls`, even where its own __setattr__ refuses
        (torch.backends.cuda.matmul)."""
        self.log.append(("class", module, "__class__", module.__class__))
        object.__setattr__(module, "__class__", cls)

    def undo(self) -> None:
        for kind, obj, key, old in reversed(self.log):
            if kind == "item":
                if old is _MISSING:
                    obj.pop(key, None)
                else:
                    obj[key] = old
            elif kind == "class":
                object.__setattr__(obj, "__class__", old)
            elif old is _MISSING:
                with contextlib.suppress(AttributeError):
                    delattr(obj, key)
            else:
                setattr(obj, key, old)
        self.log.clear()


def resolve_object(qualname: str):
    """The object a dotted name refers to (importing modules on the way), or None."""
    parts = qualname.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


class Session:
    """The state of one patched process."""

    def __init__(self, target: Target, torch, device_type: str, backend: str, policy: str, on_missing: str):
        self.target, self.torch = target, torch
        self.device_type, self.backend = device_type, backend
        self.policy, self.on_missing = policy, on_missing
        self.amp_dtype: Optional[str] = None   # --amp-dtype: what CUDA's float16 autocast becomes
        self.devices = DeviceMap(device_type, target.device_index and device_type != "cpu", torch.device)
        self.stats = Stats(target.name, device_type, policy, on_missing)
        self.patcher = Patcher()
        self.env_restore: dict = {}
        self._warned: set = set()
        self.told_cuda_noted = False   # told_cuda: an installed library was told CUDA's real answer (said once)
        self.cpu_stand_in_noted = False   # the cpu target: the project was told CUDA is available (said once)
        self.host = standins.Host(torch, device_type, target.title, target.runtime, target.host)

    @property
    def title(self) -> str:
        return self.target.title

    def count(self, api: str, counter: str = "redirected", message: str = "") -> None:
        self.stats.hit(api, counter, message)

    def missing(self, api: str, message: str, like=None):
        """A stand-in for a CUDA API with no counterpart: raises when called (or warns and returns
        None), naming the API and the target.  A class stays a class, so isinstance checks work."""
        session = self
        generic = "has no counterpart in" in message  # ApiMap's generic text, written for convert
        text = (f"{api} has no counterpart on {self.title}: torchport cannot redirect it" if generic
                else f"{api} has no counterpart on {self.title}: {message}")
        text += " (remove or guard the call, or run with --on-missing warn to skip it)"
        if session.on_missing != "warn":
            return TorchportMissing(text, api)

        def fail(*args, **kwargs):
            session.count(api, "failed", text)
            if session.on_missing == "warn":
                warnings.warn(text + " -- ignored", TorchportWarning, stacklevel=2)
                return None
            raise TorchportUnsupported(text)

        if isinstance(like, type):
            return type(like.__name__, (), {"__new__": lambda cls, *a, **k: fail(*a, **k),
                                           "__doc__": text, "__module__": "torchport.missing"})
        fail.__name__ = getattr(like, "__name__", api.rsplit(".", 1)[-1])
        fail.__doc__ = text
        return fail

    def told_cuda(self, api: str, filename: str) -> None:
        """An installed library asked `api` and got CUDA's real answer (--policy project): said once in the report,
        naming the first library, since a library that then takes its CPU branch (or asserts CUDA) fails later."""
        if not self.told_cuda_noted:
            self.told_cuda_noted = True
            from .callers import library_name

            where = library_name(filename)
            self.stats.notes.append(f"an installed library ({where}) asked {api} and was told CUDA's real answer "
                                    "(--policy project: only the project's code is told the target's): if it then "
                                    "fails or leaves tensors on the CPU, run with --policy always")

    def warn_once(self, key: str, text: str) -> None:
        """A TorchportWarning the first time `key` comes up in this process."""
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(text, TorchportWarning, stacklevel=_outside_torchport())

    def neutral(self, api: str, value, meaning: str):
        """A stand-in returning a neutral value (`value` is the stand-in function): counted as a
        stand-in, warned once, so a script's logging or capability query never stops the run."""
        session = self
        text = f"{api} has no counterpart on {self.title}: torchport returns {meaning}"

        def standin(*args, **kwargs):
            session.count(api, "standin", text)
            session.warn_once(api, text + " (--on-missing raise to fail instead)")
            return value(*args, **kwargs)

        standin.__name__ = getattr(value, "__name__", api.rsplit(".", 1)[-1])
        standin.__doc__ = f"{text} (torchport stand-in)"
        return standin

    def noop(self, api: str, message: str):
        """A CUDA call that means nothing on the target (target data says which): does nothing,
        counted; returns a null context so `with torch.cuda.device(0):` works too."""
        session = self

        def nothing(*args, **kwargs):
            session.count(api, "noop", message)
            return contextlib.nullcontext()

        nothing.__name__ = api.rsplit(".", 1)[-1]
        nothing.__doc__ = f"{api}: nothing to do on {self.title} (torchport)"
        return nothing

    def object(self, qualname: str) -> Optional[object]:
        return resolve_object(qualname)
