"""Regenerate the operator-support lists in src/torchport/kb/ops/.

Each output file says which ATen operators ("name.overload", the default
overload written as just "name") have kernels on a device, and where that list
came from, so `convert` can tell which ops of a project a target runs natively.
Five sources, all read as files (PyYAML, zipfile, `git show`), nothing imported:

  aten                   torchgen/packaged/ATen/native/native_functions.yaml
                         of the installed PyTorch (torch==2.13.0 in .venv):
                         every op, its dispatch keys, and whether it is
                         CompositeImplicitAutograd / CompositeExplicitAutograd
                         (NonFunctional), i.e. needs no backend kernel
  npu --wheels DIR       torch_npu wheels from PyPI (downloaded into DIR with
                         `pip download` when missing):
                         torch_npu/csrc/aten/npu_native_functions*.yaml
  musa --git DIR         MooreThreads/torch_musa tags in a bare git directory:
                         torch_musa/csrc/aten/ops/musa_functions.yaml, and the
                         ops its torch patch adds (torch_patches/...yaml.patch)
  mlu --git DIR          Cambricon/torch_mlu branches: codegen/mlu_functions.yaml
  xpu --git DIR          intel/torch-xpu-ops release branches:
                         yaml/native/native_functions.yaml (or the older
                         yaml/xpu_functions.yaml) plus the XPU keys PyTorch
                         itself has in native_functions.yaml

Vendor files share one schema: target, extracted, method, fallback ("cpu" when
unlisted ops run on the CPU with a warning, "error" when they raise), its
source, and versions sorted by torch_version, each with vendor_version,
torch_version, source, files, ops, custom_ops and, where they apply,
key_limited (ops registered only for Quantized/Sparse/NestedTensor keys, so a
plain dense tensor gets no kernel), cpu_fallback_ops (ops the vendor sends to
the CPU explicitly) and other_namespaces (torchvision::, torchaudio:: ops).

Run it with a Python that has PyYAML (the system python3; the venv lacks it),
`aten` first: `xpu` adds PyTorch's own XPU keys from kb/ops/aten.json.
"""
from __future__ import annotations

import argparse
import datetime
import glob
import hashlib
import json
import re
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "torchport" / "kb" / "ops"

COMPOSITE = {
    "CompositeImplicitAutograd": "implicit",
    "CompositeExplicitAutograd": "explicit",
    "CompositeExplicitAutogradNonFunctional": "explicit",
}
# torchgen/model.py: structured kernels are generated for these keys, ufuncs for CPU/CUDA
STRUCTURED_KEYS = {"CPU", "CUDA", "MPS", "XPU", "MTIA"}
UFUNC_KEYS = {"CPU", "CUDA"}
KEY_LIMITED_NOTE = ("; key_limited = ops registered only for Quantized/Sparse/NestedTensor keys: a dense tensor "
                    "gets no vendor kernel (it may still run through the op's composite kernel in aten.json)")

DEFAULT_NPU_VERSIONS = ["2.1.0.post17", "2.4.0.post4", "2.7.1.post11", "2.13.0", "2.14.0"]
DEFAULT_MUSA_TAGS = ["v1.3.2", "v2.1.1", "v2.5.0", "v2.7.1"]
DEFAULT_MLU_BRANCHES = ["r1.22_pt2.1.0", "r2.1_develop", "r1.22_pt2.3.0", "r2.3_develop",
                        "r1.22_pt2.4.0", "r2.4_develop"]
DEFAULT_XPU_BRANCHES = ["release/2.13"]


# ---------------------------------------------------------------- common
def op_name(func: str) -> str:
    """'add.Tensor(Tensor self, ...) -> Tensor' -> 'add.Tensor'; 'aten::relu' -> 'relu'."""
    name = func.split("(", 1)[0].strip()
    if "::" in name:
        name = name.split("::", 1)[1]
    return name


def entry_func(entry) -> str:
    return entry["func"] if isinstance(entry, dict) else str(entry)


def dispatch_keys(raw) -> dict:
    """A yaml `dispatch:` (dict of 'K1, K2: kernel', or MLU's 'K1, K2' string) -> {key: kernel}."""
    keys = {}
    if isinstance(raw, str):
        for k in raw.split(","):
            if k.strip():
                keys[k.strip()] = ""
    elif isinstance(raw, dict):
        for ks, kernel in raw.items():
            if ks == "__line__":
                continue
            for k in str(ks).split(","):
                keys[k.strip()] = kernel
    return keys


def version_key(text: str) -> tuple:
    return tuple(int(n) for n in re.findall(r"\d+", text))


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def dumps(value, indent: int = 0, width: int = 200) -> str:
    """JSON with sorted keys; a dict or list that fits on one line stays on one line."""
    flat = json.dumps(value, sort_keys=True, ensure_ascii=False)
    if not isinstance(value, (dict, list)) or not value or len(flat) + indent <= width:
        return flat
    pad = " " * (indent + 1)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {dumps(v, indent + 1, width)}"
                 for k, v in sorted(value.items())]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [f"{pad}{dumps(v, indent + 1, width)}" for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def write(name: str, record: dict) -> None:
    record["extracted"] = datetime.date.today().isoformat()
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(dumps(record) + "\n", encoding="utf-8")
    if "versions" in record:
        for v in record["versions"]:
            print(f"{path}: {v['vendor_version']} (torch {v['torch_version']}): "
                  f"{len(v['ops'])} ops, {len(v['custom_ops'])} custom ops")
    else:
        print(f"{path}: {len(record['ops'])} ops")


def version_record(vendor_version, torch_version, source, files, ops, custom_ops, *,  # noqa: PLR0913
                   key_limited=None, cpu_fallback_ops=None, other_namespaces=None, note=None) -> dict:
    record = {
        "vendor_version": vendor_version, "torch_version": torch_version, "source": source,
        "files": sorted(files), "ops": sorted(set(ops)), "custom_ops": sorted(set(custom_ops)),
    }
    if key_limited:
        record["key_limited"] = {k: sorted(v) for k, v in sorted(key_limited.items())}
    if cpu_fallback_ops:
        record["cpu_fallback_ops"] = sorted(set(cpu_fallback_ops))
    if other_namespaces:
        record["other_namespaces"] = {k: sorted(set(v)) for k, v in sorted(other_namespaces.items())}
    if note:
        record["note"] = note
    return record


def limited(keys: set, plain: str) -> bool:
    """True when an op has vendor keys but not the plain dense one (e.g. only QuantizedPrivateUse1)."""
    return bool(keys) and plain not in keys


class Git:
    def __init__(self, gitdir: str):
        self.gitdir = gitdir

    def __call__(self, *args: str, check: bool = True) -> str:
        r = subprocess.run(["git", "--git-dir", self.gitdir, *args], capture_output=True, text=True)
        if check and r.returncode:
            raise SystemExit(f"git {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def commit(self, rev: str) -> str:
        return self("rev-parse", f"{rev}^{{commit}}").strip()

    def show(self, commit: str, path: str):
        r = subprocess.run(["git", "--git-dir", self.gitdir, "show", f"{commit}:{path}"],
                           capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else None

    def grep_files(self, commit: str, pattern: str, *paths: str) -> list[str]:
        out = self("grep", "-l", "-E", pattern, commit, "--", *paths, check=False)
        return [line.split(":", 1)[1] for line in out.splitlines() if ":" in line]


CXX_SUFFIXES = (".cpp", ".cc", ".cu", ".mu", ".h", ".hpp", ".template")
IMPL_BLOCK = re.compile(r"TORCH_LIBRARY_IMPL\(\s*aten\s*,\s*(\w+)\s*,\s*\w+\s*\)\s*\{")
IMPL_NAME = re.compile(r'\.impl\(\s*(?:TORCH_SELECTIVE_NAME\(\s*)?"(?:aten::)?([\w.]+)"')


def manual_registrations(git: Git, commit: str, keys: set, *paths: str) -> tuple[dict, list]:
    """Ops registered by hand in C++ (`TORCH_LIBRARY_IMPL(aten, KEY, m) { m.impl("op", ...) }`)
    for the given dispatch keys: ({op: {keys}}, [files])."""
    found: dict = {}
    files = git.grep_files(commit, r"TORCH_LIBRARY_IMPL\(\s*aten", *paths)
    used = []
    for path in files:
        if not path.endswith(CXX_SUFFIXES):
            continue
        text = git.show(commit, path) or ""
        for m in IMPL_BLOCK.finditer(text):
            if m.group(1) not in keys:
                continue
            depth, i = 1, m.end()
            while i < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            for name in IMPL_NAME.findall(text[m.end():i]):
                found.setdefault(name, set()).add(m.group(1))
                if path not in used:
                    used.append(path)
    return found, used


# ---------------------------------------------------------------- aten
def native_ops(entries: list) -> dict:
    """Dispatch keys of each op of a native_functions.yaml, following torchgen's rules:
    no dispatch table (and not structured) means CompositeImplicitAutograd; ufunc_inner_loop
    adds CPU and CUDA; a structured_delegate op gets the delegate's structured keys plus Meta
    and a generated CompositeExplicitAutogradNonFunctional kernel; autogen'd ops get a
    CompositeExplicitAutograd kernel.  `device_check: NoCheck` (the generated wrapper does not
    require all tensor arguments on one device, e.g. index.Tensor's CPU indices) is kept."""
    ops: dict = {}
    delegates = {}
    autogen = []
    no_check = set()
    for e in entries:
        if not isinstance(e, dict) or "func" not in e:
            continue
        name = op_name(e["func"])
        if e.get("device_check") == "NoCheck":
            no_check.add(name)
        keys = set(dispatch_keys(e.get("dispatch")))
        if e.get("dispatch") is None and not e.get("structured") and not e.get("structured_delegate"):
            keys.add("CompositeImplicitAutograd")
        if e.get("ufunc_inner_loop"):
            keys |= UFUNC_KEYS
        if e.get("structured"):
            keys.add("Meta")
        if e.get("structured_delegate"):
            delegates[name] = op_name(e["structured_delegate"])
            keys |= {"Meta", "CompositeExplicitAutogradNonFunctional"}
        ops[name] = keys
        autogen += [op_name(a) for a in str(e.get("autogen") or "").split(",") if a.strip()]
    for name, delegate in delegates.items():
        ops[name] |= ops.get(delegate, set()) & STRUCTURED_KEYS
    generated = [a for a in autogen if a not in ops]
    for a in generated:
        ops[a] = {"CompositeExplicitAutograd"}
    result = {}
    for name, keys in ops.items():
        composite = None
        for key, kind in COMPOSITE.items():
            if key in keys:
                composite = composite or kind
        info = {"dispatch": sorted(k for k in keys if k not in COMPOSITE), "composite": composite}
        if name in delegates:
            info["delegate"] = delegates[name]
        if name in generated:
            info["generated"] = True
        if name in no_check:
            info["device_check"] = "NoCheck"
        result[name] = info
    return result


def find_torchgen_yaml() -> Path:
    pattern = ".venv/lib/python*/site-packages/torchgen/packaged/ATen/native/native_functions.yaml"
    hits = sorted(glob.glob(str(ROOT / pattern)))
    if not hits:
        raise SystemExit("no torchgen native_functions.yaml under .venv; pass --yaml")
    return Path(hits[0])


def installed_torch_version(native_yaml: Path) -> str:
    site = native_yaml.parents[4]
    for meta in sorted(site.glob("torch-*.dist-info/METADATA")):
        for line in meta.read_text(encoding="utf-8").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    raise SystemExit(f"no torch-*.dist-info next to {native_yaml}")


def cmd_aten(args) -> None:
    path = Path(args.yaml) if args.yaml else find_torchgen_yaml()
    full = args.torch_version or installed_torch_version(path)
    version = full.split("+")[0]
    entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    write("aten", {
        "torch_version": version,
        "source": f"PyPI torch=={version} ({full}), file torchgen/packaged/ATen/native/native_functions.yaml "
                  f"sha256={sha256(path)}",
        "method": "PyYAML over native_functions.yaml, torchgen's rules: dispatch = backend keys of the "
                  "dispatch table (composite keys excluded); no dispatch table and not structured -> "
                  "composite 'implicit'; ufunc_inner_loop adds CPU, CUDA; structured ops add Meta; an op "
                  "with structured_delegate ('delegate') gets the delegate's structured keys "
                  "(CPU/CUDA/MPS/XPU/MTIA) plus Meta and a generated CompositeExplicitAutogradNonFunctional "
                  "kernel that calls the delegate, so composite 'explicit' there means: works wherever the "
                  "delegate has a kernel; autogen'd ops ('generated') get a CompositeExplicitAutograd kernel. "
                  "composite: 'implicit' = CompositeImplicitAutograd (decomposes, needs no backend kernel), "
                  "'explicit' = CompositeExplicitAutograd(NonFunctional) (one kernel for all backends, built "
                  "on other ops), null = needs a kernel for the device's key. Meta is as declared plus structured "
                  "ops (torchgen also generates Meta kernels for some in-place ops that are not listed). "
                  "device_check 'NoCheck' is copied from the entry: torchgen's wrapper then skips "
                  "check_and_update_common_device, so tensors of other devices (CPU indices) reach the kernel",
        "ops": native_ops(entries),
    })


# ---------------------------------------------------------------- npu
PYPI_SIMPLE = "https://pypi.org/simple/torch-npu/"
NPU_FALLBACK_MARK = b"will fall back to run on the CPU"
NPU_FALLBACK_SWITCH = b"TORCH_NPU_FALLBACK_CPU_DISABLE"


def pypi_files() -> dict:
    req = urllib.request.Request(PYPI_SIMPLE, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            data = json.load(r)
    except OSError as exc:
        print(f"warning: PyPI index not reachable ({exc}); sources will name the file only", file=sys.stderr)
        return {}
    return {f["filename"]: (f["url"], f["hashes"].get("sha256", "")) for f in data.get("files", [])}


def npu_wheel(directory: Path, version: str) -> Path:
    hits = sorted(directory.glob(f"torch_npu-{version}-*.whl"))
    if not hits:
        subprocess.run([sys.executable, "-m", "pip", "download", f"torch-npu=={version}", "--no-deps",
                        "--only-binary=:all:", "--python-version", "3.11",
                        "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                        "-d", str(directory), "-q"], check=True)
        hits = sorted(directory.glob(f"torch_npu-{version}-*.whl"))
    if not hits:
        raise SystemExit(f"no torch_npu {version} wheel in {directory}")
    return hits[0]


def npu_version(wheel: Path, index: dict) -> dict:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        vendor = torch = None
        for line in zf.read(meta).decode("utf-8").splitlines():
            if line.startswith("Version:"):
                vendor = line.split(":", 1)[1].strip()
            m = re.match(r"Requires-Dist:\s*torch\s*\(?\s*==\s*([0-9][0-9.]*)", line)
            if m:
                torch = m.group(1).rstrip(".")
        yamls = sorted(n for n in names if re.fullmatch(r"torch_npu/csrc/aten/npu_native_functions[\w]*\.ya?ml", n))
        if not yamls:
            yamls = sorted(n for n in names
                           if n.startswith("torch_npu/") and re.search(r"native_functions\w*\.ya?ml$", n))
        if not yamls:
            raise SystemExit(f"{wheel.name}: no npu_native_functions yaml")
        sections: dict = {}
        for name in yamls:
            data = yaml.safe_load(zf.read(name)) or {}
            for section, entries in data.items():
                if isinstance(entries, list):
                    sections.setdefault(section, set()).update(op_name(entry_func(e)) for e in entries)
        libs = [n for n in names if re.fullmatch(r"torch_npu/lib/libtorch_npu\.so", n)]
        binary = zf.read(libs[0]) if libs else b""
        if NPU_FALLBACK_MARK not in binary:
            print(f"warning: {wheel.name}: CPU-fallback warning text not found in libtorch_npu.so", file=sys.stderr)
        switch = NPU_FALLBACK_SWITCH in binary
    custom = sections.get("custom", set())
    aten = set()
    for section in ("supported", "autograd", "quant", "symint"):
        aten |= sections.get(section, set())
    aten -= custom
    quant_only = sections.get("quant", set()) - sections.get("supported", set()) - sections.get("autograd", set())
    digest = sha256(wheel)
    url, expected = index.get(wheel.name, (None, None))
    if expected and expected != digest:
        raise SystemExit(f"{wheel.name}: sha256 {digest} differs from PyPI's {expected}")
    source = f"{url} sha256={digest}" if url else f"PyPI {wheel.name} sha256={digest}"
    record = version_record(
        vendor, torch, source, yamls, aten, custom,
        key_limited={op: ["QuantizedPrivateUse1"] for op in quant_only},
        cpu_fallback_ops=sections.get("tocpu"),
    )
    return record, switch


def cmd_npu(args) -> None:
    directory = Path(args.wheels)
    directory.mkdir(parents=True, exist_ok=True)
    index = pypi_files()
    read = [npu_version(npu_wheel(directory, v), index) for v in args.versions]
    versions = [record for record, _ in read]
    switchable = sorted((r["vendor_version"] for r, switch in read if switch), key=version_key)
    versions.sort(key=lambda v: (version_key(v["torch_version"]), version_key(v["vendor_version"])))
    write("npu", {
        "target": "npu",
        "method": "zipfile + PyYAML over the wheel's torch_npu/csrc/aten/npu_native_functions*.yaml "
                  "(hand-written and codegen files, unioned): ops = names under supported, autograd, quant "
                  "and symint that are not declared under custom; custom_ops = custom (registered as "
                  "torch.ops.npu.*); quant-only ops are key_limited to QuantizedPrivateUse1; signatures "
                  "stripped to 'name.overload'; torch_version from METADATA Requires-Dist" + KEY_LIMITED_NOTE,
        "fallback": "cpu",
        "fallback_source": "github:Ascend/pytorch@0697d41da0b82924e3459413cacb291c2534c3e5 "
                           "torch_npu/csrc/aten/VariableFallbackKernel.cpp: TORCH_LIBRARY_IMPL(_, PrivateUse1) "
                           "registers npu_cpu_fallback, which warns \"CAUTION: The operator '...' is not currently "
                           "supported on the NPU backend and will fall back to run on the CPU\" and calls "
                           "at::native::cpu_fallback; that warning text is in torch_npu/lib/libtorch_npu.so of "
                           "every wheel listed (checked by this script)",
        "fallback_note": "on by default; torch_npu " + (", ".join(switchable) or "(none listed)") +
                         " can turn it into an error with TORCH_NPU_FALLBACK_CPU_DISABLE=1 (the name is in their "
                         "libtorch_npu.so; torch_npu/include/torch_npu/csrc/framework/utils/CpuFallbackUtils.h: "
                         "'... but CPU fallback is disabled by TORCH_NPU_FALLBACK_CPU_DISABLE=1')",
        "versions": versions,
    })


# ---------------------------------------------------------------- musa
MUSA_YAML = "torch_musa/csrc/aten/ops/musa_functions.yaml"
MUSA_PATCH = "torch_patches/aten_src_ATen_native_native_functions.yaml.patch"
PRIVATEUSE1_KEYS = {"PrivateUse1", "QuantizedPrivateUse1", "SparsePrivateUse1", "SparseCsrPrivateUse1",
                    "NestedTensorPrivateUse1"}


def musa_version(git: Git, tag: str, source: str) -> dict:
    commit = git.commit(tag)
    text = git.show(commit, MUSA_YAML)
    if text is None:
        raise SystemExit(f"{tag}: no {MUSA_YAML}")
    keys: dict = {}
    for e in yaml.safe_load(text) or []:
        if isinstance(e, dict) and "func" in e:
            d = dispatch_keys(e.get("dispatch"))
            # codegen rule (tools/codegen/README.md): an entry without dispatch reuses the
            # PyTorch (CUDA-ported) kernel for PrivateUse1
            keys.setdefault(op_name(e["func"]), set()).update(d or {"PrivateUse1": ""})
    files = [MUSA_YAML]
    manual, used = manual_registrations(git, commit, PRIVATEUSE1_KEYS, "torch_musa")
    for op, ks in manual.items():
        keys.setdefault(op, set()).update(ks)
    files += used
    patch = git.show(commit, MUSA_PATCH) or ""
    custom = {op_name(m) for m in re.findall(r"^\+[ \t]*- func:[ \t]*(.+)$", patch, re.M)}
    custom -= {op_name(m) for m in re.findall(r"^-[ \t]*- func:[ \t]*(.+)$", patch, re.M)}
    if patch:
        files.append(MUSA_PATCH)
    build = git.show(commit, "build.sh") or ""
    m = re.search(r"^PYTORCH_TAG=\"?v?([0-9.]+)", build, re.M)
    if not m:
        init = git.show(commit, "torch_musa/__init__.py") or ""
        m = re.search(r'TORCH_MIN_VERSION\s*=\s*Version\("([0-9.]+)"\)', init)
    if git.grep_files(commit, r"TORCH_LIBRARY_IMPL\(\s*_\s*,\s*PrivateUse1", "torch_musa"):
        print(f"warning: {tag}: torch_musa registers a PrivateUse1 backend fallback; check 'fallback'",
              file=sys.stderr)
    ops = set(keys) - custom
    return version_record(
        tag.lstrip("v"), m.group(1) if m else None, f"{source}@{commit}", files, ops, custom,
        key_limited={op: ks for op, ks in keys.items() if op in ops and limited(ks, "PrivateUse1")},
    )


def cmd_musa(args) -> None:
    git = Git(args.git)
    versions = [musa_version(git, t, args.source) for t in args.tags]
    versions.sort(key=lambda v: (version_key(v["torch_version"] or ""), version_key(v["vendor_version"])))
    write("musa", {
        "target": "musa",
        "method": "git show + PyYAML: ops = func names of torch_musa/csrc/aten/ops/musa_functions.yaml (an "
                  "entry without dispatch is registered for PrivateUse1, see tools/codegen/README.md) plus "
                  "m.impl names in TORCH_LIBRARY_IMPL(aten, *PrivateUse1) blocks; custom_ops = ops that "
                  "torch_musa's patch adds to PyTorch's native_functions.yaml (aten namespace of the patched "
                  "torch build); torch_version = PYTORCH_TAG in build.sh (the PyTorch it builds against)"
                  + KEY_LIMITED_NOTE,
        "fallback": "error",
        "fallback_source": "no TORCH_LIBRARY_IMPL(_, PrivateUse1) backend fallback in torch_musa at any tag "
                           "listed (checked by this script; the only backend fallbacks are AutogradPrivateUse1 in "
                           "torch_musa/csrc/core/VariableFallbackKernel_musa.cpp and AutocastPrivateUse1 in "
                           "torch_musa/csrc/amp/autocast_mode.cpp), so the dispatcher raises NotImplementedError, "
                           "e.g. https://github.com/MooreThreads/torch_musa/issues/72 \"Could not run "
                           "'aten::std.correction' with arguments from the 'musa' backend\" and issues/94 "
                           "(aten::_transformer_encoder_layer_fwd, torch_musa 1.3.0)",
        "versions": versions,
    })


# ---------------------------------------------------------------- mlu
MLU_YAML = "codegen/mlu_functions.yaml"
MLU_FALLBACK = "torch_mlu/csrc/aten/MLUFallback.cpp"


def mlu_version(git: Git, branch: str, source: str) -> dict:
    commit = git.commit(branch)
    text = git.show(commit, MLU_YAML)
    if text is None:
        raise SystemExit(f"{branch}: no {MLU_YAML}")
    data = yaml.safe_load(text) or {}
    keys: dict = {}
    for e in data.get("aten") or []:
        # mlu_functions.yaml header: no dispatch means PrivateUse1
        keys.setdefault(op_name(e["func"]), set()).update(dispatch_keys(e.get("dispatch")) or {"PrivateUse1": ""})
    files = [MLU_YAML]
    manual, used = manual_registrations(git, commit, PRIVATEUSE1_KEYS, "torch_mlu")
    for op, ks in manual.items():
        keys.setdefault(op, set()).update(ks)
    files += used
    prop = git.show(commit, "scripts/release/build.property") or ""
    m = re.search(r'"version"\s*:\s*"([^"]+)"', prop)
    vendor, _, torch = (m.group(1) if m else "").partition("-torch")
    fallback = git.show(commit, MLU_FALLBACK) or ""
    if not all(mark in fallback for mark in ("cpu_fallback", "TORCH_LIBRARY_IMPL(_, PrivateUse1",
                                             "ENABLE_FALLBACK_TO_CPU")):
        print(f"warning: {branch}: {MLU_FALLBACK} has no PrivateUse1 CPU fallback; check 'fallback'", file=sys.stderr)
    def names(section):
        return {op_name(e["func"]) for e in data.get(section) or []}
    return version_record(
        vendor or None, torch or None, f"{source}@{commit} (branch {branch})", files, set(keys), names("custom"),
        key_limited={op: ks for op, ks in keys.items() if limited(ks, "PrivateUse1")},
        other_namespaces={"torchvision": names("vision"), "torchaudio": names("audio")},
    )


def cmd_mlu(args) -> None:
    git = Git(args.git)
    versions = [mlu_version(git, b, args.source) for b in args.branches]
    versions.sort(key=lambda v: (version_key(v["torch_version"] or ""), version_key(v["vendor_version"] or "")))
    write("mlu", {
        "target": "mlu",
        "method": "git show + PyYAML over codegen/mlu_functions.yaml: ops = func names under aten (no dispatch "
                  "means PrivateUse1; 'SparsePrivateUse1' alone is key_limited) plus m.impl names in "
                  "TORCH_LIBRARY_IMPL(aten, *PrivateUse1) blocks; custom_ops = custom (torch.ops.torch_mlu.*); "
                  "other_namespaces = vision/audio; vendor and torch version from the \"version\" of "
                  "scripts/release/build.property ('1.25.0-torch2.4.1')" + KEY_LIMITED_NOTE,
        "fallback": "cpu",
        "fallback_source": f"{MLU_FALLBACK} (every branch listed, checked by this script): TORCH_LIBRARY_IMPL(_, "
                           "PrivateUse1) registers mlu_fallback, which warns \"The operator '...' is not currently "
                           "supported on the MLU backend and will fall back to run on the CPU\" and calls "
                           "at::native::cpu_fallback",
        "fallback_note": "on by default; ENABLE_FALLBACK_TO_CPU=0 registers mlu_disable_fallback instead "
                         "(NotImplementedError): getFallbackEnabledEnvVar in the same file, every branch listed",
        "versions": versions,
    })


# ---------------------------------------------------------------- xpu
XPU_KEYS = {"XPU", "SparseXPU", "SparseCsrXPU", "NestedTensorXPU", "QuantizedXPU"}
XPU_NATIVE = "yaml/native/native_functions.yaml"
XPU_LEGACY = "yaml/xpu_functions.yaml"
XPU_FALLBACK = ("src/ATen/native/xpu/XPUFallback.template", "src/ATen/native/xpu/XPUFallback.cpp",
                "src/aten/XPUFallback.template")


def xpu_version(git: Git, branch: str, source: str, aten: dict | None) -> dict:
    commit = git.commit(branch)
    m = re.fullmatch(r"release/(\d+\.\d+)", branch)
    if not m:
        raise SystemExit(f"{branch}: only release/X.Y branches name a torch version")
    torch = m.group(1) + ".0"
    keys: dict = {}
    files = []
    text = git.show(commit, XPU_NATIVE)
    if text is not None:
        files.append(XPU_NATIVE)
        for op, info in native_ops(yaml.safe_load(text)).items():
            ks = set(info["dispatch"]) & XPU_KEYS
            if ks:
                keys[op] = ks
    else:
        text = git.show(commit, XPU_LEGACY)
        if text is None:
            raise SystemExit(f"{branch}: neither {XPU_NATIVE} nor {XPU_LEGACY}")
        files.append(XPU_LEGACY)
        data = yaml.safe_load(text) or {}
        for section in ("supported", "autograd"):
            for e in data.get(section) or []:
                keys.setdefault(op_name(entry_func(e)), set()).add("XPU")
    manual, used = manual_registrations(git, commit, XPU_KEYS, "src")
    for op, ks in manual.items():
        keys.setdefault(op, set()).update(ks)
    files += used
    note = None
    if aten and aten["torch_version"] == torch:
        for op, info in aten["ops"].items():
            ks = set(info["dispatch"]) & XPU_KEYS
            if ks:
                keys.setdefault(op, set()).update(ks)
        files.append(f"PyTorch {torch} native_functions.yaml (XPU keys, via kb/ops/aten.json)")
    else:
        note = (f"PyTorch {torch}'s own XPU registrations (native_functions.yaml XPU keys, oneDNN ops in "
                "aten/src/ATen/native/mkldnn/xpu) are not included: kb/ops/aten.json is for another torch")
    fallback_text, cpu_ops, vision = "", [], []
    for path in XPU_FALLBACK:
        fallback_text = git.show(commit, path)
        if fallback_text is not None:
            files.append(path)
            block = re.search(r"fallback_list\s*=\s*\{(.*?)\};", fallback_text, re.S)
            if block:
                cpu_ops = re.findall(r'"([\w.]+)"', re.sub(r"//[^\n]*", "", block.group(1)))
            vision = re.findall(r'\{\s*"torchvision::(\w+)"', fallback_text)
            break
    if "PYTORCH_ENABLE_XPU_FALLBACK" not in (fallback_text or ""):
        print(f"warning: {branch}: no PYTORCH_ENABLE_XPU_FALLBACK switch found; check 'fallback'", file=sys.stderr)
    ops = set(keys) - set(cpu_ops)
    return version_record(
        f"torch-xpu-ops {branch}", torch, f"{source}@{commit}", files, ops, [],
        key_limited={op: ks for op, ks in keys.items() if op in ops and limited(ks, "XPU")},
        cpu_fallback_ops=cpu_ops, other_namespaces={"torchvision": vision} if vision else None, note=note,
    )


def cmd_xpu(args) -> None:
    git = Git(args.git)
    aten_path = OUT / "aten.json"
    aten = json.loads(aten_path.read_text(encoding="utf-8")) if aten_path.exists() else None
    versions = [xpu_version(git, b, args.source, aten) for b in args.branches]
    versions.sort(key=lambda v: version_key(v["torch_version"]))
    write("xpu", {
        "target": "xpu",
        "method": "git show + PyYAML over intel/torch-xpu-ops (built into PyTorch's XPU wheels): ops = ops with "
                  "an XPU-family key in yaml/native/native_functions.yaml (torchgen rules as in aten.json; "
                  "yaml/xpu_functions.yaml supported list on branches before 2.7) plus m.impl names in "
                  "TORCH_LIBRARY_IMPL(aten, *XPU) blocks plus the XPU keys of PyTorch's own "
                  "native_functions.yaml (from aten.json when its torch_version matches the branch); "
                  "cpu_fallback_ops = fallback_list of the XPU fallback file (always run on the CPU); "
                  "torch_version = the release/X.Y branch (head of the branch, not the exact PyTorch pin)"
                  + KEY_LIMITED_NOTE,
        "fallback": "error",
        "fallback_source": "torch-xpu-ops src/ATen/native/xpu/XPUFallback.template (every branch listed): "
                           "TORCH_LIBRARY_IMPL(_, XPU) registers xpu_lazy_registration_or_error_fallback, which "
                           "raises NotImplementedError \"The operator '...' is not currently implemented for the "
                           "XPU device\" unless PYTORCH_ENABLE_XPU_FALLBACK=1 (then xpu_fallback -> "
                           "native::cpu_fallback with a warning)",
        "versions": versions,
    })


# ---------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("aten", help="installed PyTorch's native_functions.yaml")
    p.add_argument("--yaml", help="native_functions.yaml (default: torchgen's in .venv)")
    p.add_argument("--torch-version", help="default: the torch dist-info next to the yaml")
    p = sub.add_parser("npu", help="torch_npu wheels")
    p.add_argument("--wheels", required=True, help="directory of torch_npu wheels (missing ones are downloaded)")
    p.add_argument("--versions", nargs="+", default=DEFAULT_NPU_VERSIONS)
    for name, flag, default, source in (
            ("musa", "--tags", DEFAULT_MUSA_TAGS, "github:MooreThreads/torch_musa"),
            ("mlu", "--branches", DEFAULT_MLU_BRANCHES, "github:Cambricon/torch_mlu"),
            ("xpu", "--branches", DEFAULT_XPU_BRANCHES, "github:intel/torch-xpu-ops")):
        p = sub.add_parser(name, help=f"{source.split(':', 1)[1]} {flag[2:]} in a bare git directory")
        p.add_argument("--git", required=True, help="bare git directory of " + source.split(":", 1)[1])
        p.add_argument(flag, nargs="+", default=default)
        p.add_argument("--source", default=source, help="where the repository came from")
    args = ap.parse_args(argv)
    {"aten": cmd_aten, "npu": cmd_npu, "musa": cmd_musa, "mlu": cmd_mlu, "xpu": cmd_xpu}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
