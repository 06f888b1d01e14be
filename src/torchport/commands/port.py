"""`torchport port-ext`: port a tree of CUDA C++ extension sources and their build glue.

MUSA and HIP: sources are rewritten from the mapping tables (kb/port/<target>.json,
plus `-m` user maps), `.cu`/`.cuh` renamed per target, includes kept consistent, build
files adapted; everything else is copied byte for byte.  NPU and MLU: kernels must be
rewritten (Ascend C / BANG C), so nothing is written but an inventory: every kernel
with its signature and launch sites, every op registered to Python and its callers.
"""
from __future__ import annotations

import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union, cast

from ..backends import TARGET_KINDS, PortGlue, Target, load_target, resolve_target_name, target_names
from ..core import codes, parallel, writes
from ..core import files as tree
from ..core.errors import UsageError
from ..core.finding import ADVICE, ERROR, Finding
from ..core.pipeline import FileResult, guarded
from ..core.textfile import Text, decode, unified_diff
from ..porting import native
from ..porting.buildglue import is_build_file, port_build_file
from ..porting.callsites import call_site_pattern, call_sites
from ..porting.consistency import check_includes, quoted_includes
from ..porting.engine import IncludeResolver, PortMap, load_map, new_name, port_text

SOURCE_SUFFIXES = native.NATIVE_SUFFIXES

DEFAULT_IGNORES = tuple(p for d in ("mlu", "npu", "mps", "parrots") for p in (f"{d}/*", f"*/{d}/*"))
SCHEMA_VERSION = 1

# one file for a worker: (entry, output folder (None: --diff), output name of a single-file input, its new name is
# another file of the input)
_Job = tuple[tree.Entry, Optional[Path], Optional[str], bool]


@dataclass
class PortedFile(FileResult):
    """status: ported | unchanged | copied | ignored | error | skipped | inventory."""

    output: str = ""                 # the output's relative path (renamed: k.cu -> k.mu)
    converted: Counter[str] = field(default_factory=Counter)
    left: Counter[str] = field(default_factory=Counter)
    review: int = 0
    lines_changed: int = 0
    defines: frozenset[str] = frozenset()
    # (line, path before, path after) of quoted includes
    includes: list[tuple[int, str, Optional[str]]] = field(default_factory=list)


@dataclass
class PortResult:
    target: str
    input: str
    output: Optional[str]
    mode: str
    files: list[PortedFile] = field(default_factory=list)
    inventory: dict[str, Any] = field(default_factory=dict)
    map_source: str = ""
    user_maps: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    backup: Optional[str] = None
    report_dir: Optional[str] = None
    includes_checked: int = 0

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.files for f in r.findings]

    def summary(self) -> dict[str, Any]:
        """The run's figures (core.pipeline.RunResult): its totals."""
        return self.totals()

    def totals(self) -> dict[str, Any]:
        converted: Counter[str] = Counter()
        left: Counter[str] = Counter()
        for r in self.files:
            converted.update(r.converted)
            left.update(r.left)
        return {"files": len(self.files), "files_by_status": dict(sorted(Counter(r.status for r in self.files).items())),
                "converted_refs": sum(converted.values()), "left_refs": sum(left.values()),
                "needs_review": sum(r.review for r in self.files),
                "unsupported": sum(1 for f in self.findings if f.rule == codes.TP952.id),
                "lines_changed": sum(r.lines_changed for r in self.files),
                "renamed_files": sum(1 for r in self.files if r.output != r.path),
                "includes_checked": self.includes_checked,
                "includes_broken": sum(1 for f in self.findings if f.rule == codes.TP957.id),
                "elapsed_seconds": round(self.elapsed, 3)}

    def texts(self, r: FileResult) -> Optional[tuple[str, str]]:
        """(original text, ported text) of one ported file, read back from the input (or the backup after
        --in-place) and the ported tree; None when they cannot be (--diff, inventory, unreadable)."""
        src = Path(self.input)
        base = src if src.is_dir() else src.parent
        r = cast(PortedFile, r)   # one of this run's files
        changed = r.status == "ported"
        if self.mode == "in-place" and changed:
            old, new = _read(Path(cast(str, self.backup)) / r.path), _read(base / r.output)  # in place: backed up
        elif self.mode == "write" and self.output:
            out = Path(self.output)
            old, new = _read(base / r.path), _read(out / r.output if src.is_dir() else out)
        else:
            old = _read(base / r.path)
            new = old if not changed else None
        if not changed:
            new = old
        return None if old is None or new is None else (old, new)

    def cpu_only(self) -> int:
        """How many C/C++ sources the input has when none of them holds CUDA (no .cu/.cuh file, no kernel, launch,
        CUDA name or call: nothing to port), else 0.  Exported ops alone are no CUDA: CPU extensions export too."""
        if self.mode == "inventory":
            inv = self.inventory
            sources = self.files
            cuda = bool(inv.get("cuda_files") or inv.get("kernels") or inv.get("launches")
                        or any(f["rule"] != codes.TP907.id for f in inv.get("findings", ())))
        else:
            sources = [r for r in self.files if r.path.endswith(SOURCE_SUFFIXES) and r.status not in ("ignored", "skipped")]
            cuda = any(r.path.endswith(native.CUDA_SUFFIXES) or r.status != "unchanged" or r.converted or r.left
                       or r.review or r.findings for r in sources)
        return 0 if cuda else len(sources)

    def api_counts(self) -> tuple[Counter[str], Counter[str]]:
        converted: Counter[str] = Counter()
        left: Counter[str] = Counter()
        for r in self.files:
            converted.update(r.converted)
            left.update(r.left)
        return converted, left

    def to_dict(self) -> dict[str, Any]:
        from ..core.version import __version__

        converted, left = self.api_counts()
        return {"schema_version": SCHEMA_VERSION, "tool": {"name": "torchport", "version": __version__},
                "command": "port-ext", "target": self.target, "input": self.input, "output": self.output,
                "mode": self.mode, "map": self.map_source, "user_maps": self.user_maps, "totals": self.totals(),
                "converted": dict(converted.most_common()), "left": dict(left.most_common()),
                "files": [{"path": r.path, "output": r.output, "status": r.status, "converted": sum(r.converted.values()),
                           "left": sum(r.left.values()), "needs_review": r.review, "lines_changed": r.lines_changed}
                          for r in self.files],
                "findings": [f.to_dict() for f in self.findings], "inventory": self.inventory}


def _read(path: Path) -> Optional[str]:
    try:
        data = tree.read_bytes(path)
    except OSError:
        return None
    text = decode(data)
    return data.decode("latin-1") if text is None else text.text  # latin-1: ported byte for byte (_port_entry)


# ------------------------------------------------------------------ worker
_STATE: dict[str, Any] = {}


def _init(target: str, maps: tuple[Union[str, os.PathLike[str]], ...], rels: tuple[str, ...], mode: str, port: PortGlue,
          roots: tuple[Optional[Path], Optional[Path], Optional[Path]] = (None, None, None)) -> None:
    pmap = load_map(target, maps)
    _STATE.update(pmap=pmap, resolver=IncludeResolver(list(rels), pmap.suffixes), mode=mode, port=port,
                  roots=roots, sources=source_suffixes(pmap))


def source_suffixes(pmap: PortMap) -> tuple[str, ...]:
    """C/C++/CUDA suffixes, and the target's own (`.mu`), so a partly ported tree is ported too."""
    return tuple(dict.fromkeys(SOURCE_SUFFIXES + tuple(pmap.suffixes.values())))


def _exists(base: str, name: str) -> bool:
    resolver = _STATE["resolver"]
    return resolver.find(f"{base}/_" if base else "_", name) is not None


def _port_one(job: _Job) -> PortedFile:
    """Port or copy one entry; reading or writing failing is this file's error, the run goes on."""
    entry = job[0]
    try:
        return _port_entry(*job)
    except writes.Unreadable as e:
        return PortedFile(entry.rel, "error", output=entry.rel, findings=[tree.read_error(entry.rel, e)])
    except OSError as e:
        what = f"cannot write this file ({e.strerror or e}); " + (
            "the original is unchanged" if _STATE["mode"] == "in-place" else "left out of the output")
        return PortedFile(entry.rel, "error", output=entry.rel,
                          findings=[Finding(entry.rel, 1, 1, codes.TP000.id, "output", ERROR, message=what)])


def _port_failed(rel: str, finding: Finding, trace: str) -> PortedFile:
    return PortedFile(rel, "error", output=rel, findings=[finding], trace=trace)


def _job_rel(job: _Job) -> str:
    return job[0].rel


# _port_one for the pipeline: a file torchport fails on is that file's internal error; the run goes on
_guarded_port = guarded(_port_one, _port_failed, _job_rel)


def _port_entry(entry: tree.Entry, dst: Optional[Path], out_name: Optional[str], taken: bool) -> PortedFile:
    """out_name: the output file's name when INPUT is a single file; taken: the renamed name is another
    file of the input (k.cu next to k.mu): not renamed, not ported."""
    pmap, mode = _STATE["pmap"], _STATE["mode"]
    src_root, out_root, backup_root = _STATE["roots"]
    dst = cast(Path, dst)   # None only with --diff, which writes nothing: only the write and in-place paths read it
    rel = entry.rel
    source = rel.endswith(_STATE["sources"]) and not entry.excluded
    out_rel = out_name or (new_name(rel, pmap.suffixes) if source else rel)
    problem = tree.problem_finding(entry)
    if problem is not None:
        return PortedFile(rel, "error" if problem.action == ERROR else "skipped", output=rel, findings=[problem])
    if entry.kind == "link-outside":
        return PortedFile(rel, "skipped", output=rel)
    if taken:
        out_rel = rel
    if mode == "write":
        writes.make_dirs(out_root, (dst / out_rel).parent)
    if entry.kind == "link":
        if mode == "write":
            tree.copy_link(entry, dst / rel, src_root, out_root)
        return PortedFile(rel, "copied", output=rel)
    build = not entry.excluded and (rel.endswith(".py") or rel.rsplit("/", 1)[-1] == "CMakeLists.txt"
                                    or rel.endswith(".cmake"))
    if taken or not (source or build):  # other files are only copied
        if mode == "write":
            writes.copy_file(entry.src, dst / out_rel)
        if taken:
            return PortedFile(rel, "error", output=rel, findings=[Finding(
                rel, 1, 1, codes.TP000.id, "output", ERROR,
                message=f"not ported: its new name {new_name(rel, pmap.suffixes)} is another file of the input, which "
                "renaming would overwrite; rename one of them and run again")])
        return PortedFile(rel, "ignored" if entry.excluded else "copied", output=out_rel)
    try:
        info = os.lstat(entry.src)
        data = tree.read_bytes(entry.src)
    except OSError as e:
        return PortedFile(rel, "error", output=rel, findings=[tree.read_error(rel, e)])
    binary = b"\0" in data[:8192]
    text = decode(data) if not binary else None
    note = []
    if text is None and source and not binary:
        # Neither UTF-8 nor GBK (say, a latin-1 licence header): latin-1 maps each byte to one character,
        # so everything but the replaced ASCII identifiers is written back byte for byte.
        text = Text(data.decode("latin-1"), "latin-1")
        note = [Finding(rel, 1, 1, codes.TP000.id, "input", ADVICE,
                        message="not UTF-8 or GBK: ported byte for byte, only ASCII identifiers replaced")]
    result = PortedFile(rel, "ignored" if entry.excluded else "copied", output=out_rel)
    new = None
    if text is not None and source:
        fp = port_text(rel, text.text, pmap, _STATE["resolver"])
        new, result.findings, result.converted, result.left = fp.new_text, note + fp.findings, fp.converted, fp.left
        result.review, result.lines_changed, result.defines = fp.review, fp.lines_changed, fp.defines
        result.status = "ported" if new is not None or out_rel != rel else "unchanged"
        result.includes = quoted_includes(fp.includes, new)
    elif text is not None and build and is_build_file(rel, text.text):
        new, result.findings = port_build_file(rel, text.text, _STATE["port"], pmap.suffixes, _exists)
        result.lines_changed = len({f.line for f in result.findings if f.action == "modify"})
        result.status = "ported" if new is not None else "unchanged"
    elif source and text is None:  # NUL bytes: UTF-16, or not text at all
        out_rel = result.output = rel
        result.status = "error"
        result.findings = [Finding(rel, 1, 1, codes.TP000.id, "input", ERROR, message=(
            "not ported: the file holds NUL bytes (UTF-16 or binary, not source text the porter reads); "
            + ("copied unchanged under its own name" if mode == "write" else "left as it is")
            + "; save it as UTF-8 and run again"))]
    elif text is None:
        result.findings = [Finding(rel, 1, 1, codes.TP000.id, "input", ADVICE,
                                   message="binary or undecodable: copied byte for byte")]
    body = text.encode(new) if new is not None and text is not None else data
    if mode == "write":  # from the bytes already read: no second open of the input
        writes.write_file(dst / out_rel, body, info)
    elif mode == "in-place" and (new is not None or out_rel != rel):
        writes.rewrite(entry.src, data, info, body, backup_root / rel, backup_root,
                       new_path=None if out_rel == rel else dst / out_rel)
    elif mode == "diff" and new is not None and text is not None:
        result.diff = unified_diff(text.text, new, f"a/{rel}", f"b/{out_rel}")
    return result


def _weight(job: _Job) -> int:
    entry = job[0]
    if entry.kind != "file" or not entry.rel.endswith(SOURCE_SUFFIXES):
        return 0
    try:
        return entry.src.stat().st_size
    except OSError:
        return 0


# ------------------------------------------------------------------ run
@dataclass(frozen=True)
class PortRequest:
    """One port-ext run: a file or folder, the (loaded) target, and how.  `maps`: user map files; `ignore`: globs
    copied unchanged (None: DEFAULT_IGNORES); `in_place` (keeping a backup) or `diff` (writing nothing) instead
    of a mirrored output; `report_dir` (default <output>_port_report)."""

    input: Path
    target: Target
    output: Optional[Path] = None
    maps: tuple[Union[str, os.PathLike[str]], ...] = ()
    ignore: Optional[tuple[str, ...]] = None
    in_place: bool = False
    diff: bool = False
    force: bool = False
    report_dir: Optional[Path] = None
    jobs: Optional[int] = None
    write_reports: bool = True
    progress: Optional[Callable[[int, int], object]] = None   # progress(done, total)

    @classmethod
    def of(cls, path: Union[str, os.PathLike[str]], target: Union[str, Target],
           output: Union[str, os.PathLike[str], None] = None, **options: Any) -> PortRequest:
        """A request from the keywords `torchport.port_ext` takes: the fields above, with `target` a name or alias
        (loaded here) or a Target."""
        if isinstance(target, str):
            name = resolve_target_name(target)
            if name not in port_ext_targets():
                raise UsageError(f"port-ext does not cover {name}: its CUDA kernels are rewritten by hand (port-ext "
                                 f"targets: {', '.join(port_ext_targets())})")
            target = load_target(name)
        for key in ("maps", "ignore"):
            if options.get(key) is not None:
                options[key] = tuple(options[key])
        if options.get("report_dir") is not None:
            options["report_dir"] = Path(options["report_dir"])
        return cls(Path(path), target, Path(output) if output is not None else None, **options)


def port(request: PortRequest) -> PortResult:
    """Port the request's input for its target: a target whose `cuda_kernels` is "port" (musa, hip) is
    ported; "inventory" (npu, mlu) gets an inventory of the kernels to rewrite."""
    target, output, maps, ignore = request.target.ref, request.output, request.maps, request.ignore
    in_place, diff, force, report_dir = request.in_place, request.diff, request.force, request.report_dir
    jobs, write_reports, progress = request.jobs, request.write_reports, request.progress
    names = port_ext_targets()
    if target not in names:
        raise UsageError(f"port-ext does not cover {target}: its CUDA kernels are rewritten by hand (port-ext "
                         f"targets: {', '.join(names)})")
    src = Path(request.input)
    if not src.exists():
        raise UsageError(f"input not found: {src}")
    if in_place and diff:
        raise UsageError("choose only one of --in-place and --diff")
    inventory_only = load_target(target).cuda_kernels == "inventory"
    mode = "inventory" if inventory_only else "in-place" if in_place else "diff" if diff else "write"
    if mode == "inventory" and (in_place or diff):
        raise UsageError(f"--to {target} writes an inventory only: --in-place and --diff do not apply")
    pmap = load_map(target, maps) if mode != "inventory" else None  # bad maps fail before anything is written
    out = Path(output) if output else tree.default_output(src, target) if mode == "write" else None
    if out is not None and src.is_file() and not output:  # k.cu -> k_musa.mu
        out = out.parent / new_name(out.name, cast(PortMap, pmap).suffixes)   # mode write: a map
    if mode == "inventory":  # nothing but the report is written: -o names its folder
        report_dir, out = report_dir or output, None
    reports = None
    if write_reports and mode != "diff":
        # <output>_port_report, or <input>_<target>_port_report: never convert's <output>_report
        base = out if out is not None else Path(os.path.abspath(src))  # `port-ext .`: named after the folder
        stem = base.name if src.is_dir() else base.name.split(".")[0]
        name = f"{stem}_port_report" if out is not None else f"{stem}_{target}_port_report"
        reports = Path(report_dir) if report_dir else base.parent / name
    tree.check_layout(src, out, reports, force)
    start = time.perf_counter()
    entries = list(tree.walk(src, DEFAULT_IGNORES if ignore is None else tuple(ignore)))
    result = PortResult(target, str(src), str(out) if out else None, mode, user_maps=[str(m) for m in maps])
    if mode == "inventory":
        result.inventory = inventory(entries)
        result.files = [PortedFile(e.rel, "inventory", output=e.rel) for e in entries
                        if e.kind == "file" and e.rel.endswith(SOURCE_SUFFIXES) and not e.excluded]
    else:
        assert pmap is not None   # not an inventory: the map was loaded
        result.map_source = pmap.source
        dst = (out if src.is_dir() else out.parent) if out is not None else None
        out_name = out.name if src.is_file() and out is not None else None
        backup = None
        with tree.hold_output(src, out, mode, force):
            if mode == "in-place":
                dst = src if src.is_dir() else src.parent
                backup = tree.backup_dir(src)
            port_data = load_target(target).port or PortGlue()
            rels = tuple(e.rel for e in entries if e.kind == "file")
            taken = _renames_onto_input(entries, pmap.suffixes, source_suffixes(pmap)) if src.is_dir() else set()
            roots = (src if src.is_dir() else src.parent, dst, backup)
            result.files = parallel.run([(e, dst, out_name, e.rel in taken) for e in entries], _init,
                                        (target, tuple(maps), rels, mode, port_data, roots),
                                        _guarded_port, jobs or parallel.default_jobs(), _weight, progress)
            if backup is not None and writes.remove_empty_dirs(backup):
                result.backup = str(backup)
        _drop_project_names(result.files)
        result.includes_checked, broken = check_includes(result.files)
        by_file = {r.output: r for r in result.files}
        for out_rel, line, path, expected in broken:
            by_file[out_rel].findings.append(Finding(out_rel, line, line, codes.TP957.id, "port", ERROR, path, expected,
                                                     f"include no longer resolves; it named {expected}"))
    result.elapsed = time.perf_counter() - start
    if reports is not None:
        result.report_dir = str(reports)  # written by the caller: torchport.port_ext, the cli
    return result


def nothing_to_port(n: int) -> str:
    """What port-ext and migrate say of a tree whose C/C++ sources hold no CUDA."""
    return f"{n} C++ source{'s' if n != 1 else ''}, CPU-only, nothing to port"


def _renames_onto_input(entries: list[tree.Entry], suffixes: dict[str, str], sources: tuple[str, ...]) -> set[str]:
    """The source files whose new name (k.cu -> k.mu) is another file of the input, or the new name of
    another file: renaming them would overwrite a file, so they are left unported."""
    names = {e.rel for e in entries}
    renamed: dict[str, list[str]] = {}
    for e in entries:
        if e.kind == "file" and not e.excluded and e.rel.endswith(sources):
            new = new_name(e.rel, suffixes)
            if new != e.rel:
                renamed.setdefault(new, []).append(e.rel)
    return {rel for new, rels in renamed.items() for rel in rels if new in names or len(rels) > 1}


def _drop_project_names(files: list[PortedFile]) -> None:
    """CUDA-looking names the project defines itself are its own, not CUDA references left behind."""
    own = set().union(*(r.defines for r in files))
    for r in files:
        for name in own & set(r.left):
            del r.left[name]


def port_ext_targets() -> list[str]:
    """The targets port-ext writes for (kernels ported, or listed for rewriting), from the target files;
    each one it ports has a mapping table (kb/port/<name>.json, tests/test_targets.py)."""
    return target_names(kinds=TARGET_KINDS, where=lambda t: t.cuda_kernels in ("port", "inventory"))


_LAUNCH = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^<>;{}]*>\s*)?<<<")  # one blank run per place: linear


def inventory(entries: list[tree.Entry]) -> dict[str, Any]:
    """Kernels (signature, launch sites), ops registered to Python and the Python code that calls them."""
    scan = native.NativeScan()
    kernels: list[dict[str, Any]] = []
    launches: list[dict[str, Any]] = []
    texts: dict[str, str] = {}
    for e in entries:
        if e.kind == "file" and not e.excluded and (e.rel.endswith(SOURCE_SUFFIXES) or e.rel.endswith(".py")):
            try:
                t = decode(tree.read_bytes(e.src))
            except OSError:
                continue  # listed as an error by the run's walk
            if t is not None:
                texts[e.rel] = t.text
    for rel, text in texts.items():
        if not rel.endswith(SOURCE_SUFFIXES):
            continue
        native.scan_native(rel, text, scan)
        code = native.blank_comments(text)
        flat = native._LAUNCH_BOUNDS.sub(lambda x: " " * len(x.group(0)), code)
        line_of = native.line_finder(code)  # same offsets in code and flat (bounds blanked to equal length)
        for m in native._KERNEL.finditer(flat):
            end = _matching_paren(flat, m.end() - 1)
            signature = " ".join(flat[m.start():end + 1].split()) if end > 0 else m.group(2)
            kernels.append({"file": rel, "line": line_of(m.start()), "name": m.group(2),
                            "signature": signature})
        for m in _LAUNCH.finditer(code):
            launches.append({"file": rel, "line": line_of(m.start()), "kernel": m.group(1)})
    library = tuple((ns, tuple(sorted(ops))) for ns, ops in sorted(scan.library_ops.items()) if ops)
    pattern = call_site_pattern(tuple(sorted(scan.pybind_ops)), library)
    callers: list[dict[str, Any]] = []
    if pattern is not None:
        for rel, text in texts.items():
            if rel.endswith(".py"):
                callers += [{"file": f.file, "line": f.line, "call": f.old} for f in call_sites(rel, text, pattern)]
    return {"kernels": kernels, "launches": launches, "pybind_ops": sorted(scan.pybind_ops),
            "library_ops": {ns: sorted(ops) for ns, ops in sorted(scan.library_ops.items())},
            "python_calls": callers, "cuda_files": scan.cuda_files, "findings": [f.to_dict() for f in scan.findings]}


def _matching_paren(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, min(len(text), open_at + 4000)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1
