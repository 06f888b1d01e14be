"""The catalogue of finding codes: every code torchport reports, in one table.

A code (`TP201`) names one kind of finding.  Its entry says what it is called,
its category, which component emits it (`owner`), what kind of fix it stands
for (`fix`), what it finds, why it matters and an example: the example's
`before` converted for the npu target gives `after` (tests/test_codes.py checks
it, and that every code is emitted by some checker on a fixture).
`docs/rules.md` and `torchport rules [CODE]` are generated from this table.

A code has a lifecycle, as a linter's rules do (`status`): `preview` (new, reported only with
`--preview` or `preview = true`), `stable`, `deprecated` (still reported; its note says what to use) and
`removed` (never reported; kept so that a comment, `--select/--ignore` or a setting naming it is understood).
A renamed code keeps working under its old id: `REDIRECTS` maps it to the new one (`resolve`).

Code refers to codes through these constants (`codes.TP201`), never through
strings.  A second entry with an id or a name already taken is an error when
this module loads.  This module is the bottom layer: it imports nothing of
torchport.
"""
from __future__ import annotations

from dataclasses import dataclass

# Components that emit codes.
PIPELINE = "pipeline"      # any tree command: a file it could not read, convert or write
CONVERT = "convert"        # Python, notebooks, shell scripts, config files (convert, check, analyze)
ANALYZE = "analyze"        # what only the assessment looks for (C++/CUDA sources, dependencies)
PORT = "port-ext"          # CUDA C++ extensions and their build glue

# Kinds of fix a code stands for.
REWRITE = "rewrite"        # rewritten for the target
MAPPED = "mapped"          # rewritten where the target has a counterpart, otherwise reported
REPORT = "report"          # reported with advice; nothing is rewritten
ERROR = "error"            # the file was not processed

OWNERS = (PIPELINE, CONVERT, ANALYZE, PORT)

# A code's lifecycle.
PREVIEW = "preview"        # new: reported only with --preview (or `preview = true` in [tool.torchport])
STABLE = "stable"
DEPRECATED = "deprecated"  # still reported; `note` says what replaces it
REMOVED = "removed"        # never reported; known so that comments and settings naming it are understood
STATUSES = (PREVIEW, STABLE, DEPRECATED, REMOVED)
FIXES = {REWRITE: "rewritten", MAPPED: "rewritten or reported", REPORT: "reported", ERROR: "not processed"}


@dataclass(frozen=True)
class Code:
    id: str
    name: str
    category: str
    owner: str
    fix: str
    what: str                    # one line
    why: str = ""                # the paragraph behind it
    example: tuple[str, ...] = ()   # (before, after) for the npu target
    left_as: str = ""            # the kind of migrate's "What's left" item it is, where not its action's (KINDS)
    status: str = STABLE         # a STATUSES word
    note: str = ""               # deprecated or removed: why, and what to use instead

    @property
    def summary(self) -> str:
        return self.what

    @property
    def doc(self) -> str:
        """What and why, as one text."""
        return self.what + (f"\n\n{self.why}" if self.why else "")

    @property
    def family(self) -> Family:
        return next(f for f in FAMILIES if self.id.startswith(f.prefix))


@dataclass(frozen=True)
class Family:
    prefix: str
    title: str
    about: str = ""


CODES: dict[str, Code] = {}
_NAMES: set[str] = set()


def _define(id: str, name: str, category: str, owner: str, fix: str, what: str, why: str = "",  # noqa: PLR0913
            example: tuple[str, ...] = (), left_as: str = "", status: str = STABLE, note: str = "") -> Code:
    if id in CODES or name in _NAMES or id in REDIRECTS:
        raise ValueError(f"duplicate code {id} {name}")
    if owner not in OWNERS or fix not in FIXES or category not in CATEGORIES or status not in STATUSES:
        raise ValueError(f"{id}: unknown owner, fix, category or status ({owner}, {fix}, {category}, {status})")
    if status in (DEPRECATED, REMOVED) and not note:
        raise ValueError(f"{id}: a {status} code says why, and what to use instead (note)")
    CODES[id] = code = Code(id, name, category, owner, fix, what, why, tuple(example), left_as, status, note)
    _NAMES.add(name)
    return code


# A renamed code's old id -> its id now (the old one keeps working in comments and settings).
REDIRECTS: dict[str, str] = {}


def _renamed(old: str, new: str) -> None:
    if old in CODES or old in REDIRECTS or new not in CODES:
        raise ValueError(f"redirect {old} -> {new}: {old} must be free and {new} a code")
    REDIRECTS[old] = new


def resolve(word: str) -> str:
    """A code's id now: a renamed code's new id, anything else (a code, a prefix, a user rule's id) unchanged."""
    return REDIRECTS.get(word, word)


def lookup(id: str) -> Code:
    """The code with this id (KeyError for an unknown one)."""
    return CODES[id]


def in_preview() -> frozenset[str]:
    """The codes reported only with --preview."""
    return frozenset(c.id for c in CODES.values() if c.status == PREVIEW)


def removed() -> frozenset[str]:
    """The codes never reported any more."""
    return frozenset(c.id for c in CODES.values() if c.status == REMOVED)


# Finding categories: the report group each belongs to ("" = not a touchpoint of the assessment).
CATEGORIES = {
    "device-api": "device APIs", "rng": "device APIs", "stream": "device APIs", "memory": "device APIs",
    "tensor-type": "device APIs", "unknown-api": "device APIs", "other": "device APIs",
    "tensor-method": "tensor methods", "device-string": "device strings",
    "distributed": "distributed", "nccl": "distributed", "data-parallel": "distributed",
    "amp": "AMP", "env-var": "env vars", "profiler": "profiler", "cudnn": "cudnn flags",
    "graphs": "CUDA graphs", "nvtx": "NVTX", "capability": "capability checks",
    "extension": "C++/CUDA extensions", "third-party": "third-party packages", "tooling": "tools and scripts",
    "import": "", "input": "", "user-rule": "", "failed": "", "output": "", "port": "",
    "distributed-mode": "",
}

FAMILIES = (
    Family("TP0", "Files and imports", "Files torchport could not process (TP000) and the imports a conversion adds."),
    Family("TP1", "CUDA names", """\
Every use of an imported name (`torch.cuda.*`, `torch.backends.cudnn`, AMP, the profiler, `DataParallel`,
CUDA-only packages...) is resolved against the target's API list and decisions; the resolution's category picks
the code that reports it.  Names imported from CUDA modules (`from torch.cuda.amp import autocast`,
`from torch.cuda import amp, Stream`, `import torch.cuda as tc`, `from torch import cuda`) are rewritten at the
import (`from torch import npu as cuda` keeps the local name) when each use of the bound name maps into the same
target module.  Otherwise the import stays, uses that can be converted are rewritten to full target names, and
the rest are reported, so a file never mixes both meanings of one name."""),
    Family("TP2", "Device strings and device checks"),
    Family("TP3", "Distributed"),
    Family("TP4", "Environment variables and configuration"),
    Family("TP5", "Tensor methods"),
    Family("TP6", "Profiler"),
    Family("TP7", "Reported for manual work"),
    Family("TP8", "Shell launch scripts"),
    Family("TP90", "Assessment: C++/CUDA sources", "Found by `torchport analyze`; `torchport port-ext` ports them."),
    Family("TP91", "Assessment: dependencies"),
    Family("TP95", "C++ extension porting (port-ext)", """\
Besides these findings, port-ext renames CUDA source files per target (`.cu` -> `.mu`, `.cuh` -> `.muh` for
MUSA) and counts the CUDA-looking identifiers the mapping does not know (`cuda*`, `cublas*`, `CUDA_*`...),
leaving them as they are; both are in port_report.md and port_stats.csv."""),
    Family("TP96", "Distributed mode (convert --distributed)"),
)


TP000 = _define(
    'TP000', 'file-not-processed', 'input', PIPELINE, ERROR,
    what='A file that could not be read, converted or written; it is copied unchanged or left out, and named.',
    why="""\
The category says whose problem it is: `input` (not Python, not decodable, a syntax error: the user's file),
`output` (the destination could not be written) or `failed` (torchport itself failed on the file: a bug,
with the traceback in torchport.log).  The rest of the tree is still processed.""",
)

TP001 = _define(
    'TP001', 'register-import', 'import', CONVERT, REWRITE,
    what='Add the import that registers the target device (`import torch_npu`) after the first torch import.',
    why="""\
Added to every changed file that imports torch, and to the launch script (`-l`).
It goes right after the file's first `import torch...` statement, in the same
block (so after the docstring and `__future__` imports, never inside a string or a
`try`/`if` the torch import is not in); before it when that import itself was
rewritten to the target namespace.  Files that already import the package are
left alone.  The import carries `# noqa: F401` so linters with autofix do not
remove an import that nothing seems to use.  Targets built into PyTorch (xpu, mps, cpu, accelerator) need none.""",
    example=('import torch\n'
             'x = torch.ones(2).cuda()\n',
             'import torch\n'
             'import torch_npu  # noqa: F401\n'
             'x = torch.ones(2).npu()\n'),
)

TP003 = _define(
    'TP003', 'runtime-shim', 'import', CONVERT, REWRITE,
    what=("`migrate --runtime-shim` (`convert --runtime-shim`): the target's run-time mapping imported first in each "
          "entry script (`import torchport.auto`; on npu Ascend's `from torch_npu.contrib import transfer_to_npu`)."),
    why="""\
Convert rewrites the project's own code; a library it calls can still run CUDA code
(a `device="cuda"` default, a `.cuda()` inside a helper) that `analyze` lists under
"Installed libraries".  The run-time mapping sends those calls to the target too.  An
entry script is a file with a top-level `if __name__ == "__main__":` block, or a
`__main__.py`.  The import goes first, after the docstring and `__future__` imports, so
it runs before anything imports torch; a file that already has it is left alone.
`import torchport.auto` needs torchport installed where the project runs, and picks
the target from TORCHPORT_TARGET, else the installed vendor stack.""",
    example=('import torch\n'
             'if __name__ == "__main__":\n'
             '    print(torch.ones(2).cuda())\n',
             'from torch_npu.contrib import transfer_to_npu  # noqa: F401 (torchport --runtime-shim)\n'
             'import torch\n'
             'import torch_npu  # noqa: F401\n'
             'if __name__ == "__main__":\n'
             '    print(torch.ones(2).npu())\n'),
)

TP002 = _define(
    'TP002', 'missing-imports', 'import', CONVERT, REWRITE,
    what='Add `import torch` (or another package) when a rewrite names it and the file does not import it.',
    why="""\
Device-agnostic rewrites (`torch.accelerator...`), full target names in files that
only did `from torch.cuda import ...`, and user rules renaming into another
package need the name bound.""",
)

TP101 = _define(
    'TP101', 'cuda-device-api', 'device-api', CONVERT, MAPPED,
    what='torch.cuda device management -> the target namespace.',
    why="""\
`is_available`, `device_count`, `set_device`, `current_device`, `synchronize`,
`get_device_name`, `torch.cuda.device(...)` and the module itself move to the
target's namespace when its API list has the name; otherwise the call is left as
is and reported as unsupported with a tip, never renamed to something that does
not exist.  Works through any import spelling (`import torch as th`,
`import torch.cuda as tc`, `from torch import cuda`, `from torch.cuda import X`).""",
    example=('torch.cuda.set_device(args.gpu)\n',
             'torch.npu.set_device(args.gpu)\n'),
)

TP102 = _define(
    'TP102', 'cuda-tensor-types', 'tensor-type', CONVERT, MAPPED,
    what="Legacy typed tensors `torch.cuda.FloatTensor` & co. -> the target's typed tensors.",
    why="""\
Moved when the target defines them (torch_npu, torch_mlu, torch_musa do; the cpu target has
`torch.FloatTensor` & co.); otherwise reported: use `torch.tensor(..., dtype=..., device=...)`.""",
    example=('t = torch.cuda.FloatTensor([1.0])\n',
             't = torch.npu.FloatTensor([1.0])\n'),
)

TP103 = _define(
    'TP103', 'cuda-rng', 'rng', CONVERT, MAPPED,
    what='Seeding and RNG state: `manual_seed(_all)`, `seed`, `get/set_rng_state` -> target.',
    why="""\
Targets without device RNG functions (cpu, accelerator) map them to the global
`torch.manual_seed` & co., which seed every device.""",
    example=('torch.cuda.manual_seed_all(0)\n',
             'torch.npu.manual_seed_all(0)\n'),
)

TP104 = _define(
    'TP104', 'cuda-streams-events', 'stream', CONVERT, MAPPED,
    what='Streams and events: `Stream`, `stream(...)`, `current_stream`, `Event` -> target.',
    why="""\
Arguments such as `record_stream(torch.cuda.current_stream())` follow the same rule.""",
    example=('s = torch.cuda.Stream()\n'
             'with torch.cuda.stream(s):\n'
             '    pass\n',
             's = torch.npu.Stream()\n'
             'with torch.npu.stream(s):\n'
             '    pass\n'),
)

TP105 = _define(
    'TP105', 'cuda-memory', 'memory', CONVERT, MAPPED,
    what='Memory statistics and caching allocator: `empty_cache`, `memory_allocated`... -> target.',
    example=('torch.cuda.empty_cache()\n',
             'torch.npu.empty_cache()\n'),
)

TP106 = _define(
    'TP106', 'cuda-amp', 'amp', CONVERT, REWRITE,
    what="`torch.cuda.amp.autocast/GradScaler/custom_fwd/custom_bwd` -> the target's AMP.",
    why="""\
Targets with their own `amp` namespace get the same names there; the others get
`torch.amp.*` with the device inserted (`autocast("xpu", enabled=...)`,
`GradScaler("xpu")`, `@custom_fwd(device_type="xpu")`), positional arguments turned
into keywords where the signatures differ.  `torch.autocast("cuda")` and
`torch.amp.GradScaler("cuda")` are device strings (TP201).""",
    example=('with torch.cuda.amp.autocast(enabled=True):\n'
             '    pass\n',
             'with torch.npu.amp.autocast(enabled=True):\n'
             '    pass\n'),
)

TP107 = _define(
    'TP107', 'cuda-graphs', 'graphs', CONVERT, MAPPED,
    what='CUDA graphs: `CUDAGraph`, `graph`, `make_graphed_callables` -> target graph API or reported.',
    example=('g = torch.cuda.CUDAGraph()\n',
             'g = torch.npu.NPUGraph()\n'),
)

TP108 = _define(
    'TP108', 'nvtx', 'nvtx', CONVERT, MAPPED,
    what="NVTX ranges -> the target's tracing markers (MLU cnpx, NPU mstx) or reported.",
    example=("torch.cuda.nvtx.range_push('fwd')\n",
             "torch.npu.mstx.range_push('fwd')\n"),
)

TP109 = _define(
    'TP109', 'profiler-activity', 'profiler', CONVERT, MAPPED,
    what="`ProfilerActivity.CUDA` -> the target's profiler activity, or reported when it has none.",
    example=('acts = [torch.profiler.ProfilerActivity.CUDA]\n',
             'acts = [torch.profiler.ProfilerActivity.NPU]\n'),
)

TP110 = _define(
    'TP110', 'cudnn-backends', 'cudnn', CONVERT, MAPPED,
    what='`torch.backends.cudnn` / `torch.backends.cuda` flags: mapped, kept, or advised per target.',
    why="""\
TF32 switches map to the target's counterpart (NPU HF32, MLU cnnl, MUSA mudnn);
flags without one are left in place (they do nothing off CUDA) and reported.""",
    example=('torch.backends.cuda.matmul.allow_tf32 = True\n',
             'torch.npu.matmul.allow_hf32 = True\n'),
)

TP111 = _define(
    'TP111', 'device-capability', 'capability', CONVERT, MAPPED,
    what='`get_device_capability`, `torch.version.cuda`: reported, never rewritten.',
    why="""\
Compute capability numbers are CUDA architecture versions; checks such as
`>= (8, 0)` do not carry over to another vendor, so the call stays and is listed
as unsupported.  `get_device_properties` moves to the target (name and
total_memory carry over) with a note; `.major`/`.minor` on it are flagged (TP705).""",
    example=('cap = torch.cuda.get_device_capability()\n',
             'cap = torch.cuda.get_device_capability()\n'),
)

TP112 = _define(
    'TP112', 'data-parallel', 'data-parallel', CONVERT, REPORT,
    what=('`torch.nn.DataParallel` where the target needs DistributedDataParallel: reported where it is '
          'used (built, subclassed); a type test (`isinstance(model, DataParallel)`) is not a use.'),
    example=('model = torch.nn.DataParallel(model)\n',
             'model = torch.nn.DataParallel(model)\n'),
)

TP113 = _define(
    'TP113', 'cpp-extension-names', 'extension', CONVERT, REPORT,
    what='`CUDAExtension`, `CUDA_HOME`: reported, pointing to `torchport port-ext`.',
    example=('from torch.utils.cpp_extension import CUDAExtension\n',
             'from torch.utils.cpp_extension import CUDAExtension\n'),
)

TP114 = _define(
    'TP114', 'cuda-only-packages', 'third-party', CONVERT, REPORT,
    what=('Imports of CUDA-only packages (kb/packages.toml: apex, flash-attn, xformers, ...): reported with'
          ' what the target offers instead.'),
    example=('import apex\n',
             'import apex\n'),
)

TP115 = _define(
    'TP115', 'other-cuda-names', 'other', CONVERT, MAPPED,
    what='Any other CUDA-specific name the target data decides about (including user rules).',
)

TP116 = _define(
    'TP116', 'cuda-nccl-module', 'nccl', CONVERT, MAPPED,
    what='`torch.cuda.nccl` (NCCL version, availability, raw collectives) -> target module or reported.',
    example=('v = torch.cuda.nccl.version()\n',
             'v = torch.cuda.nccl.version()\n'),
)

TP117 = _define(
    'TP117', 'unknown-cuda-api', 'unknown-api', CONVERT, REPORT,
    left_as="unknown-api",
    what="`torch.cuda.X` where X is not in torch.cuda's API list: private, removed or misspelled; left and reported.",
    example=('torch.cuda._lazy_init()\n',
             'torch.cuda._lazy_init()\n'),
)

TP118 = _define(
    'TP118', 'cuda-tensor-type-strings', 'tensor-type', CONVERT, MAPPED,
    what=('A string that is a CUDA tensor type\'s name (`x.type("torch.cuda.FloatTensor")`, '
          '`set_default_tensor_type("torch.cuda.HalfTensor")`) -> the target\'s type, as TP102 maps the '
          'name; reported where the target has none.'),
    example=('y = x.type("torch.cuda.FloatTensor")\n',
             'y = x.type("torch.npu.FloatTensor")\n'),
)

TP120 = _define(
    'TP120', 'apex-amp', 'amp', CONVERT, REWRITE,
    what=('apex.amp -> torch.amp: `amp.initialize` -> a GradScaler (`amp_scaler`), the forward and loss before '
          '`amp.scale_loss` under `torch.autocast`, `scale_loss` -> `amp_scaler.scale(loss).backward()`, '
          '`optimizer.step()` -> `amp_scaler.step(optimizer)` and `amp_scaler.update()`, `amp.state_dict()` '
          '-> the scaler\'s, `amp.master_params(opt)` -> its parameters (unscaled first before clipping); the '
          'apex import goes.'),
    why="""\
NVIDIA removed apex.amp in 2025; torch.amp does the same work.  opt_level "O0" disables the scaler and the
autocast region (`enabled=`), a non-literal opt_level is tested at run time.  Autocast uses the target's
default low-precision dtype (bfloat16 on the CPU, float16 on npu, mlu, musa).  O2/O3 (fp16 weights with fp32
master copies) run as O1; a static `loss_scale` becomes the scaler's `init_scale`, and the scaler adapts it.
A file is converted only when every use of `amp` in it has one of these forms (else TP121 names the one that
stopped it).  When the scaler is made in one function and used in another, it is declared `global` there,
as apex's `amp` was one module-level object.  A file that scales losses but never calls amp.initialize (a
library whose user initializes amp) keeps its module-level scaler disabled: TP121 says so, since the
amp.initialize of another file, converted, makes that file's own scaler.""",
    example=('from apex import amp\n'
             'model, optimizer = amp.initialize(model, optimizer, opt_level="O1")\n'
             'for x, y in loader:\n'
             '    optimizer.zero_grad()\n'
             '    loss = criterion(model(x), y)\n'
             '    with amp.scale_loss(loss, optimizer) as scaled_loss:\n'
             '        scaled_loss.backward()\n'
             '    optimizer.step()\n',
             'import torch\n'
             'amp_scaler = torch.npu.amp.GradScaler(enabled=True)\n'
             'for x, y in loader:\n'
             '    optimizer.zero_grad()\n'
             '    with torch.autocast("npu", enabled=amp_scaler.is_enabled()):\n'
             '        loss = criterion(model(x), y)\n'
             '    amp_scaler.scale(loss).backward()\n'
             '    amp_scaler.step(optimizer)\n'
             '    amp_scaler.update()\n'),
)

TP121 = _define(
    'TP121', 'apex-amp-manual', 'amp', CONVERT, REPORT,
    what='apex.amp left as it is, or a part of its conversion left to do by hand, with the reason.',
    example=('from apex import amp\n'
             'model = amp.initialize(model)\n'
             'amp.register_float_function(torch, "sigmoid")\n',
             'from apex import amp\n'
             'model = amp.initialize(model)\n'
             'amp.register_float_function(torch, "sigmoid")\n'),
)

TP122 = _define(
    'TP122', 'apex-fused-optimizer', 'third-party', CONVERT, MAPPED,
    what=('apex.optimizers\' fused optimizers -> torch.optim (FusedAdam -> AdamW, or Adam with '
          'adam_w_mode=False; FusedSGD -> SGD; FusedAdagrad -> Adagrad) with the arguments that mean the same, '
          'or the target\'s own fused class (torch_npu.optim.NpuFusedAdamW/NpuFusedAdam/NpuFusedSGD on npu); '
          'FusedLAMB, FusedNovoGrad and arguments with no counterpart are reported with the steps to take.'),
    why="""\
apex's optimizers need its CUDA extensions.  FusedAdam defaults to decoupled weight decay (AdamW) with
weight_decay=0, where torch.optim.AdamW defaults to 0.01, so the converted call passes weight_decay=0.0 when it
had none.  set_grad_none goes (torch's zero_grad sets gradients to None by default), as do the defaults
bias_correction=True, capturable=False, master_weights=False and FusedSGD's wd_after_momentum=False and
materialize_master_grads; any other value, an adam_w_mode decided at run time, or more positional arguments
than the two classes share leave the call and say why.  fused=True is added on the targets whose device torch
lists with fused optimizer kernels (cpu, xpu, mps).  The table is kb/apex.toml, with its sources.""",
    example=('from apex.optimizers import FusedAdam\n'
             'opt = FusedAdam(model.parameters(), lr=1e-3, set_grad_none=True)\n',
             'import torch_npu\n'
             'opt = torch_npu.optim.NpuFusedAdamW(model.parameters(), lr=1e-3, weight_decay=0.0)\n'),
)

TP123 = _define(
    'TP123', 'similar-api', 'other', CONVERT, REWRITE,
    what=('`convert --similar` (Ascend\'s -sim/--similar): an API the target does not support is replaced by one '
          'of a similar function, and the finding says what is not the same (kb/similar.toml, with its sources).'),
    why="""\
Ascend's migration tool (ms_fmk_transplt) has `-sim`/`--similar`: some unsupported APIs are replaced with
functionally similar APIs, which may lower accuracy and performance.  torchport makes only the swaps listed in
kb/similar.toml, each with the targets whose API data leave the original unsupported, what changes and where
both behaviours are documented: `torch.cuda.nvtx.range(msg)` -> `torch.profiler.record_function(msg)` (a
torch.profiler label instead of an NVTX range; one-argument calls only).  Without --similar these names stay as
they are and are reported as unsupported by their own code (TP108 for NVTX).""",
)

TP201 = _define(
    'TP201', 'device-arguments', 'device-string', CONVERT, REWRITE,
    what='Device strings passed as devices: `torch.device(...)`, `.to(...)`, `device=`, `map_location=`.',
    why="""\
Also defaults of lookups by a device-named key (`getattr(args, "device", "cuda")`,
`cfg.get("device", "cuda")`), `torch.autocast("cuda")`, `torch.amp.GradScaler("cuda")`, `torch.set_default_device`,
`torch.Generator(device=...)`, the first argument of `torch.cuda.*` calls, and any
keyword named like a device (`device_type=`, `output_device=`, `pin_memory_device=`), and the
arguments of a function or class of another file of the project that uses that parameter as a
device (`Engine("cuda")` where engines.py does `self._device = device` ... `.to(self._device)`:
converter/project.py).  In a `map_location` dict only the values change: the keys name where the
checkpoint was saved.  On the cpu target a bare device index (`.to(0)`, `device=0`,
`torch.device(0)`) becomes "cpu": an index means the accelerator's device, and there is none.
A call of a torch API whose device parameter defaults to "cuda" that leaves it out gets the
target's device (`torch.amp.GradScaler(enabled=True)` -> `GradScaler("npu", enabled=True)`;
`ShardedGradScaler()`, `save_on_cpu(pin_memory=True)`: kb/cuda_names.toml [cuda_default]):
off CUDA the scaler would disable itself and train without loss scaling.  Unpacked arguments
(`GradScaler(**cfg)`) are reported instead.""",
    example=('dev = torch.device("cuda", args.local_rank)\n'
             'x = x.to("cuda:0")\n'
             'ckpt = torch.load(p, map_location="cuda:0")\n',
             'dev = torch.device("npu", args.local_rank)\n'
             'x = x.to("npu:0")\n'
             'ckpt = torch.load(p, map_location="npu:0")\n'),
)

TP202 = _define(
    'TP202', 'device-defaults', 'device-string', CONVERT, MAPPED,
    what='Default values of parameters named like a device (`device="cuda"`, `map_location="cuda:0"`).',
    example=('def pyobj2tensor(obj, device="cuda"):\n'
             '    pass\n',
             'def pyobj2tensor(obj, device="npu"):\n'
             '    pass\n'),
)

TP203 = _define(
    'TP203', 'device-variables', 'device-string', CONVERT, REWRITE,
    what=('Values assigned to device variables (`device = ...`, `self.device = ...`, `cfg["device"] = ...`,'
          ' `{"device": ...}`).'),
    why="""\
Also the "cuda" key of a dict looked up by a device type (`{"cuda": "nccl"}.get(device_type)`,
timm's `dist_backends`); on the host target (cpu) that key stays.""",
    example=('self.device = "cuda:{}".format(self.local_rank)\n'
             'cfg = {"device": "cuda"}\n',
             'self.device = "npu:{}".format(self.local_rank)\n'
             'cfg = {"device": "npu"}\n'),
)

TP204 = _define(
    'TP204', 'device-comparisons', 'device-string', CONVERT, REWRITE,
    what='Device values compared or searched: `device.type == "cuda"`, `device.replace("cuda:", "")`.',
    why="""\
Also `"cuda" in str(device)`, `device in ("cuda", "cpu")`, `device.startswith("cuda")`.
On the host target (cpu) they stay: no device is "cuda" there, so the project's CPU branch runs
(turned into `== "cpu"` they would merge the two branches).""",
    example=('if x.device.type == "cuda":\n'
             '    pass\n'
             'index = device.replace("cuda:", "")\n',
             'if x.device.type == "npu":\n'
             '    pass\n'
             'index = device.replace("npu:", "")\n'),
)

TP205 = _define(
    'TP205', 'device-templates', 'device-string', CONVERT, REWRITE,
    what='Expressions that can only mean a device, wherever they appear.',
    why="""\
`"cuda:{}".format(r)`, `f"cuda:{r}"`, `"cuda:%d" % r`, `"cuda:" + str(r)` (exactly these
shapes, no other text) and `"cuda" if ... else "cpu"`.""",
    example=('loc = "cuda:{}".format(rank)\n'
             'd = f"cuda:{rank}"\n'
             'e = "cuda:%d" % rank\n'
             'f = "cuda" if ok else "cpu"\n'
             'g = "cuda:" + str(rank)\n',
             'loc = "npu:{}".format(rank)\n'
             'd = f"npu:{rank}"\n'
             'e = "npu:%d" % rank\n'
             'f = "npu" if ok else "cpu"\n'
             'g = "npu:" + str(rank)\n'),
)

TP206 = _define(
    'TP206', 'device-strings-elsewhere', 'device-string', CONVERT, REPORT,
    what='Exact device strings ("cuda", "cuda:1") outside a known device position: reported, not changed.',
    why="""\
A "cuda" is decided with its value group (converter/groups.py): the strings one variable holds and the
strings and collections it is tested against, joined through assignments, `self.<attr>`, parameters and the
calls of the file's own functions.  A group never used as a device that holds accelerator names no torch
device has ("gpu", "tpu": Lightning's `accelerator="cuda"`) keeps every "cuda", reported once; a group used
as a device has its plain assignments rewritten too, so a flag and the tuple it is tested against stay
together.  A module-level name another file of the project imports and uses as a device (config.py's
`BACKEND = "cuda"`, read as `device=BACKEND` in train.py: converter/project.py) is a device in its own file
too, rewritten there on every target, and the file that uses it gets the registration import.  A "cuda"
glued into another name (`f"{'cuda' if c else 'cpu'}_time_total"`, a profiler column) is not a device and
stays without a finding.""",
)

TP207 = _define(
    'TP207', 'device-data-flow', 'device-string', CONVERT, REWRITE,
    what='Device strings bound to a name that is then used as a device, or compared with or searched in one.',
    why="""\
`arg = "cuda:0"` ... `torch.device(arg)` (yolov5's select_device), and
`for prefix in "cuda:", "none": device = device.replace(prefix, "")` (ultralytics), within
one function (see converter/flow.py for what local data flow follows).  An exact device string in a
branch of a CUDA availability test (`if torch.cuda.is_available(): return "cuda"`) follows the
test, which is rewritten too (on cpu the test keeps its words, CPU torch answers no, and the answer
is "cpu" as well, as `"cuda" if torch.cuda.is_available() else "cpu"` becomes: a cpu tree picks the
CPU on a machine with CUDA too).  So does a "cuda" among other device choices (`["cpu", "cuda"]` in a
parametrize list, `choices=` and its default), in a `pytest.param` whose marks ask for CUDA, or
compared beside that question (`param == "cuda" and not torch.cuda.is_available()`), on device
targets (on cpu a list of choices would hold "cpu" twice: reported, TP206).  A list looped over by a
name used as a device (`for d in ("cpu", "cuda"): torch.zeros(1, device=d)`) is rewritten on every
target: on cpu its CPU case runs twice, where a kept "cuda" would fail.""",
    example=('def pick(i):\n'
             '    arg = f"cuda:{i}"\n'
             '    return torch.device(arg)\n'
             '\n'
             '\n'
             'def index(device):\n'
             '    for prefix in "cuda:", "none":\n'
             '        device = device.replace(prefix, "")\n'
             '    return device\n',
             'def pick(i):\n'
             '    arg = f"npu:{i}"\n'
             '    return torch.device(arg)\n'
             '\n'
             '\n'
             'def index(device):\n'
             '    for prefix in "npu:", "none":\n'
             '        device = device.replace(prefix, "")\n'
             '    return device\n'),
)

TP208 = _define(
    'TP208', 'oom-message', 'device-string', CONVERT, REWRITE,
    what=('`"CUDA out of memory" in str(e)` -> `"out of memory" in str(e)`: the targets word it "NPU out of'
          ' memory", "MLU out of memory", ..., so the CUDA text never matches there (yolox, detectron2\'s '
          'retry_if_cuda_oom). Only `in` / `not in` tests change.'),
    example=('if "CUDA out of memory" not in str(e):\n'
             '    raise\n',
             'if "out of memory" not in str(e):\n'
             '    raise\n'),
)

TP209 = _define(
    'TP209', 'cuda-requirement-on-host', 'device-api', CONVERT, MAPPED,
    what=('On targets that may run on the CPU (cpu; accelerator, where there is none): an assert that requires '
          "CUDA (`assert torch.cuda.is_available()`, `assert n <= torch.cuda.device_count()`) -> `pass`; `if "
          'not torch.cuda.is_available(): raise ...` is reported.'),
    why="""\
The assertion only held on a CUDA machine; on the CPU it would stop a program that otherwise runs.  Only an
assertion false wherever CUDA is not there goes (its question asked positively: `use_kernel and
torch.cuda.is_available()` too); a conditional one stays, as it holds on the CPU unless the project asks
for CUDA (`assert not (use_cuda_kernel and not torch.cuda.is_available())`, `assert
torch.cuda.is_available() or not use_cuda_kernel`).  Likewise an `if ...: raise` is reported only when it
raises wherever CUDA is not there (`if torch.cuda.device_count() < 1: raise`).""",
)

TP210 = _define(
    'TP210', 'guard-keeps-cuda-branch', 'device-api', CONVERT, REPORT,
    left_as="kept-question",
    what=('A CUDA test whose branch still calls torch.cuda APIs the target lacks, or is the CUDA path of a '
          'CUDA-only library, keeps asking about CUDA: `torch.cuda.get_device_capability() if '
          'torch.cuda.is_available() else None`, `if x.is_cuda: <a Triton kernel>`, `if device.type == "cuda": '
          'providers = ["CUDAExecutionProvider"]` stay as they are on npu.'),
    why="""\
Rewritten to the target's question, the test would send the target into code that calls CUDA (on an NPU
host `torch.npu.is_available()` is true, and the kept `torch.cuda` call fails) or into a library's CUDA path
(onnxruntime asked for its CUDA provider, a Triton kernel tuned for NVIDIA GPUs).  Kept, the branch is
skipped there as on any machine without CUDA, and the test is reported with the calls to convert first, or
with what the target offers instead of the library (kb/packages.toml: `cuda_path`, `markers`).  The tests
are availability questions (`is_available`, `device_count`) and device-type questions (`x.is_cuda`,
`device.type == "cuda"`).""",
)

TP211 = _define(
    'TP211', 'load-without-map-location', 'device-string', CONVERT, REWRITE,
    what='`torch.load(f)` without `map_location` -> `torch.load(f, map_location="cpu")`.',
    why="""\
torch.load puts each storage back on the device it was saved from, and a checkpoint written on an NVIDIA
GPU names `cuda:0`: on the target it stops with "Attempting to deserialize object on a CUDA device".  On the
CPU it loads everywhere; `model.load_state_dict` and `optimizer.load_state_dict` copy what they load onto
the device of the model's parameters.  A tensor loaded to be used as it is needs a `.to(device)` after.
`torchport ckpt fix` writes a checkpoint that loads without it.""",
    example=('ckpt = torch.load(args.resume)\n',
             'ckpt = torch.load(args.resume, map_location="cpu")\n'),
)

TP212 = _define(
    'TP212', 'onnx-export-on-cpu', 'device-string', CONVERT, REWRITE,
    what='What `torch.onnx.export` gets (the model, the dummy inputs) stays on the CPU: `.cuda()` -> `.cpu()`, '
         '`"cuda"` -> `"cpu"`.',
    why="""\
Ascend's guide exports ONNX from the CPU ("模型保存与转换 / 导出ONNX模型": `device = torch.device("cpu")`, the
checkpoint loaded with `map_location='cpu'`, `model.eval()`, then `torch.onnx.export`), and the file is converted
for the device later (ATC).  A CUDA export script that puts the model or the dummy input on the GPU would otherwise
have them moved to the target.  In the function that calls the export, the literal forms that feed it (in the call,
in the assignments of the names it passes, in bare `model.cuda()` statements) become the CPU.  A move by a device
variable (`.to(device)`) is reported instead, and nothing of that export is rewritten: the variable may be the
training device too, and the model and its inputs must stay together.""",
    example=('dummy = torch.randn(1, 3, 224, 224).cuda()\n'
             'torch.onnx.export(model, dummy, "m.onnx")\n',
             'dummy = torch.randn(1, 3, 224, 224).cpu()\n'
             'torch.onnx.export(model, dummy, "m.onnx")\n'),
)

TP213 = _define(
    'TP213', 'own-target-branches', 'device-string', CONVERT, REPORT,
    what='A file that already handles the target itself (`device.type == "npu"`, `torch.npu.*`, `import '
         'torch_npu`) and whose CUDA code convert rewrote: reported once, at the first place it names the target.',
    why="""Its CUDA branches, rewritten, now run on the target too, and one that comes first can take the place of
the project's own branch for it (accelerate's `is_cuda_available()` became true on an NPU and won over
`is_npu_available()`; ultralytics' `select_device("npu:0")` went through its CUDA path).  Check that the
path the project meant for the target is the one taken, and keep a CUDA branch as it was where it should
stay CUDA's (`# torchport: ignore` on its line).""",
)

TP214 = _define(
    'TP214', 'device-count-as-processes', 'device-api', CONVERT, REWRITE,
    what=('On the host target (cpu): `torch.cuda.device_count()` whose value is the process count of '
          '`torch.multiprocessing.spawn` / `start_processes` (`nprocs=`, directly or through a local name) -> `1`; '
          'on the device-agnostic target (accelerator) -> `max(torch.accelerator.device_count(), 1)`.'),
    why="""One process per GPU is `nprocs=torch.cuda.device_count()` (pytorch/examples imagenet's
`--multiprocessing-distributed`); on the CPU the count is 0, so spawn starts no process, nothing trains and
the program exits 0.  On the CPU that node runs one process (the count's other uses, such as
`world_size = ngpus_per_node * nodes`, follow it, so the group stays consistent):
`ngpus_per_node = torch.cuda.device_count()` ... `mp.spawn(main_worker, nprocs=ngpus_per_node)` becomes
`ngpus_per_node = 1` on cpu.""",
)

TP301 = _define(
    'TP301', 'backend-strings', 'distributed', CONVERT, REWRITE,
    what='"nccl" as a collective backend -> the target\'s backend ("hccl", "cncl", "mccl", "xccl", "gloo").',
    why="""\
In `init_process_group`/`new_group` (positional or `backend=`), any `backend=`-like
keyword, defaults of `backend` parameters, assignments to backend variables,
argparse options named like a backend (`--dist-backend`, default and choices),
comparisons with `get_backend()` or backend variables, combined specs
(`"cpu:gloo,cuda:nccl"`), choices between backends (`"nccl" if ok else "gloo"`), and values
that reach one of those through a local name, `or`, or a dict lookup
(`{"npu": "hccl"}.get(kind, "nccl")`).  Any case ("NCCL").  Any other "nccl" text is left alone.
A comparison with NCCL's name (`==`, `!=`, `is`, `in (...)`, a `case` pattern; "nccl" or
`Backend.NCCL`) is a question, and converts as device questions do.  Where the target's
collectives are gloo (cpu, mps) it stays and answers no, so the NCCL-only branch is skipped: gloo
is also the backend of the project's own non-NCCL path, and `backend == "gloo"` would send every
gloo run into the NCCL branch (`if backend == NCCL and not torch.cuda.is_available(): raise`).  On
accelerator it asks about the accelerator's backend where there is one and answers no elsewhere
(`(<backend> if torch.accelerator.is_available() else None)`; a `case` pattern cannot hold that
expression, so it is kept and reported).  A name bound only to NCCL's name that a comparison reads
(`NCCL = dist.Backend.NCCL` ... `backend == NCCL`) keeps its value there too; its reads that choose a
backend (`init_process_group(NCCL)`, a backend parameter's default) are rewritten where they are,
its other reads reported.""",
    example=('dist.init_process_group("nccl", init_method=url)\n'
             'if dist.get_backend() == "nccl":\n'
             '    pass\n',
             'dist.init_process_group("hccl", init_method=url)\n'
             'if dist.get_backend() == "hccl":\n'
             '    pass\n'),
)

TP302 = _define(
    'TP302', 'nccl-availability', 'distributed', CONVERT, REWRITE,
    what=('`is_nccl_available()` -> `is_backend_available("<backend>")`; `Backend.NCCL` -> the backend string '
          '(in a comparison, as TP301 converts questions).'),
    example=('ok = dist.is_nccl_available()\n'
             'b = dist.Backend.NCCL\n',
             'ok = dist.is_backend_available("hccl")\n'
             'b = "hccl"\n'),
)

TP303 = _define(
    'TP303', 'nccl-other', 'distributed', CONVERT, REPORT,
    what='A bare "nccl" string outside a backend position: reported for review, not changed.',
)

TP304 = _define(
    'TP304', 'ddp-device-ids', 'distributed', CONVERT, REWRITE,
    what=('On the host target (cpu): `DistributedDataParallel(..., device_ids=[rank], output_device=rank)` '
          '(or positional) -> `None`. PyTorch refuses device ids for a CPU module ("device_ids and '
          'output_device arguments only work with single-device/multiple-device GPU modules or CPU '
          'modules"). On the device-agnostic target (accelerator) they become `None` where there is no '
          'accelerator; the vendor targets keep them (their modules live on the indexed device).'),
)

TP401 = _define(
    'TP401', 'env-vars', 'env-var', CONVERT, MAPPED,
    what='CUDA/NCCL environment variable names read or set through the environment.',
    why="""\
`os.environ[...]`, `.get`, `.setdefault`, `.pop`, `os.getenv/putenv`, `"X" in
os.environ`, keys of dict literals and `environ.update(X=...)` keywords.  The
target file maps each name (`CUDA_VISIBLE_DEVICES` -> `ASCEND_RT_VISIBLE_DEVICES`,
`TORCH_NCCL_BLOCKING_WAIT` -> `TORCH_HCCL_BLOCKING_WAIT`, ...); names it cannot map
are reported.""",
    example=('os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"\n'
             'gpus = os.getenv("CUDA_VISIBLE_DEVICES", "")\n',
             'os.environ["ASCEND_RT_VISIBLE_DEVICES"] = "0,1"\n'
             'gpus = os.getenv("ASCEND_RT_VISIBLE_DEVICES", "")\n'),
)

TP402 = _define(
    'TP402', 'env-vars-elsewhere', 'env-var', CONVERT, REPORT,
    what='Other strings that name CUDA_VISIBLE_DEVICES or NCCL_* (shell commands, messages): reported.',
)

TP403 = _define(
    'TP403', 'config-device-values', 'device-string', CONVERT, REPORT,
    what=('`device: cuda`, `"backend": "nccl"`, `device = "cuda:0"` in YAML/JSON/TOML/INI files: reported '
          "with file:line and the target's value (configs are the project's; convert copies them "
          'unchanged).'),
)

TP404 = _define(
    'TP404', 'device-from-env', 'env-var', CONVERT, MAPPED,
    what=('`convert -s` (`--specify-device`, Ascend\'s option): the launch script takes the device index from an '
          'environment variable (`--device-env`, default NPU_CALCULATE_DEVICE) and sets it as the current device '
          'after its imports, so every device use without an index follows it.'),
    why="""\
Ascend's migration tool (ms_fmk_transplt / PyTorch GPU2Ascend) has `-s`: the device is set from an environment
variable, which may stop the script's own distributed device choice from working.  Its converted scripts read
NPU_CALCULATE_DEVICE (0 when unset) and set the device to it.  torchport writes the same in the launch script
(`--launch`, or the input file), guarded by the target's is_available(), with an index that is not a number
failing at start.  Indexes written in the code ("cuda:1") stay; a target without device indexes (cpu, mps) gets
nothing and says so.  It does not go with --distributed, where each process takes LOCAL_RANK.""",
)

TP501 = _define(
    'TP501', 'cuda-method', 'tensor-method', CONVERT, REWRITE,
    what='`x.cuda(...)` on tensors and modules -> `x.npu(...)`, or `x.to(<device>, ...)`.',
    why="""\
Targets with their own method (npu, mlu, musa, xpu) keep every argument
(`non_blocking=True`, `args.gpu`, `device=`).  The others get `.to(...)`: a
positional device index is dropped where the target has one device (mps, cpu)
and reported; `non_blocking` and `memory_format` are kept as keywords.
A class of the file that defines its own `cuda` method (a holder of tensors, a
module that moves a cache too before `super().cuda()`) keeps it: its calls through
`self`, the class or an object the file builds from it stay, since `x.npu()` would
miss the method or skip it; the calls inside it are converted.  Said once, at the
method (advice).""",
    example=('x = x.cuda(non_blocking=True)\n'
             'model.cuda(args.gpu)\n',
             'x = x.npu(non_blocking=True)\n'
             'model.npu(args.gpu)\n'),
)

TP502 = _define(
    'TP502', 'is-cuda', 'tensor-method', CONVERT, MAPPED,
    what='`x.is_cuda` -> `x.is_npu` (or a device-type comparison for targets without the property).',
    why="""\
A tensor's `is_cuda` cannot be assigned: where the file assigns `<receiver>.is_cuda = ...`
(`self.is_cuda = device.type == "cuda"`), that receiver's `is_cuda` is the user's own attribute
and its reads stay as they are (the value assigned is converted by the device rules).  The same
for a class of the file that gives its objects an `is_cuda` (a property, a method, a class
attribute, or `self.is_cuda = ...`; ring-attention's rotary embedding asks its buffer): its reads
through `self`, `cls`, the class (or a subclass of the file) and the objects the file builds from it
stay, and are said once, where the class gives it (advice); `self.is_npu` would not exist.
On the host target (cpu) `is_cuda` stays: it is False there, so the project's CPU branch runs;
an `assert x.is_cuda` is reported, since it now fails.""",
    example=('if x.is_cuda:\n'
             '    pass\n',
             'if x.is_npu:\n'
             '    pass\n'),
)

TP503 = _define(
    'TP503', 'cuda-method-reference', 'tensor-method', CONVERT, REPORT,
    what='`x.cuda` used without a call (passed as a function): reported for a manual change.',
)

TP504 = _define(
    'TP504', 'record-stream-on-host', 'tensor-method', CONVERT, MAPPED,
    what=('On the host target (cpu): `x.record_stream(stream)` -> `pass`; on accelerator it runs only where'
          ' there is an accelerator.'),
    why="""\
A CPU tensor's memory is not tied to a stream, and PyTorch refuses the call on one ("unknown
parameter type", torch 2.13.0), so a prefetcher that records its batches on the current stream (yolox)
fails at its first batch.  The statement becomes `pass`; where its value is used, `None` (what it
returns).  A class of the file with a `record_stream` method of its own keeps its calls (advice, once).""",
)

TP601 = _define(
    'TP601', 'profiler-arguments', 'profiler', CONVERT, REWRITE,
    what='`profile(use_cuda=X)` -> `use_device=<device>`; CUDA-named sort keys -> device-neutral keys.',
    why="""\
`use_cuda` is deprecated in PyTorch; `use_device` names the device to profile.
Sort keys `cuda_time_total`, `self_cuda_time_total`, `cuda_memory_usage` become
`device_time_total`, ... which every backend understands.""",
    example=('with torch.autograd.profiler.profile(use_cuda=True) as prof:\n'
             '    pass\n'
             'print(prof.key_averages().table(sort_by="cuda_time_total"))\n',
             'with torch.autograd.profiler.profile(use_device="npu") as prof:\n'
             '    pass\n'
             'print(prof.key_averages().table(sort_by="device_time_total"))\n'),
)

TP701 = _define(
    'TP701', 'nvidia-smi', 'tooling', CONVERT, REPORT,
    what="`nvidia-smi` in strings and commands: reported with the target's tool (`npu-smi`, `cnmon`...).",
    why="""\
Its options and output format differ per vendor, so the command is not rewritten.""",
    example=('out = os.popen("nvidia-smi -L").read()\n',
             'out = os.popen("nvidia-smi -L").read()\n'),
)

TP702 = _define(
    'TP702', 'cpp-extension-build', 'extension', CONVERT, REPORT,
    what=('JIT CUDA builds (`cpp_extension.load/load_inline` with `.cu` sources, `cuda_sources` or '
          '`with_cuda`): reported.'),
    why="""\
Renaming `extra_cuda_cflags` would only produce a TypeError; the kernels need porting first
(`torchport port-ext`).  nvcc flags alone with sources it cannot see (yolox's C++-only jit_ops) are
not reported: without CUDA sources they are ignored (and `.cu` files of the project are found by
`analyze` and `port-ext` anyway).""",
    example=('mod = load(name="ops", sources=["ops.cpp", "ops.cu"], extra_cuda_cflags=["-O3"])\n',
             'mod = load(name="ops", sources=["ops.cpp", "ops.cu"], extra_cuda_cflags=["-O3"])\n'),
)

TP704 = _define(
    'TP704', 'cuda-star-import', 'device-api', CONVERT, REPORT,
    what='`from torch.cuda import *`: the names it brings in cannot be followed; reported as unsupported.',
    example=('from torch.cuda import *\n',
             'from torch.cuda import *\n'),
)

TP705 = _define(
    'TP705', 'device-properties-fields', 'capability', CONVERT, REPORT,
    what='`get_device_properties(...).major` (and minor, SM count), also through the variable holding them '
         '(`props = ...; props.major`): CUDA architecture facts, reported.',
    example=('ok = torch.cuda.get_device_properties(0).major >= 8\n',
             'ok = torch.npu.get_device_properties(0).major >= 8\n'),
)

TP801 = _define(
    'TP801', 'shell-env-vars', 'env-var', CONVERT, MAPPED,
    what="CUDA/NCCL variables in launch scripts (`export X=`, `X=0 python ...`, `$X`) -> the target's names.",
    example=('export CUDA_VISIBLE_DEVICES=0,1\n'
             'CUDA_VISIBLE_DEVICES=0 python train.py\n',
             'export ASCEND_RT_VISIBLE_DEVICES=0,1\n'
             'ASCEND_RT_VISIBLE_DEVICES=0 python train.py\n'),
)

TP802 = _define(
    'TP802', 'shell-backend-flags', 'distributed', CONVERT, REWRITE,
    what="`--backend nccl` / `--dist-backend=nccl` command-line flags -> the target's backend.",
    example=('python train.py --dist-backend nccl\n',
             'python train.py --dist-backend hccl\n'),
)

TP803 = _define(
    'TP803', 'shell-nvidia-smi', 'tooling', CONVERT, REPORT,
    what="`nvidia-smi` in launch scripts: reported with the target's tool.",
)

TP804 = _define(
    'TP804', 'shell-device-flags', 'device-string', CONVERT, REWRITE,
    what="`--device cuda` / `--device=cuda:0` command-line flags -> the target's device.",
    example=('python train.py --device cuda:0\n',
             'python train.py --device npu:0\n'),
)

TP901 = _define(
    'TP901', 'cuda-source-file', 'extension', ANALYZE, REPORT,
    what='A `.cu`/`.cuh` file: CUDA code that must be ported (`torchport port-ext`) or rewritten for the target.',
)

TP902 = _define(
    'TP902', 'cuda-kernel', 'extension', ANALYZE, REPORT,
    left_as="kernel",
    what='A `__global__` kernel: the unit of porting work (MUSA/HIP: ported by tools; NPU/MLU/XPU/MPS: rewritten).',
)

TP903 = _define(
    'TP903', 'inline-ptx', 'extension', ANALYZE, REPORT,
    left_as="ptx",
    what='Inline assembly (`asm(...)`, `asm volatile`): NVIDIA PTX that no porting tool can translate.',
)

TP904 = _define(
    'TP904', 'cuda-arch-check', 'extension', ANALYZE, REPORT,
    left_as="native-review",
    what='`__CUDA_ARCH__` / `CUDA_VERSION` checks: architecture numbers differ on other vendors; review each.',
)

TP905 = _define(
    'TP905', 'warp-intrinsics', 'extension', ANALYZE, REPORT,
    left_as="native-review",
    what='Warp and tensor-core intrinsics (`__shfl_*_sync`, `__ballot_sync`, `wmma`, `mma.sync`): review each.',
    why="""\
Warp size and matrix units differ per vendor.""",
)

TP906 = _define(
    'TP906', 'cuda-runtime-calls', 'extension', ANALYZE, REPORT,
    left_as="cuda-calls",
    what=('CUDA runtime/library calls in C++ (`cudaMalloc`, `cublas*`, `at::cuda::...`): one finding per '
          'file with the count.'),
)

TP907 = _define(
    'TP907', 'exported-ops', 'extension', ANALYZE, REPORT,
    what=('Ops a C++ extension exports to Python (pybind11 `m.def`, `TORCH_LIBRARY`), with the Python call '
          'sites using them.'),
)

TP908 = _define(
    'TP908', 'cuda-only-import', 'third-party', ANALYZE, REPORT,
    what='An import of a CUDA-only or CUDA-first package from kb/packages.toml, with what the target offers instead.',
)

TP909 = _define(
    'TP909', 'cuda-only-dependency', 'third-party', ANALYZE, REPORT,
    what=('A declared dependency (requirements, setup.py, setup.cfg, pyproject.toml) on a package from '
          'kb/packages.toml.'),
)

TP910 = _define(
    'TP910', 'cuda-torch-build', 'third-party', ANALYZE, REPORT,
    left_as="cuda-torch",
    what=("A pinned CUDA build of PyTorch (`+cu118` versions, the cuXXX wheel index): install the target's "
          'build instead.'),
)

TP950 = _define(
    'TP950', 'port-identifiers', 'port', PORT, REWRITE,
    what="CUDA identifiers (runtime, libraries, PyTorch C++) -> the target's, from the mapping table.",
    why="""\
Whole identifiers and `::`-qualified names only, longest match first, never inside comments
or string literals: `Accumulate` stays `Accumulate`.""",
)

TP951 = _define(
    'TP951', 'port-headers', 'port', PORT, REWRITE,
    what="`#include` of CUDA/PyTorch headers -> the target's headers; of renamed project headers -> their new names.",
)

TP952 = _define(
    'TP952', 'port-unsupported', 'port', PORT, REPORT,
    left_as="port-unsupported",
    what='Names the mapping marks unsupported on the target: left as they are and listed.',
)

TP955 = _define(
    'TP955', 'port-needs-review', 'port', PORT, REPORT,
    left_as="port-review",
    what=('Code no mapping can port faithfully, reported at file:line with the reason: inline PTX, '
          '`__CUDA_ARCH__`/`CUDA_VERSION` checks, warp intrinsics and masks, literal warp sizes, '
          'cooperative launches, tensor-core intrinsics (`wmma`, `mma.sync`).'),
)

TP956 = _define(
    'TP956', 'port-build-glue', 'port', PORT, REWRITE,
    what=('setup.py / `load()` / CMake: extension classes, compiler keys, env switches and renamed source '
          "names -> the target's build (MUSA: `torch_musa.utils.musa_extension.MUSAExtension`, `mcc`, "
          '`FORCE_MUSA`); CUDA-only CMake commands are reported.'),
)

TP957 = _define(
    'TP957', 'port-include-check', 'port', PORT, REPORT,
    left_as="broken-include",
    what=('After porting, every quoted `#include` that named a project file must still name it (under its '
          'new name); one that does not is reported as an error. Checked on every run.'),
)

TP961 = _define(
    'TP961', 'multicard-setup', 'distributed-mode', CONVERT, REWRITE,
    what="Read torchrun's ranks and start the process group.",
    why="""\
With `--distributed`, LOCAL_RANK, RANK and WORLD_SIZE are read from the environment torchrun sets, the process
group is started with the target's collective backend (and destroyed at exit: a group still alive while Python
shuts down aborts the process), and each process selects its own device, first thing in the function that trains
(or after the imports for a script without functions).""",
)

TP962 = _define(
    'TP962', 'multicard-sampler', 'distributed-mode', CONVERT, REWRITE,
    what='Give the training DataLoader a DistributedSampler.',
    why="""\
Each process then sees its own shard of the dataset. The loader's `shuffle` moves to the sampler (a DataLoader
with a sampler must not shuffle), and `set_epoch(epoch)` is called at the top of the epoch loop so the shuffling
differs between epochs. Loaders that already have a sampler are refused.""",
)

TP963 = _define(
    'TP963', 'multicard-ddp', 'distributed-mode', CONVERT, REWRITE,
    what='Wrap the model in DistributedDataParallel before training starts.',
    why="""\
The wrap goes right before the statement that starts training (after the optimizer and AMP are set up, as DDP
needs). Later attribute access (`model.state_dict()`, `model.fc`) goes through `model.module`, so checkpoints keep
the single-device layout; `DataParallel` wrappers are removed, DDP replaces them.""",
)

TP964 = _define(
    'TP964', 'multicard-rank0', 'distributed-mode', CONVERT, REWRITE,
    what='Print, log and save checkpoints on rank 0 only.',
    why="""\
`print`, logging calls and `torch.save` statements run under `if RANK == 0:`, so output is not repeated by every
process and processes do not write the same file at once.""",
)

TP965 = _define(
    'TP965', 'multicard-device-index', 'distributed-mode', CONVERT, REWRITE,
    what="Point hard-coded device indices at this process's device.",
    why="""\
`"cuda:0"` becomes `"cuda"`, `.cuda(0)` becomes `.cuda()` and `set_device(0)` takes LOCAL_RANK: after
`set_device(LOCAL_RANK)` the bare device type means this process's device.""",
)

TP966 = _define(
    'TP966', 'multicard-launcher', 'distributed-mode', CONVERT, REWRITE,
    what='Write run_distributed.sh, which starts one process per device.',
    why="""\
It runs `torchrun --standalone --nproc_per_node N` on the main script; N is `-n N`, or NPROC_PER_NODE, or the
device count the target's torch reports.""",
)
