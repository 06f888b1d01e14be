"""torchport sim: simulated npu / mlu / musa devices on the CPU, to execute migrated code without the hardware.

    torchport sim --to npu -- python train.py          # converted code: `import torch_npu` finds our stand-in
    torchport run --to npu --simulate train.py         # unmodified CUDA code through the run-time patches

`install()` builds (once, cached) and loads the C++ extension (csrc/simdevice.cpp), renames
PyTorch's PrivateUse1 device to the target's device type, registers `torch.<device>` with the
vendor's API surface (namespace.py), tensor/module/storage methods, and the target's collective
backend (collectives.py).  Operators the target lacks (the knowledge base's op list for this torch
version) do what the vendor does (`fallback_mode`): npu and mlu run them on the CPU with the vendor's
warning, counted in the report (unless the vendor's own switch turns that off); musa raises.
`strict_ops` makes every one raise; `cpu_fallback` runs them on the CPU on every target.

What it proves: placement, dispatch, API surface, missing operators, collectives and control flow.
What it does not: numerics are the CPU's, and nothing here is timed like the device.  The stand-in
vendor packages (packages/<target>/) are put on sys.path only by `torchport sim` / `run --simulate`.
Options come from arguments, else TORCHPORT_SIM_* environment variables (set by the CLI so that
child processes, such as torchrun's workers, simulate the same device).
"""
from __future__ import annotations

import atexit
import json
import os
import re
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional, cast

from ..backends import load_target
from ..core.errors import UsageError
from ..core.words import counted

if TYPE_CHECKING:
    import types

    from ..backends import Target
    from ..kb.operators import OpList
    from .chips import Device
    from .namespace import VendorModule

PACKAGES = Path(__file__).resolve().parent / "packages"


def package_path(target: str) -> list:
    """The folders to put on sys.path to simulate `target`: its own stand-in package's and the shared code's.
    Only the simulated vendor's package is there, as on that vendor's machine: `find_spec("torch_mlu")` is
    None while npu is simulated (accelerate probes every vendor's package that way)."""
    return [str(PACKAGES / target), str(PACKAGES / "common")]
RNG_MODES = ("host", "device")
ENV = {"target": "TORCHPORT_SIM_TARGET", "devices": "TORCHPORT_SIM_DEVICES", "cpu_fallback": "TORCHPORT_SIM_CPU_FALLBACK",
       "strict_ops": "TORCHPORT_SIM_STRICT_OPS",
       "rng": "TORCHPORT_SIM_RNG", "report": "TORCHPORT_SIM_REPORT", "torch_version": "TORCHPORT_SIM_TORCH_VERSION",
       "chip": "TORCHPORT_SIM_CHIP"}
_LOCK = threading.Lock()
_ACTIVE: Optional[Simulator] = None


def simulated_targets() -> list:
    """Targets that describe a simulated device (a [sim] table and a device of their own)."""
    from ..backends import available_targets

    return [n for n in available_targets() if load_target(n).sim and load_target(n).register]


@dataclass
class Simulator:
    """One process's simulated device: what it is and what it counted."""

    target: Target
    devices: int                # the devices it sees: --devices, less those the visible-devices variable hides
    cpu_fallback: bool          # ops the target lacks run on the CPU (the vendor's default, or forced)
    rng: str
    ext: types.ModuleType       # the C++ extension (build.load)
    module: VendorModule        # torch.<device>
    op_list: Optional[OpList] = None
    chip: Optional[Device] = None   # the chip presented and the vendor's device rules
    fallbacks: Counter = field(default_factory=Counter)    # (op, module) -> calls
    tracker: Optional[ForwardModules] = None
    fallback: str = "raise"     # what an op the target lacks does: see fallback_mode
    autocast: dict = field(default_factory=dict)    # the vendor's autocast lists: registered, skipped ops

    def on_fallback(self, op: str) -> None:
        """Count an op the target lacks that ran on the CPU (the warning is the C++ fallback's)."""
        module = self.tracker.current if self.tracker is not None else ""
        self.fallbacks[(op, module or "")] += 1

    def report(self) -> dict:
        ops: dict = {}
        for (op, module), calls in sorted(self.fallbacks.items()):
            entry = ops.setdefault(op, {"op": op, "calls": 0, "modules": []})
            entry["calls"] += calls
            if module and module not in entry["modules"]:
                entry["modules"].append(module)
        memory = {str(i): self.ext.memory_stats(i) for i in range(self.devices)}
        ol = self.op_list
        return {"schema": 1, "simulated": True, "target": self.target.name, "device": self.target.device,
                "devices": self.devices, "chip": self.chip.name if self.chip else None,
                "cpu_fallback": self.cpu_fallback, "fallback": self.fallback, "rng": self.rng, "pid": os.getpid(),
                "rank": os.environ.get("RANK"),
                "op_list": {"vendor_version": ol.vendor_version, "torch_version": ol.torch_version,
                            "source": ol.source, "note": ol.note} if ol else None,
                "fallback_ops": sorted(ops.values(), key=lambda e: (-e["calls"], e["op"])),
                "memory": memory,
                "autocast": self.autocast,
                "note": "simulated device: numerics are the CPU's, performance is not the device's"}


class ForwardModules:
    """The module running now, by attribute path (`backbone.conv1`), from global forward hooks.
    Forward only: backward runs on autograd's device threads, where no Python hook is put (hooks on
    those threads made the interpreter abort at exit now and then); backward ops count as "(backward)"."""

    def __init__(self):
        from torch.nn.modules import module as nn_module

        self.paths: dict = {}
        self.stack: list = []
        self._handles = [nn_module.register_module_forward_pre_hook(self._enter),
                         nn_module.register_module_forward_hook(self._leave)]

    def _enter(self, module, args):
        if not self.stack and id(module) not in self.paths:   # a root: name everything below it
            for path, m in module.named_modules():
                self.paths.setdefault(id(m), path or type(module).__name__)
        self.stack.append(self.paths.get(id(module), type(module).__name__))

    def _leave(self, module, args, output):
        if self.stack:
            self.stack.pop()

    @property
    def current(self) -> str:
        import torch

        if torch._C._current_graph_task_id() != -1:
            return "(backward)"
        return self.stack[-1] if self.stack else ""


def _option(value, key: str, default):
    if value is not None:
        return value
    raw = os.environ.get(ENV[key])
    return raw if raw not in (None, "") else default


def _flag(value, key: str) -> bool:
    return str(_option(value, key, False)).lower() in ("1", "true", "yes")


FALLBACK_FILE = Path(__file__).resolve().parents[1] / "kb" / "sim" / "fallback.toml"


def vendor_fallback(target: str) -> dict:
    """kb/sim/fallback.toml's section for `target`: its vendor's CPU-fallback warning, off switch and
    errors, with where each was read ({} for a vendor without a CPU fallback)."""
    from ..core.tomlfile import tomllib

    return tomllib.loads(FALLBACK_FILE.read_text(encoding="utf-8")).get(target, {})


def _switched_off(rules: dict, environ) -> bool:
    """Whether the vendor's own environment switch turns its CPU fallback into an error."""
    raw = environ.get(rules["off_env"]) if rules.get("off_env") else None
    if raw is None:
        return False
    if "nonzero" in rules.get("off_values", ()):   # read with strtol: its leading integer, 0 when there is none
        number = re.match(r"\s*[+-]?\d+", raw)
        return number is not None and int(number.group()) != 0
    return raw in rules.get("off_values", ())


def fail_fallback_text(target: str, environ) -> str:
    """The warning of the vendor's switch that runs an op failing on the device on the CPU instead (torch_mlu's
    ENABLE_MLU_FAIL_FALLBACK, off by default), when the environment turns it on; else ""."""
    rules = vendor_fallback(target)
    on = rules.get("fail_env") and environ.get(rules["fail_env"]) in rules.get("fail_values", ())
    return rules.get("fail_warning", "") if on else ""


def fallback_mode(t, ops, *, cpu_fallback: bool = False, strict_ops: bool = False, environ=None) -> tuple:
    """What an op the target lacks does, as (mode, text, once per overload, raises NotImplementedError):
    mode "raise" (torchport's error, naming the op list), "warn" (warn with `text`, count, run on the CPU)
    or "vendor-error" (the vendor's error when its switch turns its fallback off).  The vendor's default
    is its op list's `fallback` (kb/ops/<t>.json); its texts and switch are kb/sim/fallback.toml's."""
    if strict_ops and cpu_fallback:
        raise UsageError("--strict-ops and --cpu-fallback contradict each other: give one")
    rules = vendor_fallback(t.name)
    per_overload = rules.get("warn_once", "overload") != "name"
    if strict_ops or ops is None:
        return "raise", "", per_overload, True
    forced = ("torchport sim: the operator '{op}' is not in " + f"{t.name}'s operator list; running it on the CPU "
              "(--cpu-fallback)")
    warning = rules.get("warning") if ops.fallback == "cpu" else None
    if cpu_fallback:
        return "warn", warning or forced, per_overload, True
    if ops.fallback != "cpu":
        return "raise", "", per_overload, True
    if _switched_off(rules, os.environ if environ is None else environ):
        return "vendor-error", rules["off_error"], per_overload, rules.get("off_type") == "NotImplementedError"
    return "warn", warning or forced, per_overload, True


def install(target: Optional[str] = None, *, devices: Optional[int] = None, cpu_fallback: Optional[bool] = None,
            strict_ops: Optional[bool] = None, rng: Optional[str] = None, torch_version: Optional[str] = None,
            chip: Optional[str] = None) -> Simulator:
    """Simulate `target`'s device in this process (once; a second call returns the same simulator).  The
    process sees the `devices` the target's visible-devices variable leaves (ASCEND_RT_VISIBLE_DEVICES, ...),
    renumbered from 0, as the vendor's runtime shows them."""
    global _ACTIVE
    with _LOCK:
        name = _option(target, "target", None)
        if _ACTIVE is not None:
            if name and load_target(name).name != _ACTIVE.target.name:
                raise UsageError(f"this process already simulates {_ACTIVE.target.name}")
            return _ACTIVE
        if not name:
            raise UsageError(f"no target to simulate: give one (or set {ENV['target']})")
        t = load_target(name)
        if not (t.sim and t.register):
            raise UsageError(f"'{t.name}' has no simulated device (simulated targets: {', '.join(simulated_targets())}): "
                             f"{'run it directly, no simulation is needed' if t.kind != 'vendor' else 'add a [sim] table'}")
        try:
            count = int(_option(devices, "devices", 1))
        except ValueError:
            raise UsageError(f"{ENV['devices']} must be a number") from None
        if not 1 <= count <= 16:
            raise UsageError(f"the simulator has 1 to 16 devices (got {count})")
        fallback = (_flag(cpu_fallback, "cpu_fallback"), _flag(strict_ops, "strict_ops"))
        rng_mode = _option(rng, "rng", "host")
        if rng_mode not in RNG_MODES:
            raise UsageError(f"rng must be one of {', '.join(RNG_MODES)} (got '{rng_mode}')")
        from . import chips

        device = chips.device(t.name, _option(chip, "chip", None))
        _ACTIVE = _start(t, chips.visible_count(t.name, count), fallback, rng_mode,
                         _option(torch_version, "torch_version", None), device)
        return _ACTIVE


def _start(t, count: int, fallback: tuple, rng_mode: str, torch_version: Optional[str], chip) -> Simulator:
    import torch

    from ..kb import operators
    from . import autocast, build, collectives, compiling, dtypes, kernels, namespace, settle

    if torch._C._get_privateuse1_backend_name() not in ("privateuseone", t.device):
        raise UsageError(f"PrivateUse1 is already taken by '{torch._C._get_privateuse1_backend_name()}' in this process")
    ext = build.load()
    settle.settle_backward()
    ext.configure(count, chip.total_memory, t.sim.label or t.device.upper(), rng_mode == "device")
    ext.configure_allocator(*chip.allocator())
    double_warning = chip.double_as_float()
    ext.set_double_as_float(bool(double_warning), double_warning)
    if torch._C._get_privateuse1_backend_name() != t.device:
        torch.utils.rename_privateuse1_backend(t.device)
    module = namespace.build(t, ext, rng_mode == "device", chip)
    torch._register_device_module(t.device, module)
    sys.modules[f"torch.{t.device}"] = module
    namespace.provide_converted_names(t, chip.rules.get("setting_defaults", {}))
    torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=True,
                                                         for_packed_sequence=True)
    ops = operators.op_list(t, torch_version or torch.__version__.split("+")[0])
    mode, text, per_overload, not_implemented = fallback_mode(t, ops, cpu_fallback=fallback[0], strict_ops=fallback[1])
    sim = Simulator(t, count, mode == "warn", rng_mode, ext, module, ops, chip, fallback=mode)
    if mode == "warn":
        sim.tracker = ForwardModules()
    ext.set_op_sets(no_check_ops(), foreign_ops(t, ops))   # before set_operators, which reads these sets
    limits = dtypes.for_device(t.name, chip.name) if ops is not None else []
    ext.set_dtype_limits(limits, fail_fallback_text(t.name, os.environ))
    unknown = ext.set_operators(host_kernels(ops), limited_composites(ops, limits), ops is not None,
                                sim.on_fallback if mode == "warn" else None, _lacking_note(t, ops, mode))
    ext.set_fallback(mode, text, per_overload, not_implemented)
    ext.set_sparse_operators(sparse_ops(t, ops), vendor_fallback(t.name).get("sparse_error", "") if ops else "")
    kernels.register(ops.ops if ops else None)
    kernels.register_whole_ops(sorted(set(vendor_composites(ops)) - set(dtypes.decomposed(t.name))), t.device,
                               ext.host_alias, limits, t.sim.label or t.device.upper(), set(no_check_ops()))
    sim.autocast = autocast.register(ext, t.name)
    compiling.install(t.device)
    if unknown:   # host_kernels only lists ops of this torch's aten.json; a mismatch means stale data
        print(f"torchport sim: {counted(len(unknown), 'op')} of the {t.name} list {'is' if len(unknown) == 1 else 'are'} unknown to torch {torch.__version__}: "
              f"{', '.join(unknown[:5])}", file=sys.stderr)
    if torch.distributed.is_available():
        collectives.register(t.backend, t.device, ext.host_alias)
    folder = os.environ.get(ENV["report"])
    if folder:
        atexit.register(write_report, sim, Path(folder))
    return sim


def _lacking_note(t, ops, mode: str = "raise") -> str:
    if ops is None:
        return ""
    on_hardware = ("on the hardware it runs on the CPU with a warning (slow)" if ops.fallback == "cpu"
                   else "this is an error on the hardware too" if ops.fallback == "error" else "")
    import torch

    running = torch.__version__.split("+")[0]
    mismatch = (f"; the list is for torch {ops.torch_version} and this is torch {running}, whose decompositions "
                f"may call ops that list does not name" if ops.torch_version.split("+")[0] != running else "")
    how = ("`--strict-ops` made this an error; without it the simulator does what the hardware does"
           if ops.fallback == "cpu" else "`torchport sim --cpu-fallback` runs it on the CPU and counts it")
    return (f"torchport simulated {t.device}: {t.name} {ops.vendor_version} (torch {ops.torch_version}) lacks this "
            f"operator; {on_hardware}; {how}{mismatch}")


def host_kernels(ops) -> list:
    """The ops of the target's list that get a host kernel: those with a CPU kernel of their own in
    PyTorch.  The others are composite (torch decomposes them on any device) or cannot run here."""
    if ops is None:
        return []
    from ..kb.operators import aten

    table = aten()["ops"]
    return sorted(op for op in ops.ops if "CPU" in (table.get(op) or {}).get("dispatch", ()))


def no_check_ops() -> list:
    """Ops whose device kernels make no device check of their own (device_check: NoCheck in aten.json)."""
    from ..kb.operators import aten

    return sorted(op for op, info in aten()["ops"].items() if info.get("device_check") == "NoCheck")


def _release(t, ops) -> dict:
    """The entry of kb/ops/<t>.json that `ops` was read from (the vendor release chosen for this torch)."""
    from ..kb.operators import vendor

    data = vendor(t.ops) if t.ops and ops is not None else None
    return next((v for v in (data or {}).get("versions", ()) if v.get("torch_version") == ops.torch_version
                 and v.get("vendor_version") == ops.vendor_version), {})


def foreign_ops(t, ops) -> list:
    """Ops of other namespaces the vendor registers device kernels for (its release's `other_namespaces`,
    e.g. torch_mlu's torchvision::nms): 'torchvision::nms'."""
    spaces = _release(t, ops).get("other_namespaces") or {}
    return sorted(f"{ns}::{op}" for ns, names in spaces.items() for op in names)


def sparse_ops(t, ops) -> list:
    """Ops the target registers for sparse COO tensors on its device (SparsePrivateUse1 in its release's
    key_limited): the simulator gives those it can (csrc set_sparse_operators) a kernel."""
    return sorted(op for op, keys in (_release(t, ops).get("key_limited") or {}).items() if "SparsePrivateUse1" in keys)


def limited_composites(ops, limits) -> list:
    """Ops of the target's list that PyTorch composes on any device (CompositeExplicitAutograd in aten.json: no CPU
    kernel of their own) and whose vendor kernel has a dtype limit: they get a kernel that checks it, then composes."""
    if ops is None:
        return []
    from ..kb.operators import aten

    table = aten()["ops"]
    names = {limit[0].partition(".")[0] for limit in limits}   # the extension matches overloads exactly
    return sorted(op for op in ops.ops if op.partition(".")[0] in names
                  and (table.get(op) or {}).get("composite") == "explicit" and "CPU" not in table[op].get("dispatch", ()))


def vendor_composites(ops) -> list:
    """Ops of the target's list that torch decomposes (CompositeImplicitAutograd in aten.json) but the
    vendor registers a kernel for, so they run whole (torch_mlu's scaled_dot_product_attention) instead
    of through this torch's decomposition, which may call ops the vendor's older list lacks.  Views and
    in-place ops keep decomposing (a whole-op kernel copies its results)."""
    if ops is None:
        return []
    from ..kb.operators import aten

    table = aten()["ops"]
    return sorted(op for op in ops.ops if (table.get(op) or {}).get("composite") == "implicit")


def write_report(sim: Simulator, folder: Path) -> None:
    """Write this process's report into `folder` (sim-<pid>.json, atomically)."""
    if not folder.is_dir():   # the launcher made it and is done with it
        return
    try:
        tmp = folder / f".sim-{os.getpid()}.json.tmp"
        tmp.write_text(json.dumps(sim.report(), indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, folder / f"sim-{os.getpid()}.json")
    except OSError:
        pass


def _report_failure(text: str) -> bool:
    """Tell `torchport sim` why this process could not simulate the device (failed-<pid>.json); False when
    no launcher is listening."""
    folder = os.environ.get(ENV["report"])
    if not folder or not Path(folder).is_dir():
        return False
    try:
        tmp = Path(folder) / f".failed-{os.getpid()}.json.tmp"
        tmp.write_text(json.dumps({"error": text}) + "\n", encoding="utf-8")
        os.replace(tmp, Path(folder) / f"failed-{os.getpid()}.json")
    except OSError:
        return False
    return True


def active() -> Optional[Simulator]:
    """The simulator of this process, or None."""
    return _ACTIVE


def stand_in(package: str, namespace: dict) -> None:
    """Fill a stand-in vendor package (packages/<target>/<register>/__init__.py): simulate its target."""
    target = next((n for n in simulated_targets() if load_target(n).register == package), None)
    if target is None:
        raise ImportError(f"{package}: no simulated target registers this package")
    wanted = os.environ.get(ENV["target"])
    if wanted and load_target(wanted).name != target:   # as on a machine that has only the other vendor's stack
        raise ImportError(f"No module named '{package}' (torchport is simulating {load_target(wanted).name}, "
                          f"whose package is {load_target(wanted).register})")
    try:
        sim = install(target)
    except UsageError as e:   # an unsafe or unbuildable cache: one line, and the launcher is told why
        if not _report_failure(str(e)):   # the launcher's summary line says it otherwise
            print(f"torchport sim: {e}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    t = sim.target
    namespace[t.device] = sim.module
    sys.modules[f"{package}.{t.device}"] = sim.module
    from .namespace import package_is_namespace

    top_level = sim.module if package_is_namespace(t) else None   # torch_musa.device_count is torch.musa's
    for name, module in list(sys.modules.items()):   # torch_npu.npu.utils is torch.npu.utils
        if name.startswith(f"{t.namespace}."):
            sub = name[len(t.namespace) + 1:]
            sys.modules.setdefault(f"{package}.{t.device}.{sub}", module)
            if top_level is not None:
                sys.modules.setdefault(f"{package}.{sub}", module)
    namespace["__version__"] = f"{sim.op_list.vendor_version if sim.op_list else ''}+torchport.simulated"
    namespace["_torchport_simulated"] = True
    import torch

    from .comm import register as register_comm

    if torch.distributed.is_available():   # torch.distributed.is_hccl_available, torch_npu.distributed (kb/sim/dist.toml)
        from .collectives import add_python_api

        add_python_api(t.backend)
    chip = cast("Device", sim.chip)   # install's simulator presents one
    register_comm(chip, t.device)   # DataParallel's copies, where the vendor registers them (kb/sim/chips.toml)
    if "formats" in chip.rules:   # torch_npu.npu_format_cast, get_npu_format, Format
        from . import formats

        namespace.update(formats.functions(chip, t.device))

    def __getattr__(name):   # noqa: N807 - module-level attribute hook
        if name.startswith("__"):
            raise AttributeError(name)
        if top_level is not None:
            return getattr(top_level, name)
        raise AttributeError(f"module '{package}' has no attribute '{name}' in the torchport simulator "
                             f"(the simulator models {package}.{t.device} only)")

    namespace["__getattr__"] = __getattr__


__all__ = ["install", "active", "stand_in", "write_report", "simulated_targets", "Simulator", "PACKAGES", "package_path", "ENV", "RNG_MODES"]
