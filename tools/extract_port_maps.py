"""Regenerate the C/C++ porting tables in src/torchport/kb/port/ (used by `torchport port-ext`).

Each output file maps CUDA names to a target's names, split the way port-ext applies
them, and records where every entry came from.  Two sources, read as files, nothing
imported or executed:

  hip  [--torch DIR]          PyTorch's own hipify tables, shipped in the torch wheel
                              (DIR = the installed `torch` package, default the one in
                              .venv): torch/utils/hipify/cuda_to_hip_mappings.py,
                              constants.py and hipify_python.py, read with `ast`
  musa --git DIR [--rev REV]  torch_musa's SimplePorting default mapping, in a bare git
                              directory of github:MooreThreads/torch_musa:
                              torch_musa/utils/mapping/*.json as loaded by
                              torch_musa/utils/simple_porting.py

Output schema (JSON, sorted keys, indent 1): target, source, files, sha256, extracted,
method, suffixes, identifiers (whole identifiers or `::`-qualified names -> replacement),
headers (whole #include paths -> replacement), unsupported (names without a counterpart
-> reason), skipped (entries that cannot be applied per identifier or include path:
count, examples, entries), tables (per source table: entries, use), plus per-target
extras described in `method`.
"""
from __future__ import annotations

import argparse
import ast
import datetime
import glob
import hashlib
import json
import posixpath
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "torchport" / "kb" / "port"

IDENTIFIER = re.compile(r"(?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*\Z")
HEADER_EXTS = (".h", ".hpp", ".hh", ".hxx", ".cuh", ".muh", ".inl", ".inc")
PATH = re.compile(r"[\w.+-]+(?:/[\w.+-]+)*\Z")


def is_identifier(key: str) -> bool:
    return bool(IDENTIFIER.match(key))


def is_header_path(key: str) -> bool:
    return bool(PATH.match(key)) and ("/" in key or key.endswith(HEADER_EXTS))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def skipped_section(entries: dict, reasons: dict) -> dict:
    keys = sorted(entries)
    return {"count": len(keys), "examples": keys[:12],
            "entries": {k: {"value": entries[k], "reason": reasons[k]} for k in keys}}


def write(target: str, record: dict) -> None:
    record["target"] = target
    record["extracted"] = datetime.date.today().isoformat()
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{target}.json"
    path.write_text(json.dumps(record, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    counts = ", ".join(f"{len(record[k]) if k != 'skipped' else record[k]['count']} {k}"
                       for k in ("identifiers", "headers", "unsupported", "skipped"))
    print(f"{path}: {counts}")


# ================================================================ hip
HIPIFY = "utils/hipify"
HIP_TABLE_USE = {
    "CUDA_IDENTIFIER_MAP": "CUDA runtime/driver/library identifiers",
    "CUDA_TYPE_NAME_MAP": "CUDA type names",
    "CUDA_INCLUDE_MAP": "#include paths of the CUDA toolkit and libraries",
    "CUDA_SPECIAL_MAP": "cuSPARSE/cuSOLVER names (hipify < 2.0 used them only in PyTorch's sparse/linalg files)",
    "PYTORCH_SPECIFIC_MAPPINGS": "PyTorch build macros, gloo, cudnn RNN, NVSHMEM names",
    "C10_MAPPINGS": "c10/cuda headers and c10 names",
    "CAFFE2_SPECIFIC_MAPPINGS": "Caffe2 (Meta-internal builds, marked for removal): skipped",
    "CAFFE2_PATH_MAPPINGS": "Caffe2 paths (Meta-internal builds, marked for removal): skipped",
}
CAFFE2_TABLES = ("CAFFE2_SPECIFIC_MAPPINGS", "CAFFE2_PATH_MAPPINGS")
# extension file names used to show what get_hip_file_path(..., is_pytorch_extension=True) does
HIP_NAME_EXAMPLES = ("kernel.cu", "kernel.cuh", "ops.cpp", "ops.h", "ops_cuda.cpp", "ops_cuda_kernel.cu",
                     "csrc/cuda/ops.cu", "csrc/cuda/ops.cpp", "csrc/CUDAUtils.h")


def installed_version(torch_dir: Path) -> str:
    """__version__ of torch/version.py, read with ast."""
    path = torch_dir / "version.py"
    if path.is_file():
        for node in ast.parse(path.read_bytes()).body:
            if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__version__":
                return node.value.value
    return "unknown"


def default_torch() -> Path:
    hits = sorted(glob.glob(str(ROOT / ".venv/lib/python*/site-packages/torch/utils/hipify/cuda_to_hip_mappings.py")))
    if not hits:
        raise SystemExit("no torch/utils/hipify under .venv; pass --torch DIR (the installed torch package)")
    return Path(hits[0]).parents[2]


class Evaluator:
    """Values of the literal mapping tables: strings, tuples and lists as written; a bare name is
    a module-level string of the same file when there is one, else its own name (the hipify
    constants: CONV_MEM, API_RUNTIME, HIP_UNSUPPORTED...); os.environ.get(K, D) is D (the
    environment unset), so `_RCCL_HEADER` gets its default."""

    def __init__(self, tree: ast.Module):
        self.names: dict = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                try:
                    value = self(node.value)
                except ValueError:
                    continue
                if isinstance(value, (str, bool)):
                    self.names[node.targets[0].id] = value

    def __call__(self, node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.names.get(node.id, node.id)
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self(e) for e in node.elts)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
            return self(node.left) == self(node.comparators[0])
        if isinstance(node, ast.IfExp):
            return self(node.body) if self(node.test) else self(node.orelse)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and ast.unparse(node.func.value) == "os.environ" and len(node.args) == 2):
            return self(node.args[1])
        raise ValueError(f"not a literal: {ast.unparse(node)}")


def mapping_tables(tree: ast.Module, evaluate: Evaluator) -> dict:
    """NAME -> [(key, replacement, flags)] for every module-level OrderedDict([...]) / dict literal,
    in source order (a key repeated inside one table: the last one wins, as in a dict)."""
    tables = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value, pairs = node.value, None
        if isinstance(value, ast.Call) and ast.unparse(value.func) in ("collections.OrderedDict", "OrderedDict", "dict") \
                and len(value.args) == 1 and isinstance(value.args[0], (ast.List, ast.Tuple)):
            pairs = [(e.elts[0], e.elts[1]) for e in value.args[0].elts
                     if isinstance(e, ast.Tuple) and len(e.elts) == 2]
        elif isinstance(value, ast.Dict):
            pairs = list(zip(value.keys, value.values))
        if pairs is None:
            continue
        rows = {}
        for k, v in pairs:
            key, val = evaluate(k), evaluate(v)
            flags: tuple = ()
            if isinstance(val, tuple):  # hipify < 2.0: (replacement, CONV_..., API_..., [HIP_UNSUPPORTED])
                val, flags = val[0], tuple(val[1:])
            rows[key] = (key, val, flags)
        tables[node.targets[0].id] = list(rows.values())
    return tables


def combined_order(tree: ast.Module) -> list:
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "CUDA_TO_HIP_MAPPINGS":
            return [e.id for e in node.value.elts if isinstance(e, ast.Name)]
    raise SystemExit("cuda_to_hip_mappings.py: no CUDA_TO_HIP_MAPPINGS list")


def hipified_include_prefixes(tree: ast.Module) -> list:
    """The include-path prefixes hipify_python.preprocessor's header rewrite sends through
    get_hip_file_path: the tuple of the first `f.startswith((...))` call in it."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "preprocessor":
            for call in ast.walk(node):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and call.func.attr == "startswith" and call.args and isinstance(call.args[0], ast.Tuple)):
                    return [e.value for e in call.args[0].elts if isinstance(e, ast.Constant)]
    return []


def hip_extension_path(rel: str) -> str:
    """The file name hipify gives a PyTorch extension's file (get_hip_file_path with
    is_pytorch_extension=True, as torch.utils.cpp_extension calls it): `.cu` -> `.hip`;
    cuda/CUDA -> hip/HIP (and THC -> THH) in the folder and the file stem; when neither the
    folder nor the name changed, `_hip` is appended to the stem."""
    folder, name = posixpath.split(rel)
    stem, ext = posixpath.splitext(name)
    new_ext = ".hip" if ext == ".cu" else ext
    new_folder = folder
    for old, new in (("cuda", "hip"), ("CUDA", "HIP"), ("THC", "THH")):
        new_folder = new_folder.replace(old, new)
        stem = stem.replace(old, new)
    if new_folder == folder and stem + new_ext == name:
        stem += "_hip"
    return posixpath.join(new_folder, stem + new_ext)


def token_replacer(mapping: dict):
    """hipify's text rewrite: any key delimited by non-word characters on both sides, the longest
    key first, one pass (replacements are not rescanned)."""
    keys = sorted(mapping, key=len, reverse=True)
    pattern = re.compile(r"(?<=\W)(" + "|".join(map(re.escape, keys)) + r")(?=\W)")
    return lambda text: pattern.sub(lambda m: mapping[m.group(0)], text)


def cmd_hip(args) -> None:  # noqa: C901
    torch_dir = Path(args.torch) if args.torch else default_torch()
    hip_dir = torch_dir / HIPIFY
    read = {}
    for name in ("cuda_to_hip_mappings.py", "constants.py", "hipify_python.py", "version.py"):
        path = hip_dir / name
        if path.is_file():
            read[f"torch/{HIPIFY}/{name}"] = path.read_bytes()
    version_file = torch_dir / "version.py"
    torch_version = installed_version(torch_dir)
    if version_file.is_file():
        read["torch/version.py"] = version_file.read_bytes()
    hipify_version = "unknown"
    if f"torch/{HIPIFY}/version.py" in read:
        for node in ast.parse(read[f"torch/{HIPIFY}/version.py"]).body:
            if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__version__":
                hipify_version = node.value.value
    constants = set()
    if f"torch/{HIPIFY}/constants.py" in read:
        for node in ast.parse(read[f"torch/{HIPIFY}/constants.py"]).body:
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                constants.add(node.targets[0].id)

    tree = ast.parse(read[f"torch/{HIPIFY}/cuda_to_hip_mappings.py"])
    evaluate = Evaluator(tree)
    tables = mapping_tables(tree, evaluate)
    order = combined_order(tree)
    hipify_tree = ast.parse(read[f"torch/{HIPIFY}/hipify_python.py"])
    prefixes = hipified_include_prefixes(hipify_tree)
    unknown_flags = sorted({f for t in order for _, _, fl in tables[t] for f in fl
                            if isinstance(f, str) and constants and f not in constants})
    if unknown_flags:
        raise SystemExit(f"flags not in constants.py: {unknown_flags}")

    # PYTORCH_MAP: every table of CUDA_TO_HIP_MAPPINGS in order, a later table's entry replacing
    # an earlier one with the same key (hipify < 2.0: entries flagged API_CAFFE2 left out).
    merged, origin, overridden, caffe2_only = {}, {}, [], {}
    for name in order:
        for key, value, flags in tables[name]:
            if "API_CAFFE2" in flags:
                caffe2_only[key] = (value, name)
                continue
            if key in merged and merged[key][0] != value:
                overridden.append(f"{key}: {origin[key]} {merged[key][0]!r} -> {name} {value!r}")
            merged[key] = (value, flags)
            origin[key] = name
    hipify_text = token_replacer({k: v for k, (v, _) in merged.items()})

    identifiers, headers, header_prefixes, unsupported, normalized = {}, {}, {}, {}, {}
    skipped, reasons = {}, {}
    for key, (value, table) in caffe2_only.items():
        if key not in merged:
            skipped[key], reasons[key] = value, f"{table}: flagged API_CAFFE2, hipify leaves it out for PyTorch code"
    for key, (value, flags) in merged.items():
        table = origin[key]
        if table in CAFFE2_TABLES:
            skipped[key], reasons[key] = value, (f"{table}: for Caffe2 (Meta-internal builds, marked for "
                                                 "removal); hipify 2.0 still applies it to all text")
            continue
        if "HIP_UNSUPPORTED" in flags:
            unsupported[key] = f"HIP_UNSUPPORTED in {table} (hipify still writes {value})"
            continue
        m = re.match(r'include ([<"])(.+)\Z', key)
        if m and value.startswith(f"include {m.group(1)}"):
            header, new = m.group(2), value[len("include ") + 1:]
            normalized[key] = header
            headers[header] = new
        elif key.startswith("<") and key.endswith(">") and value.startswith("<") and value.endswith(">"):
            normalized[key] = key[1:-1]
            headers[key[1:-1]] = value[1:-1]
        elif table == "CUDA_INCLUDE_MAP" and PATH.match(key) and not key.endswith(HEADER_EXTS):
            header_prefixes[key] = value
        elif is_header_path(key):
            headers[key] = value
        elif is_identifier(key):
            identifiers[key] = value
        else:
            skipped[key] = value
            reasons[key] = f"{table}: not an identifier or include path (hipify matches it as text between non-word characters)"

    # Includes of PyTorch's own CUDA headers: the token map runs first, then paths under the
    # prefixes are renamed like the files hipify generates for them (the ROCm build ships them).
    include_dir = torch_dir / "include"
    derived, derived_dirs = {}, []
    for prefix in prefixes:
        base = include_dir / prefix.rstrip("/")
        if not base.is_dir():
            continue
        derived_dirs.append(f"torch/include/{prefix.rstrip('/')}")
        for path in sorted(base.rglob("*")):
            rel = path.relative_to(include_dir).as_posix()
            if not path.is_file() or not rel.endswith(HEADER_EXTS) or rel in headers:
                continue
            after = hipify_text(f"<{rel}>")[1:-1]
            new = hip_extension_path(after) if after.startswith(tuple(prefixes)) else after
            if new != rel:
                derived[rel] = new
    headers_from_tables = len(headers)
    headers.update(derived)

    device_code = {}
    for key, value, _ in tables.get("MATH_TRANSPILATIONS", []):
        device_code[key] = value

    wheel = f"PyPI torch=={torch_version.split('+')[0]} ({torch_version}) wheel"
    record = {
        "source": f"{wheel}: torch/{HIPIFY} (hipify {hipify_version})",
        "files": sorted(read) + derived_dirs,
        "sha256": {k: sha256(v) for k, v in sorted(read.items())},
        "method": (
            "ast over cuda_to_hip_mappings.py, nothing imported: every table of CUDA_TO_HIP_MAPPINGS ("
            + ", ".join(order) + ") merged in that order into one map, a later table replacing an earlier "
            "entry with the same key (hipify_python builds PYTORCH_MAP the same way; hipify 2.0 has no "
            "PyTorch/Caffe2 split any more, older versions left API_CAFFE2 entries out). Values are the "
            "replacement strings (older versions: tuples (replacement, CONV_*, API_*[, HIP_UNSUPPORTED]) whose "
            "constants are read as their names). hipify applies the map in one pass to every key delimited by "
            "non-word characters on both sides, the longest key first, with no rescan; here: keys that are "
            "identifiers or ::-qualified names -> identifiers; CUDA_INCLUDE_MAP keys and path-like keys -> "
            "headers ('include <cuda.h' and '<nccl.h>' normalized to the bare path, see `normalized`); "
            "'thrust/system/cuda' -> header_prefixes (a path prefix); CAFFE2 tables and keys that are "
            "neither -> skipped. hipify also rewrites, after the map, #include paths starting with "
            + ", ".join(prefixes) + " (or THC, not THCP) through get_hip_file_path: those are listed in "
            "headers for every header of those folders in the wheel's torch/include ("
            f"{len(derived)} entries besides {headers_from_tables} from the tables). PyTorch's C++ API names "
            "(at::cuda::getCurrentCUDAStream, c10::cuda::CUDAGuard, AT_CUDA_CHECK, "
            "C10_CUDA_KERNEL_LAUNCH_CHECK, DeviceType::CUDA...) are in no table: hipify 2.0 keeps them, "
            "ROCm builds of PyTorch provide them under the CUDA names (the *MasqueradingAsCUDA classes of "
            "ATen/hip/impl now derive from the c10::cuda ones). device_code: MATH_TRANSPILATIONS, applied "
            "only in .cu/.cuh files and only to 'name(' (std::max( -> ::max(). Not tables, not listed: "
            "kernel launches <<<...>>> -> hipLaunchKernelGGL (hip_clang_launch=False, the default "
            "cpp_extension uses), '#include \"hip/hip_runtime.h\"' prepended when device code is found and "
            "no hip_runtime header is included, CMakeLists.txt: CUDA -> HIP, THC -> THH, .cu -> .hip."),
        "suffixes": {".cu": ".hip"},
        "file_names": {
            "rule": "get_hip_file_path(path, is_pytorch_extension=True), as torch.utils.cpp_extension calls "
                    "hipify: .cu -> .hip; cuda -> hip, CUDA -> HIP, THC -> THH in the folder names and the file "
                    "stem; when neither the folder nor the file name changed, _hip is appended to the stem "
                    "(so .cuh, .h and .cpp keep their suffix); a file whose text hipify does not change is "
                    "left where it is when its folder would not change",
            "examples": {n: hip_extension_path(n) for n in HIP_NAME_EXAMPLES},
        },
        "identifiers": identifiers,
        "headers": headers,
        "header_prefixes": header_prefixes,
        "normalized": normalized,
        "device_code": device_code,
        "unsupported": unsupported,
        "skipped": skipped_section(skipped, reasons),
        "overridden": overridden,
        "tables": {name: {"entries": len(tables[name]), "use": HIP_TABLE_USE.get(name, "")}
                   for name in order + (["MATH_TRANSPILATIONS"] if "MATH_TRANSPILATIONS" in tables else [])},
    }
    if "MATH_TRANSPILATIONS" in record["tables"]:
        record["tables"]["MATH_TRANSPILATIONS"]["use"] = "device code of .cu/.cuh files: see device_code"
    write("hip", record)


# ================================================================ musa
MAPPING_DIR = "torch_musa/utils/mapping"
PORTER = "torch_musa/utils/simple_porting.py"
# PyTorch's own CUDA headers, read for identifiers a SimplePorting key changes from inside
FRAGMENT_CORPUS = ("c10/cuda", "ATen/cuda", "ATen/native/cuda")


def simple_porting_rules(tree: ast.Module) -> tuple:
    """From simple_porting.py: EXT_REPLACED_MAPPING, and the file names load_replaced_mapping
    leaves out (`name != "general.json"`)."""
    suffixes, excluded = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "EXT_REPLACED_MAPPING":
            suffixes = ast.literal_eval(node.value)
        if isinstance(node, ast.FunctionDef) and node.name == "load_replaced_mapping":
            for cmp in ast.walk(node):
                if (isinstance(cmp, ast.Compare) and len(cmp.ops) == 1 and isinstance(cmp.ops[0], ast.NotEq)
                        and isinstance(cmp.comparators[0], ast.Constant)):
                    excluded.append(cmp.comparators[0].value)
    if not suffixes or not excluded:
        raise SystemExit(f"{PORTER}: EXT_REPLACED_MAPPING or the excluded mapping file not found; check the tool")
    return suffixes, excluded


def simple_port(rules: list, text: str) -> str:
    """SimplePorting.modify_file on one string: every rule, longest key first, str.replace in turn
    (so a replacement can be rewritten again by a shorter key)."""
    for key, value in rules:
        text = text.replace(key, value)
    return text


def cmd_musa(args) -> None:  # noqa: C901
    def git(*a: str, text=True):
        return subprocess.run(["git", "--git-dir", args.git, *a], check=True, capture_output=True, text=text).stdout

    commit = git("rev-parse", f"{args.rev}^{{commit}}").strip()
    read = {PORTER: git("show", f"{commit}:{PORTER}", text=False)}
    suffixes, excluded = simple_porting_rules(ast.parse(read[PORTER]))
    names = sorted(p.rsplit("/", 1)[1] for p in git("ls-tree", "--name-only", commit, MAPPING_DIR + "/").split())
    loaded = [n for n in names if n.endswith(".json") and n not in excluded]
    tables, not_loaded = {}, {}
    for name in names:
        data = git("show", f"{commit}:{MAPPING_DIR}/{name}", text=False)
        if name in loaded:
            read[f"{MAPPING_DIR}/{name}"] = data
            tables[name] = json.loads(data)
        elif name.endswith(".json"):
            not_loaded[name] = {"entries": len(json.loads(data)), "sha256": sha256(data)}

    # load_replaced_mapping: user mapping_rule first, then dict.update with each default file in
    # os.listdir order (a default entry replaces a user entry with the same key); the order of the
    # files is the file system's, so it only matters if two files disagree: checked here.
    merged, origin, conflicts = {}, {}, []
    for name in loaded:
        for key, value in tables[name].items():
            if key in merged and merged[key] != value:
                conflicts.append(f"{key}: {origin[key]} {merged[key]!r} vs {name} {value!r}")
            merged.setdefault(key, value)
            origin.setdefault(key, name)
    if conflicts:
        raise SystemExit("default mapping files disagree (their load order is os.listdir's):\n" + "\n".join(conflicts))
    rules = sorted(merged.items(), key=lambda kv: len(kv[0]), reverse=True)

    header_files = {"include.json", "dnn-header.json"}
    identifiers, headers, chained = {}, {}, {}
    skipped, reasons = {}, {}
    for key, value in merged.items():
        effective = simple_port(rules, key)  # what SimplePorting writes for the key standing alone
        if effective != value:
            chained[key] = {"table": value, "written": effective}
        placed = False
        if is_header_path(key) or origin[key] in header_files:
            headers[key] = effective
            placed = True
        if is_identifier(key):
            identifiers[key] = effective
            placed = True
        if not placed:
            skipped[key] = value
            reasons[key] = (f"{origin[key]}: not an identifier or include path (SimplePorting replaces it "
                            f"as a substring of any line)")

    # Identifier keys SimplePorting also applies inside longer names: found in PyTorch's own CUDA
    # headers (the API extension code calls), with what SimplePorting writes for them.
    fragments, seen_in, corpus = {}, {}, []
    torch_dir = Path(args.torch) if args.torch else None
    if torch_dir is None:
        try:
            torch_dir = default_torch()
        except SystemExit:
            torch_dir = None
    if torch_dir is not None and (torch_dir / "include").is_dir():
        words = set()
        for sub in FRAGMENT_CORPUS:
            base = torch_dir / "include" / sub
            if base.is_dir():
                corpus.append(f"torch/include/{sub}")
                for path in sorted(base.rglob("*")):
                    if path.is_file() and path.name.endswith(HEADER_EXTS):
                        words.update(re.findall(r"\b[A-Za-z_]\w*\b", path.read_text(encoding="utf-8", errors="replace")))
        id_keys = [k for k in identifiers if "::" not in k]
        for word in sorted(words - set(merged)):
            inside = [k for k in id_keys if k in word]
            if inside:
                new = simple_port(rules, word)
                if new != word:
                    seen_in[word] = new
                    for k in inside:
                        fragments[k] = identifiers[k]

    record = {
        "source": f"github:MooreThreads/torch_musa@{commit} ({args.rev})",
        "files": sorted(read),
        "fragments_corpus": ({"source": f"PyPI torch=={installed_version(torch_dir).split('+')[0]} wheel",
                              "dirs": corpus} if corpus else {}),
        "sha256": {k: sha256(v) for k, v in sorted(read.items())},
        "method": (
            "git show + json: the default mapping of torch_musa.utils.simple_porting.SimplePorting "
            f"(load_replaced_mapping loads every *.json of {MAPPING_DIR} except {', '.join(excluded)}; "
            "seed 004 §7.2.2 and docs/markdown/source/06_third_party_lib_extension.md say the same: general.json "
            "is only a reference for user rules). Precedence replicated: a user mapping_rule is loaded first and "
            "the default files update it (a default entry wins over a user entry with the same key) unless "
            "drop_default_mapping; the default files are read in os.listdir order, which does not matter "
            "because none of them disagree (checked); all entries are then sorted by key length, longest first, "
            "and each source line is rewritten with str.replace for every entry in turn, except lines that "
            "start with '*' or '/' and lines containing 'cub/' (left whole). Here: keys that are identifiers "
            "-> identifiers, keys of include.json/dnn-header.json and path-like keys (a '/' or a header "
            "extension) -> headers (a bare-name key of include.json, e.g. nvfunctional, is in both), anything "
            "else -> skipped; values are what SimplePorting writes for the key standing alone (`chained` lists "
            "the keys where a shorter key rewrites the replacement again). SimplePorting matches header keys "
            "as substrings, so 'CUDAEvent.h' also rewrites the last component of 'ATen/cuda/CUDAEvent.h' (to "
            "ATen/cuda/MUSAEvent.h); port-ext matches whole include paths. `fragments`: identifier keys "
            "SimplePorting also rewrites inside longer identifiers, found in the CUDA headers of the installed "
            "PyTorch (see fragments_corpus); `fragments_seen` gives what SimplePorting "
            "writes for those longer identifiers (e.g. OptionalCUDAGuard). No entry covers DeviceType::CUDA/"
            "kCUDA, is_cuda(), C10_CUDA_KERNEL_LAUNCH_CHECK or the cuda namespace (at::cuda::, c10::cuda::): "
            "the torch_musa docs have the user add them as mapping_rule entries (docs/markdown/source/"
            "06_third_party_lib_extension.md: '::cuda::' -> '::musa::', ', CUDA,' -> ', PrivateUse1,', "
            "'.is_cuda()' -> '.is_privateuseone()', '.cuh' -> '.muh', #include <ATen/cuda/CUDAContext.h> -> "
            "\"torch_musa/csrc/aten/musa/MUSAContext.h\", #include <c10/cuda/CUDAGuard.h> -> "
            "\"torch_musa/csrc/core/MUSAGuard.h\")."),
        "suffixes": {f".{k}": f".{v}" for k, v in sorted(suffixes.items())},
        "file_names": {
            "rule": "EXT_REPLACED_MAPPING of simple_porting.py: the last extension only, the rest of the name "
                    "kept; the ported tree is written next to the input as <dir>_musa",
            "examples": {n: n.rsplit(".", 1)[0] + "." + suffixes.get(n.rsplit(".", 1)[1], n.rsplit(".", 1)[1])
                         for n in ("kernel.cu", "kernel.cuh", "ops.cpp", "ops_cuda.cpp")},
        },
        "identifiers": identifiers,
        "headers": headers,
        "unsupported": {},
        "skipped": skipped_section(skipped, reasons),
        "chained": chained,
        "fragments": fragments,
        "fragments_seen": seen_in,
        "tables": {name: {"entries": len(tables[name]), "use": "loaded by default"} for name in loaded},
        "not_loaded": not_loaded,
    }
    for info in record["not_loaded"].values():
        info["use"] = f"not loaded by SimplePorting (excluded in {PORTER})"
    write("musa", record)


# ================================================================ main
def main(argv: list | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("hip", help="PyTorch's hipify tables from the installed torch")
    p.add_argument("--torch", help="the installed torch package directory (default: .venv's)")
    p = sub.add_parser("musa", help="torch_musa SimplePorting default mapping from a bare git directory")
    p.add_argument("--git", required=True, help="bare git directory of MooreThreads/torch_musa")
    p.add_argument("--rev", default="v2.7.1")
    p.add_argument("--torch", help="installed torch package whose CUDA headers show which keys act inside "
                                   "longer names (default: .venv's; skipped when absent)")
    args = ap.parse_args(argv)
    {"hip": cmd_hip, "musa": cmd_musa}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
