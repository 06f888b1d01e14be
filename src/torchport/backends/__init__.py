"""Targets as data: one TOML file per accelerator, loaded and validated here.

A target file (see npu.toml for a commented example) says what the device is
called, which namespace replaces `torch.cuda`, what must be imported to
register it, its collective backend, env vars, management tool, and per-name
decisions for CUDA APIs.  The API list it points to (kb/api/<name>.json) says
which `torch.cuda.*` names exist on it.  Adding a target means adding a file;
`load_target` also accepts a path to a TOML file outside the package.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..core.errors import UsageError

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - exercised on 3.9/3.10
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
KB_API = HERE.parent / "kb" / "api"

# Decision kinds a [names] entry may carry (exactly one of them).
NAME_DECISIONS = ("new", "unsupported", "keep", "same")


@dataclass(frozen=True)
class NameDecision:
    """What a target does with one CUDA-specific qualified name (and names under it)."""

    kind: str          # new | unsupported | keep | same (unchanged and silent: it means the same there)
    value: str         # the new qualified name, the tip, the advice text, or why it means the same
    note: str = ""     # extra message shown with a `new` rewrite
    rule: str = ""     # id of the user rule that made this decision ("" for target data)


@dataclass(frozen=True)
class Target:
    name: str
    title: str
    namespace: str                      # torch.npu, torch.accelerator, ...
    device: str = ""                    # "npu"; empty when device_expr is used
    device_expr: str = ""               # expression naming the device type; {torch} = the module's torch alias
    register: str = ""                  # module to import so the device exists ("torch_npu")
    backend: str = "gloo"               # collective backend replacing nccl
    backend_expr: str = ""              # or an expression choosing it at run time ({torch} as above)
    visible_devices_env: str = ""
    smi: str = ""
    tensor_method: str = ""             # x.cuda() -> x.<tensor_method>(); empty: x.to(device)
    is_attr: str = ""                   # x.is_cuda -> x.<is_attr>; empty: compare device type
    amp: str = "torch.amp"              # "namespace": <namespace>.amp exists; "torch.amp": use torch.amp + device
    device_index: bool = True           # "cuda:1" -> "<device>:1"; False: the index is dropped ("cpu")
    host: bool = False                  # the target is the host (cpu): code that asks "is this CUDA?" keeps
                                        # asking, the host answers no, and the project's own CPU path runs
    ops: str = ""                       # kb/ops/<ops>.json: the aten ops the target implements
    dispatch_key: str = ""              # or: its dispatch key in kb/ops/aten.json (built-in backends)
    cuda_kernels: str = "rewrite"       # "port": a tool ports CUDA kernels (musa); "rewrite": by hand
    torch_install: str = ""             # how to install PyTorch for this target (advice)
    port: dict = field(default_factory=dict)         # port-ext build glue: extension class/module, env, compiler key
    runtime: dict = field(default_factory=dict)      # torchport run: noop = [CUDA calls that do nothing here]
    doctor: dict = field(default_factory=dict)       # torchport doctor: env = {VAR = fix}, smi_args = [...]
    sim: dict = field(default_factory=dict)          # torchport sim: how the simulated device presents itself
    api_names: frozenset = frozenset()  # names of the namespace (from kb/api)
    api_modules: dict = field(default_factory=dict)  # submodule -> frozenset of names
    api_source: str = ""
    env: dict = field(default_factory=dict)          # CUDA/NCCL env var -> target env var ("" = none)
    names: dict = field(default_factory=dict)        # qualified name -> NameDecision
    needs_device: dict = field(default_factory=dict)  # function -> value it stands for on a host without a device
    device_guard: str = ""                            # the question guarding them (default <namespace>.is_available)
    no_arguments: dict = field(default_factory=dict)  # CUDA name -> why its counterpart is called only without arguments
    path: str = ""

    def has(self, attr: str, sub: Optional[str] = None) -> bool:
        """Does `<namespace>.attr` (or `<namespace>.sub.attr`) exist on this target?"""
        if sub is None:
            return attr in self.api_names or attr in self.api_modules
        names = self.api_modules.get(sub)
        return names is not None and attr in names


_REQUIRED = ("name", "title", "namespace")
_STRINGS = ("name", "title", "namespace", "device", "device_expr", "register", "backend", "backend_expr",
            "ops", "dispatch_key", "cuda_kernels", "torch_install",
            "visible_devices_env", "smi", "tensor_method", "is_attr", "amp", "api", "description", "device_guard")


def _fail(path: Path, msg: str) -> None:
    raise UsageError(f"{path}: {msg}")


def _parse(path: Path) -> Target:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        _fail(path, f"cannot read target file ({e})")
    except tomllib.TOMLDecodeError as e:
        _fail(path, f"invalid TOML: {e}")
    unknown = set(data) - set(_STRINGS) - {"env", "names", "device_index", "host", "port", "runtime", "doctor", "sim",
                                              "needs_device", "no_arguments"}
    if unknown:
        _fail(path, f"unknown keys {sorted(unknown)}")
    for key in _REQUIRED:
        if not data.get(key):
            _fail(path, f"missing required key '{key}'")
    for key in _STRINGS:
        if key in data and not isinstance(data[key], str):
            _fail(path, f"'{key}' must be a string")
    if bool(data.get("device")) == bool(data.get("device_expr")):
        _fail(path, "give exactly one of 'device' (a string) or 'device_expr' (an expression)")
    if data.get("amp", "torch.amp") not in ("namespace", "torch.amp"):
        _fail(path, "'amp' must be 'namespace' or 'torch.amp'")
    if data.get("cuda_kernels", "rewrite") not in ("port", "rewrite"):
        _fail(path, "'cuda_kernels' must be 'port' or 'rewrite'")
    names = {}
    for qualname, entry in data.get("names", {}).items():
        if not isinstance(entry, dict):
            _fail(path, f"names.'{qualname}' must be a table")
        kinds = [k for k in NAME_DECISIONS if k in entry]
        if len(kinds) != 1 or set(entry) - set(NAME_DECISIONS) - {"note"}:
            _fail(path, f"names.'{qualname}' needs exactly one of {NAME_DECISIONS} (and optionally 'note')")
        names[qualname] = NameDecision(kinds[0], str(entry[kinds[0]]), str(entry.get("note", "")))
    env = data.get("env", {})
    if not all(isinstance(v, str) for v in env.values()):
        _fail(path, "env values must be strings")
    needs_device = data.get("needs_device", {})
    for qualname, value in needs_device.items():
        if not isinstance(value, str) or not (value == "!" or _is_expression(value)):
            _fail(path, f"needs_device.'{qualname}' must be a Python expression in a string")
    no_arguments = data.get("no_arguments", {})
    if not all(isinstance(v, str) and v for v in no_arguments.values()):
        _fail(path, "no_arguments values must be strings saying why")
    api_names, api_modules, api_source = _load_api(path, data.get("api", ""))
    return Target(
        name=data["name"], title=data["title"], namespace=data["namespace"],
        device=data.get("device", ""), device_expr=data.get("device_expr", ""),
        register=data.get("register", ""), backend=data.get("backend", "gloo"),
        backend_expr=data.get("backend_expr", ""),
        visible_devices_env=data.get("visible_devices_env", ""), smi=data.get("smi", ""),
        tensor_method=data.get("tensor_method", ""), is_attr=data.get("is_attr", ""),
        amp=data.get("amp", "torch.amp"), device_index=bool(data.get("device_index", True)),
        host=bool(data.get("host", False)),
        ops=data.get("ops", ""), dispatch_key=data.get("dispatch_key", ""),
        cuda_kernels=data.get("cuda_kernels", "rewrite"), torch_install=data.get("torch_install", ""),
        port=dict(data.get("port", {})), runtime=dict(data.get("runtime", {})), doctor=dict(data.get("doctor", {})),
        sim=_sim_table(path, data.get("sim", {})),
        api_names=api_names, api_modules=api_modules, api_source=api_source,
        env=dict(env), names=names, needs_device=dict(needs_device), device_guard=data.get("device_guard", ""),
        no_arguments=dict(no_arguments), path=str(path),
    )


def _is_expression(text: str) -> bool:
    import ast

    try:
        ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    return "#" not in text


_SIM_KEYS = {"label": str, "device_name": str, "memory_gib": int, "amp_dtypes": list, "capability": list,
             "properties": dict, "version": str, "source": str}


def _sim_table(path: Path, table: dict) -> dict:
    """The [sim] table: label (the device's name in vendor error messages), device_name, memory_gib,
    amp_dtypes, capability ([] = the vendor returns None), properties, version, source."""
    for key, value in table.items():
        if key not in _SIM_KEYS:
            _fail(path, f"sim.{key}: unknown key (known: {', '.join(sorted(_SIM_KEYS))})")
        if not isinstance(value, _SIM_KEYS[key]):
            _fail(path, f"sim.{key} must be a {_SIM_KEYS[key].__name__}")
    return dict(table)


def _load_api(path: Path, api: str):
    if not api:
        return frozenset(), {}, ""
    candidates = [path.parent / api, KB_API / f"{api}.json"]
    for cand in candidates:
        if cand.is_file():
            record = json.loads(cand.read_text(encoding="utf-8"))
            modules = {k: frozenset(v) for k, v in record.get("modules", {}).items()}
            return frozenset(record["names"]), modules, record.get("version", str(cand))
    _fail(path, f"API list '{api}' not found (looked in {', '.join(str(c) for c in candidates)})")


def available_targets() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.toml"))


_CACHE: dict = {}


def load_target(name_or_path: str) -> Target:
    """Load a bundled target by name, or any target file by path."""
    key = str(name_or_path)
    if key in _CACHE:
        return _CACHE[key]
    path = Path(key)
    if not (key.endswith(".toml") and path.is_file()):
        path = HERE / f"{key}.toml"
        if not path.is_file():
            raise UsageError(f"unknown target '{key}' (choose from {', '.join(available_targets())}, or give a .toml file)")
    target = _parse(path)
    _CACHE[key] = target
    return target
