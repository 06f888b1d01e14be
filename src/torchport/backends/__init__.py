"""Targets as data: one TOML file per accelerator, loaded and validated here.

A target file (see npu.toml for a commented example) says what the device is
called, which namespace replaces `torch.cuda`, what must be imported to
register it, its collective backend, env vars, management tool, and per-name
decisions for CUDA APIs.  The API list it points to (kb/api/<name>.json) says
which `torch.cuda.*` names exist on it.  Adding a target means adding a file;
`load_target` also accepts a path to a TOML file outside the package.

Many of a target's values are pasted into converted code, launch scripts and
commands, so every key has a check (`_TARGET_KEYS`), run when the file is
loaded.  The checks and the safe reading of data files (`read_text`,
`parse_data`: UTF-8 with or without a BOM; no NaN, huge numbers or deep
nesting) are shared with user rule files and port-ext maps: a bad value is a
one-line UsageError naming the file and the key.
"""
from __future__ import annotations

import json
import keyword
import math
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

from ..core.cache import cached_data

if TYPE_CHECKING:
    import ast
from ..core.errors import UsageError

HERE = Path(__file__).resolve().parent
KB_API = HERE.parent / "kb" / "api"

# What each kind of target is: one table, read by the queries below and by `torchport targets`.
TARGET_KINDS = {
    "vendor": "a vendor's PyTorch plug-in: importing its package registers the device",
    "builtin": "a device built into PyTorch",
    "host": "no accelerator: the CPU",
    "agnostic": "device-agnostic code (torch.accelerator, torch.amp)",
    "port-only": "only C++ extensions need porting: its PyTorch runs torch.cuda code unchanged",
}
CONVERTED_KINDS = ("vendor", "builtin", "host", "agnostic")   # the kinds convert, check and analyze write for
# What port-ext does with a target's CUDA kernels (the `cuda_kernels` key).
KERNEL_HANDLING = {
    "port": "port-ext ports them",
    "inventory": "they are rewritten by hand; port-ext lists them",
    "rewrite": "they are rewritten by hand; port-ext does not cover this target",
}

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
class PortGlue:
    """[port]: port-ext's build glue for the target (setup.py / load() scripts)."""

    title: str = ""                     # the target's name in build messages ("MUSA")
    extension_module: str = ""          # the module with the target's CUDAExtension counterpart
    home: str = ""                      # the toolkit's home variable (CUDA_HOME's counterpart)
    force_env: str = ""                 # FORCE_CUDA's counterpart
    compiler_key: str = ""              # extra_compile_args key of the device compiler ("nvcc"'s counterpart)
    names: dict = field(default_factory=dict)      # torch.utils.cpp_extension name -> name in extension_module
    keywords: dict = field(default_factory=dict)   # keyword arguments of those calls -> the target's


@dataclass(frozen=True)
class RuntimeSettings:
    """[runtime]: what `torchport run` does differently on the target (defaults: nothing)."""

    noop: tuple = ()                    # CUDA calls that run as counted no-ops
    amp_dtype: str = ""                 # float16 autocast runs as this dtype ("": as asked)
    bf16: bool = False                  # the answer to torch.cuda.is_bf16_supported() where the host answers
    pinned_memory: bool = True          # False: pin_memory is dropped
    sync_batchnorm: bool = True         # False: SyncBatchNorm runs as BatchNorm per process


@dataclass(frozen=True)
class DoctorSettings:
    """[doctor]: what `torchport doctor` checks for the target."""

    version_rule: str = ""              # "same-minor": the vendor package X.Y is built for torch X.Y
    smi_args: tuple = ()                # arguments of the management tool listing the devices
    env: dict = field(default_factory=dict)  # variable -> fix, or {contains, fix}
    build: str = ""                     # torch/version.py's field a torch built for the target sets ("xpu")
    platforms: tuple = ()               # the sys.platform values the target exists on ("darwin"); (): any
    toolkit: dict = field(default_factory=dict)  # where the vendor toolkit keeps its version: {name, files,
                                                 # commands, pattern, source} (paired in kb/vendor_versions.toml)
    driver: dict = field(default_factory=dict)   # the same for the driver (its version is reported, not paired)
    devices: dict = field(default_factory=dict)  # device nodes: {nodes, docker, container_env, container_runtime,
                                                 # source}


@dataclass(frozen=True)
class SimSettings:
    """[sim]: how `torchport sim`'s simulated device names itself; the chip it presents (memory, properties,
    capability, bf16, autocast dtypes) is kb/sim/chips.toml's."""

    label: str = ""                     # the vendor's name in operator messages ("": device in upper case)
    version: str = ""
    source: str = ""


# The typed sections of a target file: table name -> the class its values fill.
SECTIONS = {"port": PortGlue, "runtime": RuntimeSettings, "doctor": DoctorSettings, "sim": SimSettings}


def _section(cls, table: dict):
    """A section's object from its (checked) table: lists become tuples, tables stay dicts."""
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in table.items()})


# The run-time mapping `migrate --runtime-shim` adds to entry scripts, unless a target names its vendor's own.
RUNTIME_SHIM = "import torchport.auto"


@dataclass(frozen=True)
class Target:
    name: str
    title: str
    namespace: str                      # torch.npu, torch.accelerator, ...
    kind: str = "vendor"                # a key of TARGET_KINDS
    aliases: tuple = ()                 # other names users give it (ascend, cambricon, ...), lower case
    device: str = ""                    # "npu"; empty when device_expr is used
    device_expr: str = ""               # expression naming the device type; {torch} = the module's torch alias
    register: str = ""                  # module to import so the device exists ("torch_npu")
    runtime_shim: str = RUNTIME_SHIM    # migrate --runtime-shim: the import that maps CUDA calls at run time
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
    cuda_kernels: str = "rewrite"       # a key of KERNEL_HANDLING: port (musa, hip), inventory (npu, mlu), rewrite
    torch_install: str = ""             # how to install PyTorch for this target (advice)
    port: Optional[PortGlue] = None                  # [port]: port-ext build glue (None: no table)
    runtime: RuntimeSettings = RuntimeSettings()     # [runtime]: torchport run
    doctor: DoctorSettings = DoctorSettings()        # [doctor]: torchport doctor
    sim: Optional[SimSettings] = None                # [sim]: torchport sim (None: not simulated)
    api_names: frozenset = frozenset()  # names of the namespace (from kb/api)
    api_modules: dict = field(default_factory=dict)  # submodule -> frozenset of names
    api_source: str = ""
    env: dict = field(default_factory=dict)          # CUDA/NCCL env var -> target env var ("" = none)
    names: dict = field(default_factory=dict)        # qualified name -> NameDecision
    needs_device: dict = field(default_factory=dict)  # function -> value it stands for on a host without a device
    device_guard: str = ""                            # the question guarding them (default <namespace>.is_available)
    no_arguments: dict = field(default_factory=dict)  # CUDA name -> why its counterpart is called only without arguments
    path: str = ""

    @property
    def ref(self) -> str:
        """What load_target takes to load this target again: its name when bundled, else its file's path."""
        return self.path if self.path and Path(self.path).parent != HERE else self.name

    @property
    def kernel_advice(self) -> str:
        """What to do with a project's CUDA kernels for this target, in a sentence's words."""
        if self.cuda_kernels == "port":
            return f"port them with `torchport port-ext --to {self.name}`"
        if self.cuda_kernels == "inventory":
            return f"rewrite them for {self.title} (`torchport port-ext --to {self.name}` lists them)"
        return f"rewrite them for {self.title} by hand (port-ext does not cover {self.name})"

    def has(self, attr: str, sub: Optional[str] = None) -> bool:
        """Does `<namespace>.attr` (or `<namespace>.sub.attr`) exist on this target?"""
        if sub is None:
            return attr in self.api_names or attr in self.api_modules
        names = self.api_modules.get(sub)
        return names is not None and attr in names


# ------------------------------------------------------------------ reading data files
MAX_DEPTH = 16          # tables and lists inside each other (the files torchport reads use 3)
MAX_INT = 2 ** 53       # no number torchport reads comes near this


def read_text(path, what: str) -> str:
    """A data file's text: UTF-8, a leading BOM dropped.  Anything else is a UsageError."""
    from ..core.files import read_data

    path = Path(path)
    raw = read_data(path, what)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: not UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start}): "
                         "save the file as UTF-8") from None


def parse_data(text: str, path, fmt: str = "", parse_json=None):
    """The TOML (`fmt` "toml", or a .toml path) or JSON in `text`, checked by `check_plain`.  A syntax
    error, a number with more digits than Python converts, or nesting deeper than the parser's recursion
    is a UsageError naming the file.  `parse_json(text, path)` may replace json.loads."""
    from ..core.tomlfile import tomllib

    fmt = fmt or ("toml" if Path(path).suffix == ".toml" else "json")
    try:
        if fmt == "toml":
            data = tomllib.loads(text)
        else:
            data = parse_json(text, str(path)) if parse_json else json.loads(text, object_pairs_hook=_unique_keys)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: invalid TOML: {e}") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None
    except RecursionError:
        raise UsageError(f"{path}: tables or lists are nested too deeply") from None
    except ValueError as e:  # int() of more than 4300 digits
        found = re.search(r"[0-9_]{4300,}", text)
        if not found:
            raise UsageError(f"{path}: {_short(str(e), 200)}") from None
        start = found.start()
        line, before = text.count("\n", 0, start) + 1, text[text.rfind("\n", 0, start) + 1:start].strip()
        raise UsageError(f"{path}:{line}: a number has too many digits"
                         + (f" (after {_short(before)!r})" if before else "")) from None
    check_plain(data, path)
    return data


def _unique_keys(pairs) -> dict:
    """A JSON object whose keys are all different (json.loads would keep the last of two silently)."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


def check_plain(value, path, keys=()) -> None:
    """Refuse what no key takes: NaN and infinities, integers beyond MAX_INT, nesting beyond MAX_DEPTH."""
    if len(keys) > MAX_DEPTH:
        raise UsageError(f"{path}: '{key_text(keys[:MAX_DEPTH])}' holds tables or lists nested too deeply")
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"{path}: '{key_text(keys)}' is {value}: NaN and infinities are not accepted")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        raise UsageError(f"{path}: '{key_text(keys)}' is too large a number")
    if isinstance(value, dict):
        for k, v in value.items():
            check_plain(v, path, (*keys, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_plain(v, path, (*keys, i))


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")


def key_text(keys) -> str:
    """Where a value is in a file, as one short line: `names."torch.cuda.x".new`, `rename[2]`."""
    out = ""
    for k in keys:
        if isinstance(k, int):
            out += f"[{k}]"
        else:
            k = str(k)
            out += ("." if out else "") + (k if _BARE_KEY.match(k) else _short(json.dumps(k)))
    return out or "(the whole file)"


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


# ------------------------------------------------------------------ value checks
# A check takes a value and returns nothing, or raises BadValue saying what is wrong, phrased to follow
# the key ("must be ...").  `checked` turns that into the UsageError "<file>: '<key>' must be ...".
MAX_NAME = 200          # characters in a name (each character of a trigger word is a nested regex group)
MAX_CODE = 1000         # characters in an expression
MESSAGE_FIELDS = ("title", "name", "device", "namespace", "smi", "backend")  # what ApiMap.fmt fills in
# control characters but tab, what str.splitlines also splits at, and lone surrogates (not writable as UTF-8)
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029\ud800-\udfff]")


class BadValue(Exception):
    """What is wrong with a value, and where inside it (keys below the one checked)."""

    def __init__(self, problem: str, keys=()):
        super().__init__(problem)
        self.problem, self.keys = problem, tuple(keys)


def checked(where: str, keys, check, value):
    """Run `check` on the value found at `keys`; a BadValue becomes a one-line UsageError."""
    try:
        check(value)
    except BadValue as e:
        raise UsageError(f"{where}: '{key_text((*keys, *e.keys))}' {e.problem}") from None
    return value


def _at(key, check, value) -> None:
    try:
        check(value)
    except BadValue as e:
        raise BadValue(e.problem, (key, *e.keys)) from None


def _show(value) -> str:
    return _short(repr(value))


def _type_name(value) -> str:
    for kind, name in ((bool, "true/false"), (str, "a string"), (int, "an integer"), (float, "a number"),
                       (list, "a list"), (dict, "a table")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _need_type(value, kind, name: str) -> None:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BadValue(f"must be {name}, not {_type_name(value)}")


def text(value) -> None:
    """One line of text: a title, a tip, a reason."""
    _need_type(value, str, "a string")
    if _CONTROL.search(value):
        raise BadValue("must be one line of printable text (no line breaks or control characters)")


def reason(value) -> None:
    """Text that must say something."""
    text(value)
    if not value.strip():
        raise BadValue("must say why (it is empty)")


def message(value) -> None:
    """Text shown with a finding: it goes through str.format with the target's MESSAGE_FIELDS."""
    text(value)
    try:
        fields = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(value) if f is not None]
    except ValueError:
        raise BadValue("has a lone '{' or '}' (write {{ or }} for a brace)") from None
    for f, spec, conv in fields:
        if f not in MESSAGE_FIELDS or spec or conv:
            raise BadValue(f"has the placeholder {{{_short(f, 30)}}}: the known ones are "
                           f"{', '.join('{' + k + '}' for k in MESSAGE_FIELDS)} (write {{{{ or }}}} for a brace)")


def dotted(what: str = "a (dotted) Python name"):
    """A check for a Python name (`torch.npu`, `mypkg.amp_init`) none of whose parts is a keyword."""
    def check(value) -> None:
        _need_type(value, str, "a string")
        parts = value.split(".")
        if len(value) > MAX_NAME or not all(p.isidentifier() for p in parts):
            raise BadValue(f"must be {what}, got {_show(value)}")
        bad = [p for p in parts if keyword.iskeyword(p)]
        if bad:
            raise BadValue(f"must be {what}, got {_show(value)}: {bad[0]!r} is a Python keyword")
    return check


dotted_name = dotted()
module_name = dotted("a module name to import (`torch_npu` for `import torch_npu`)")


def identifier(value) -> None:
    """One Python name that is not a keyword: a method, an attribute, a keyword argument."""
    _need_type(value, str, "a string")
    if len(value) > MAX_NAME or not value.isidentifier():
        raise BadValue(f"must be a Python identifier, got {_show(value)}")
    if keyword.iskeyword(value):
        raise BadValue(f"must be a Python identifier, got {_show(value)}: it is a Python keyword")


def pattern(regex: str, what: str):
    """A check for a string of at most MAX_NAME characters that `regex` matches in full."""
    compiled = re.compile(regex + r"\Z")

    def check(value) -> None:
        _need_type(value, str, "a string")
        if len(value) > MAX_NAME or not compiled.match(value):
            raise BadValue(f"must be {what}, got {_show(value)}")
    return check


word = pattern(r"[A-Za-z_][A-Za-z0-9_]*", "a plain word (ASCII letters, digits, _)")
env_name = pattern(r"[A-Za-z_][A-Za-z0-9_]*", "an environment variable name (ASCII letters, digits, _)")
label = pattern(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*", "a name of ASCII letters, digits, _ . + -")
program = pattern(r"[A-Za-z0-9_.+/-]+", "a program name or path without spaces")
import_statement = pattern(r"(?:import [A-Za-z_][\w.]*|from [A-Za-z_][\w.]* import [A-Za-z_]\w*)",
                           "one import statement (`import x.y` or `from x import y`)")


def one_of(*choices):
    def check(value) -> None:
        if not isinstance(value, str) or value not in choices:
            raise BadValue(f"must be {' or '.join(repr(c) for c in choices)}, got {_show(value)}")
    return check


def optional(check):
    """`check`, except that "" (none) is fine too."""
    def run(value) -> None:
        if value != "":
            check(value)
    return run


def boolean(value) -> None:
    _need_type(value, bool, "true or false")


def integer(low: int, high: int):
    def check(value) -> None:
        _need_type(value, int, "an integer")
        if not low <= value <= high:
            raise BadValue(f"must be an integer from {low} to {high}, got {value}")
    return check


def expression(value) -> ast.Expression:
    """A Python expression on one line that stays one call argument wherever it is pasted (`f(<it>)`,
    `f(k=<it>)`): no statement, comment or line break, no bare tuple or starred value changing the
    number of arguments, no yield/await.  Returns its tree."""
    import ast  # only when a target file is checked, not when its checked form comes from the cache

    text(value)
    if len(value) > MAX_CODE:
        raise BadValue(f"is too long for an expression ({len(value)} characters, at most {MAX_CODE})")
    try:
        tree = ast.parse(value, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise BadValue(f"is not a Python expression: {_show(value)}") from None
    import io
    import tokenize

    if any(t.type == tokenize.COMMENT for t in tokenize.generate_tokens(io.StringIO(value).readline)):
        raise BadValue(f"must not hold a comment ('#'), it would hide the rest of the line: {_show(value)}")
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in ast.walk(tree)):
        raise BadValue(f"must not yield or await: {_show(value)}")
    for wrapped in (f"_({value})", f"_(k={value})"):
        try:
            call = ast.parse(wrapped, mode="eval").body
        except (SyntaxError, RecursionError, MemoryError):
            call = None
        args = call.args + [k.value for k in call.keywords] if isinstance(call, ast.Call) else []
        if len(args) != 1 or isinstance(args[0], ast.Starred):
            raise BadValue(f"must be one argument: a bare tuple or starred value would change the number "
                           f"of arguments (put it in parentheses): {_show(value)}")
    return tree


def _fstring_safe(value: str) -> None:
    """Expressions that go into f-string replacement fields (their quotes are swapped to fit)."""
    if "\\" in value or ('"' in value and "'" in value):
        raise BadValue(f"is pasted into f-strings: no backslashes, and only one kind of quote: {_show(value)}")


def torch_expression(value) -> None:
    """device_expr / backend_expr: an expression in which `{torch}` stands for the file's name of torch."""
    text(value)
    try:
        fields = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(value) if f is not None]
    except ValueError:
        raise BadValue("has a lone '{' or '}' (write {{ or }} for a brace)") from None
    if any(f != "torch" or spec or conv for f, spec, conv in fields):
        raise BadValue("may use only the placeholder {torch} (write {{ or }} for a brace)")
    filled = value.format(torch="torch")
    expression(filled)
    _fstring_safe(filled)


def stand_in(value) -> None:
    """needs_device: "!" (no stand-in) or the literal a call stands for without a device (None, 0, '')."""
    import ast

    if value == "!":
        return
    tree = expression(value)
    try:
        ast.literal_eval(tree)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise BadValue(f"must be '!' or a literal (None, 0, '', (0, 0), {{}}), got {_show(value)}") from None
    _fstring_safe(value)


def list_of(check):
    def run(value) -> None:
        _need_type(value, list, "a list")
        for i, item in enumerate(value):
            _at(i, check, item)
    return run


def table_of(key_check, value_check):
    def run(value) -> None:
        _need_type(value, dict, "a table")
        for k, v in value.items():
            _at(k, key_check, k)
            _at(k, value_check, v)
    return run


def fields(spec: dict):
    """A table with known keys, each with its own check."""
    def run(value) -> None:
        _need_type(value, dict, "a table")
        for k, v in value.items():
            if k not in spec:
                raise BadValue(f"has the unknown key {_show(k)} (known: {', '.join(sorted(spec))})")
            _at(k, spec[k], v)
    run.keys = frozenset(spec)  # type: ignore[attr-defined]  # what the table may hold (tests/test_targets.py)
    return run


# ------------------------------------------------------------------ target files
def _decision(entry) -> None:
    """A [names] entry: exactly one of new (a name), unsupported/keep (a message), same (why); a note."""
    _need_type(entry, dict, "a table")
    kinds = [k for k in NAME_DECISIONS if k in entry]
    if len(kinds) != 1 or set(entry) - set(NAME_DECISIONS) - {"note"}:
        raise BadValue(f"needs exactly one of {NAME_DECISIONS} (and optionally 'note')")
    checks = {"new": dotted_name, "unsupported": message, "keep": message, "same": text, "note": message}
    for k, v in entry.items():
        _at(k, checks[k], v)


def _version_pattern(value) -> None:
    """[doctor.toolkit/driver] pattern: a regular expression whose first group is the version."""
    text(value)
    try:
        groups = re.compile(value).groups
    except re.error as e:
        raise BadValue(f"is not a regular expression ({e}): {_show(value)}") from None
    if groups < 1:
        raise BadValue(f"needs a group around the version: {_show(value)}")


# [doctor.toolkit] / [doctor.driver]: files (globs; $VAR is the variable's value, a pattern naming an unset one is
# skipped), commands (programs printing the version), the pattern finding it, and where this was learnt.
_VERSION_SOURCE = fields({"name": text, "files": list_of(text), "commands": list_of(list_of(text)),
                          "pattern": _version_pattern, "source": reason})


def _doctor_need(value) -> None:
    """[doctor] env: the fix, or {contains = "part the value needs", fix = "..."}."""
    if isinstance(value, dict):
        fields({"contains": text, "fix": text})(value)
    else:
        text(value)


# What each key of a target file must be.  Pasted into converted code: namespace, register, device_guard,
# tensor_method, is_attr, the expressions, needs_device stand-ins, names.new, port names; into string
# literals and launch scripts: device, backend, env names, port.force_env/compiler_key; run: smi.
_TARGET_KEYS = {
    "name": label, "title": text, "description": text, "torch_install": text,
    "namespace": dotted_name, "register": optional(module_name), "device_guard": optional(dotted_name),
    "runtime_shim": import_statement,
    "device": optional(word), "device_expr": optional(torch_expression),
    "backend": optional(word), "backend_expr": optional(torch_expression),
    "tensor_method": optional(identifier), "is_attr": optional(identifier),
    "visible_devices_env": optional(env_name), "smi": optional(program),
    "amp": one_of("namespace", "torch.amp"), "cuda_kernels": one_of(*KERNEL_HANDLING),
    "kind": one_of(*TARGET_KINDS), "aliases": list_of(label),
    "device_index": boolean, "host": boolean,
    "api": optional(text), "ops": optional(label), "dispatch_key": optional(word),
    "env": table_of(env_name, optional(env_name)),
    "names": table_of(dotted_name, _decision),
    "needs_device": table_of(dotted_name, stand_in),
    "no_arguments": table_of(dotted_name, reason),
    "port": fields({"title": text, "extension_module": dotted_name, "home": env_name, "force_env": env_name,
                    "compiler_key": word, "names": table_of(identifier, identifier),
                    "keywords": table_of(identifier, identifier)}),
    "runtime": fields({"noop": list_of(dotted_name), "amp_dtype": one_of("float16", "bfloat16"), "bf16": boolean,
                       "pinned_memory": boolean, "sync_batchnorm": boolean}),
    "doctor": fields({"version_rule": one_of("same-minor"), "smi_args": list_of(text),
                      "env": table_of(env_name, _doctor_need), "build": optional(identifier),
                      "platforms": list_of(identifier), "toolkit": _VERSION_SOURCE, "driver": _VERSION_SOURCE,
                      "devices": fields({"nodes": list_of(text), "docker": text, "container_env": optional(env_name),
                                         "container_runtime": text, "source": reason})}),
    "sim": fields({"label": text, "version": text, "source": text}),
}
_REQUIRED = ("name", "title", "namespace")


def _fail(path: Path, msg: str) -> None:
    raise UsageError(f"{path}: {msg}")


def _read_target(path: Path) -> dict:
    """A target file's checked table (plain data: see core/cache.py)."""
    data = parse_data(read_text(path, "target file"), path, "toml")
    unknown = set(data) - set(_TARGET_KEYS)
    if unknown:
        _fail(path, f"unknown keys {sorted(unknown)}")
    for key in _REQUIRED:
        if not data.get(key):
            _fail(path, f"missing required key '{key}'")
    for key, value in data.items():
        checked(str(path), (key,), _TARGET_KEYS[key], value)
    if bool(data.get("device")) == bool(data.get("device_expr")):
        _fail(path, "give exactly one of 'device' (a string) or 'device_expr' (an expression)")
    return data


def _bundled(path: Path) -> bool:
    return path.parent in (HERE, KB_API)


def _parse(path: Path) -> Target:
    data = cached_data(path, _read_target) if _bundled(path) else _read_target(path)
    assert isinstance(data, dict)
    names = {}
    for qualname, entry in data.get("names", {}).items():
        kind = next(k for k in NAME_DECISIONS if k in entry)
        names[qualname] = NameDecision(kind, entry[kind], entry.get("note", ""))
    api_names, api_modules, api_source = _load_api(path, data.get("api", ""))
    return Target(
        name=data["name"], title=data["title"], namespace=data["namespace"], kind=data.get("kind", "vendor"),
        aliases=tuple(a.lower() for a in data.get("aliases", ())),
        device=data.get("device", ""), device_expr=data.get("device_expr", ""),
        register=data.get("register", ""), backend=data.get("backend", "gloo"),
        runtime_shim=data.get("runtime_shim", RUNTIME_SHIM),
        backend_expr=data.get("backend_expr", ""),
        visible_devices_env=data.get("visible_devices_env", ""), smi=data.get("smi", ""),
        tensor_method=data.get("tensor_method", ""), is_attr=data.get("is_attr", ""),
        amp=data.get("amp", "torch.amp"), device_index=data.get("device_index", True),
        host=data.get("host", False),
        ops=data.get("ops", ""), dispatch_key=data.get("dispatch_key", ""),
        cuda_kernels=data.get("cuda_kernels", "rewrite"), torch_install=data.get("torch_install", ""),
        port=_section(PortGlue, data["port"]) if "port" in data else None,
        runtime=_section(RuntimeSettings, data.get("runtime", {})),
        doctor=_section(DoctorSettings, data.get("doctor", {})),
        sim=_section(SimSettings, data["sim"]) if "sim" in data else None,
        api_names=api_names, api_modules=api_modules, api_source=api_source,
        env=dict(data.get("env", {})), names=names, needs_device=dict(data.get("needs_device", {})),
        device_guard=data.get("device_guard", ""), no_arguments=dict(data.get("no_arguments", {})), path=str(path),
    )


# An API list (kb/api/<name>.json, or a file next to the target): the names its namespace has.
_API_KEYS = {"names": list_of(text), "modules": table_of(text, list_of(text)), "version": text}


def _read_api(path: Path) -> dict:
    """An API list's checked record (plain data: see core/cache.py)."""
    record = parse_data(read_text(path, "API list"), path, "json")
    if not isinstance(record, dict) or "names" not in record:
        _fail(path, "an API list must be a JSON object with 'names' (a list of names)")
    for key, check in _API_KEYS.items():
        if key in record:
            checked(str(path), (key,), check, record[key])
    return record


def _load_api(path: Path, api: str):
    if not api:
        return frozenset(), {}, ""
    candidates = [path.parent / api, KB_API / f"{api}.json"]
    for cand in candidates:
        if cand.is_file():
            record = cached_data(cand, _read_api) if _bundled(cand) else _read_api(cand)
            assert isinstance(record, dict)
            modules = {k: frozenset(v) for k, v in record.get("modules", {}).items()}
            return frozenset(record["names"]), modules, record.get("version", str(cand))
    _fail(path, f"API list '{api}' not found (looked in {', '.join(str(c) for c in candidates)})")


def bundled_names() -> list:
    """Every bundled target file's name."""
    return sorted(p.stem for p in HERE.glob("*.toml"))


def target_names(kinds=CONVERTED_KINDS, where: Optional[Callable] = None) -> list:
    """The bundled targets of these kinds (default: those convert writes for) for which `where(target)` holds."""
    return [n for n in bundled_names() if load_target(n).kind in kinds and (where is None or where(load_target(n)))]


def device_types() -> set:
    """The device types the bundled targets name ("npu", "cpu", "cuda" for hip, ...)."""
    return {load_target(n).device for n in bundled_names()} - {""}


def available_targets() -> list:
    """The targets convert, check and analyze write for."""
    return target_names()


def resolve_target_name(text: str) -> str:
    """A bundled target's name from its name or an alias in any case (`NPU`, `ascend`, `Cambricon`); a .toml
    path unchanged.  Anything else is a one-line UsageError with the closest name."""
    if text.endswith(".toml"):
        if Path(text).is_file():
            return text
        raise UsageError(f"unknown target '{text}': not a target file (a regular .toml file)")
    key = text.strip().lower()
    names = bundled_names()
    if key in names:
        return key
    known = {}
    for name in names:
        for alias in load_target(name).aliases:
            known[alias] = name
    if key in known:
        return known[key]
    from ..core.words import closest

    close = closest(key, names + sorted(known))
    hint = f" (did you mean {known.get(close, close)}?)" if close else ""
    raise UsageError(f"unknown target '{text}'{hint}; targets: {', '.join(names)}, or a target .toml file")


_CACHE: dict = {}


def load_target(name_or_path: str) -> Target:
    """Load a bundled target by name, or any target file by path."""
    key = str(name_or_path)
    if key in _CACHE:
        return _CACHE[key]
    path = Path(key)
    if not (key.endswith(".toml") and path.is_file()):
        key = resolve_target_name(key)  # a bundled name or alias, in any case; else a UsageError
        if key in _CACHE:
            return _CACHE[key]
        path = HERE / f"{key}.toml"
    target = _parse(path)
    _CACHE[key] = target
    return target
