"""`torchport analyze`: a read-only migration assessment of a project for one or more targets.

The answers per target are `convert`'s own findings (same rules, same data),
so what analyze calls unsupported is exactly what convert leaves unsupported.
On top: CUDA C++ extensions (kernels, PTX, exported ops and their Python call
sites), CUDA-only packages (imports and declared dependencies), and a
readiness grade per target whose formula is documented in docs/analysis.md:

    manual  = unsupported APIs + CUDA-only packages the target can replace
              + CUDA kernels, when the target ports them with a tool (musa)
    blocked = CUDA kernels that must be rewritten + inline PTX sites
              + CUDA-only packages the target has no replacement for
    review  = advice findings (code left as is that may need a look), package imports aside
              + C++ review items + optional code: kernels, PTX and CUDA-only packages whose every
              Python import is under try/except ImportError (the project runs without them)
    effort  = manual + review / 4 + 10 * blocked, in fix units (EFFORT_UNIT): not hours
    grade   = A (effort < 1), B (< 10), C (< 50), D (< 200), E (>= 200)
"""
from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union

from ..analyze.advice import COLUMNS as ADVICE_COLUMNS
from ..analyze.advice import project_rows
from ..analyze.libraries import LibraryScan, local_names
from ..analyze.libraries import scan as scan_libraries
from ..analyze.scan import FileScan, guarded_scan, init_worker
from ..backends import Target, available_targets, load_target
from ..converter.project import Facts
from ..converter.project import facts as project_facts
from ..core import codes, parallel
from ..core import files as tree
from ..core.codes import CATEGORIES
from ..core.errors import UsageError
from ..core.finding import ADVICE, CHANGES, ERROR, OPTIONAL_IMPORT, UNSUPPORTED, Finding
from ..core.version import __version__
from ..kb.operators import op_list
from ..kb.packages import Package, Packages, packages
from ..porting.native import NATIVE_SUFFIXES, NativeScan

SCHEMA_VERSION = 1
GRADES = ((1, "A"), (10, "B"), (50, "C"), (200, "D"))
# what one unit of effort is: the weights (1 manual, 1/4 review, 10 blocked) are relative, not measured time
EFFORT_UNIT = "fix units: 1 = one manual API fix, a review item 1/4, a blocked item 10; relative, not hours"

# Report groups of finding categories, from the one category table (core.codes.CATEGORIES).
TOUCHPOINT_GROUPS = {category: group for category, group in CATEGORIES.items() if group}
NOT_TOUCHPOINTS = tuple(category for category, group in CATEGORIES.items() if not group)

AdviceRow = tuple[str, int, str, str, str]  # advice.csv's row: (file, line, rule id, advice, source)


@dataclass
class Readiness:
    automatic: int = 0
    unsupported: int = 0
    review: int = 0
    package_swaps: int = 0
    blocked_packages: int = 0
    kernels: int = 0
    kernels_blocked: bool = True
    kernels_optional: bool = False   # every Python use of the extension is optional (try/except ImportError)
    ptx: int = 0
    optional_packages: int = 0       # CUDA-only packages imported only under try/except ImportError: review
    advice_review: int = 0           # of review: convert's advice findings (package imports aside)
    native_review: int = 0           # of review: C++ items to look at (TP904-906) and the CUDA-torch pin (TP910)
    not_read: int = 0                # files that could not be read or parsed: the grade counts without them
    library_paths: int = 0           # names from installed libraries the project calls that run CUDA code

    @property
    def manual(self) -> int:
        return self.unsupported + self.package_swaps + self.library_paths + \
            (0 if self.kernels_blocked or self.kernels_optional else self.kernels)

    @property
    def blocked(self) -> int:
        return (self.kernels if self.kernels_blocked and not self.kernels_optional else 0) \
            + (0 if self.kernels_optional else self.ptx) + self.blocked_packages

    @property
    def effort(self) -> float:
        return self.manual + self.review / 4 + 10 * self.blocked

    @property
    def grade(self) -> str:
        return next((g for limit, g in GRADES if self.effort < limit), "E")

    def drivers(self) -> list[tuple[int, str, float]]:
        """What the effort is made of, largest share first: [(count, what, units)], only the non-zero ones."""
        optional_native = (self.kernels + self.ptx) if self.kernels_optional else 0
        kernels = self.kernels if not self.kernels_optional else 0
        rows = [(self.unsupported, "unsupported APIs (manual)", 1.0),
                (self.package_swaps, "CUDA-only packages to replace (manual)", 1.0),
                (self.library_paths, "installed libraries' functions that run CUDA code (manual)", 1.0),
                (0 if self.kernels_blocked else kernels, "CUDA kernels a tool ports (manual)", 1.0),
                (kernels if self.kernels_blocked else 0, "CUDA kernels to rewrite (blocked)", 10.0),
                (0 if self.kernels_optional else self.ptx, "inline PTX sites (blocked)", 10.0),
                (self.blocked_packages, "CUDA-only packages with no replacement (blocked)", 10.0),
                (self.advice_review, "to review: convert's advice findings other than package imports", 0.25),
                (self.native_review, "to review: C++ items and CUDA torch pins", 0.25),
                (optional_native, "to review: optional kernels and PTX (try/except ImportError)", 0.25),
                (self.optional_packages, "to review: optional CUDA-only packages (try/except ImportError)", 0.25)]
        rows = [(n, what, n * weight) for n, what, weight in rows if n]
        return sorted(rows, key=lambda r: -r[2])

    def drivers_text(self, top: int = 3) -> str:
        """`2 unsupported APIs (manual) = 2, ...`: the items that drive the grade, largest first."""
        rows = self.drivers()
        text = ", ".join(f"{n} {what} = {units:g}" for n, what, units in rows[:top])
        return (text + (f", {len(rows) - top} more" if len(rows) > top else "")) or "nothing counted"

    def to_dict(self) -> dict[str, Any]:
        return {"automatic": self.automatic, "manual": self.manual, "review": self.review, "blocked": self.blocked,
                "unsupported_apis": self.unsupported, "package_swaps": self.package_swaps,
                "blocked_packages": self.blocked_packages, "optional_packages": self.optional_packages,
                "library_paths": self.library_paths,
                "cuda_kernels": self.kernels,
                "kernels_optional": self.kernels_optional, "inline_ptx": self.ptx,
                "effort": round(self.effort, 2), "effort_unit": EFFORT_UNIT,
                "effort_drivers": [{"count": n, "what": what, "units": round(u, 2)} for n, what, u in self.drivers()],
                "grade": self.grade, "files_not_read": self.not_read}


@dataclass
class AnalysisResult:
    input: str
    targets: list[str]
    torch_version: Optional[str]
    files: list[FileScan] = field(default_factory=list)
    native: NativeScan = field(default_factory=NativeScan)
    readiness: dict[str, Readiness] = field(default_factory=dict)            # target -> its readiness
    data: dict[str, dict[str, Optional[str]]] = field(default_factory=dict)  # target -> versions of the data used
    output: Optional[str] = None
    libraries: Optional[LibraryScan] = None              # installed libraries the project calls (libraries.py)
    elapsed: float = 0.0
    started: str = ""
    _touchpoints: Optional[list[Finding]] = field(default=None, repr=False)
    _advice: dict[str, list[AdviceRow]] = field(default_factory=dict, repr=False)

    def target_findings(self, target: str) -> list[Finding]:
        """What convert reports for this target (Python and shell files)."""
        return [f for s in self.files for f in s.per_target.get(target, [])]

    @property
    def common(self) -> list[Finding]:
        """Target-independent findings: packages, dependencies, C++ sources, extension call sites, errors."""
        return sorted([f for s in self.files for f in s.common] + self.native.findings,
                      key=lambda f: (f.file, f.line, f.rule))

    def touchpoints(self) -> list[Finding]:
        """Every CUDA touchpoint once: per (file, line, category, rule), the findings of the target
        that reports most of them (targets word and place the same touchpoint differently)."""
        if self._touchpoints is not None:
            return self._touchpoints
        best: dict[tuple[str, int, str, str], list[Finding]] = {}
        for t in self.targets:
            mine: dict[tuple[str, int, str, str], list[Finding]] = {}
            for f in self.target_findings(t):
                if f.category not in NOT_TOUCHPOINTS:
                    mine.setdefault((f.file, f.line, f.category, f.rule), []).append(f)
            for key, group in mine.items():
                if len(group) > len(best.get(key, ())):
                    best[key] = group
        found = [f for group in best.values() for f in group]
        # an import of a kb package is reported by convert (TP114) and by analyze (TP908): one touchpoint
        imports = {(f.file, f.line) for f in found if f.category == "third-party"}
        found += [f for f in self.common if f.category not in NOT_TOUCHPOINTS
                  and not (f.rule == codes.TP908.id and (f.file, f.line) in imports)]
        self._touchpoints = sorted(found, key=lambda f: (f.file, f.line, f.col, f.rule))
        return self._touchpoints

    def source(self, rel: str) -> Optional[str]:
        """The text of one analysed file (read again from the input), or None when it cannot be read."""
        from ..core.textfile import decode

        src = Path(self.input)
        try:
            text = decode(tree.read_bytes(src / rel if src.is_dir() else src))
        except OSError:
            return None
        return None if text is None else text.text

    def package_of(self, finding: Finding) -> Optional[Package]:
        """The kb package behind a TP908 (import) or TP909 (declared dependency) finding, or None (for the
        report writers, which read the result, not this module)."""
        return package_of(finding, packages())

    def unknown_apis(self) -> list[Finding]:
        return [f for f in self.touchpoints() if f.category == "unknown-api"]

    def unsupported(self, target: str) -> list[Finding]:
        return [f for f in self.target_findings(target) if f.action == UNSUPPORTED]

    def advice(self, target: str) -> list[AdviceRow]:
        """Performance advice for the target (kb/advice.toml): [(file, line, rule, advice, source)]."""
        if target not in self._advice:
            self._advice[target] = project_rows(self.files, target)
        return self._advice[target]

    def convert_counts(self, target: str) -> dict[str, int]:
        """{changes, unsupported, to_review, errors}: convert's own counts for this target (its findings)."""
        n = Counter(f.action for f in self.target_findings(target))
        return {"changes": sum(n[a] for a in CHANGES), "unsupported": n[UNSUPPORTED], "to_review": n[ADVICE],
                "errors": n[ERROR]}

    def summary(self) -> dict[str, Any]:
        touch = self.touchpoints()
        return {
            "files": len(self.files),
            "python_files": sum(1 for s in self.files if s.kind == "python"),
            "lines": sum(s.lines for s in self.files),
            "errors": sum(1 for f in self.common if f.action == ERROR),
            "touchpoints": len(touch),
            "touchpoints_by_group": dict(sorted(Counter(TOUCHPOINT_GROUPS.get(f.category, f.category)
                                                        for f in touch).items())),
            "cuda_files": self.native.cuda_files,
            "cuda_kernels": len(self.native.kernels),
            "exported_ops": len(self.native.pybind_ops) + sum(len(v) for v in self.native.library_ops.values()),
            "extension_call_sites": sum(1 for s in self.files for f in s.common if f.rule == codes.TP907.id),
            "readiness": {t: r.to_dict() for t, r in self.readiness.items()},
            "libraries": self.libraries.summary() if self.libraries is not None else None,
            "advice": {t: len(self.advice(t)) for t in self.targets},
            # what `convert --to t` would report for the same tree (its summary's words and numbers)
            "convert": {t: self.convert_counts(t) for t in self.targets},
            "elapsed_seconds": round(self.elapsed, 3),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "torchport", "version": __version__},
            "command": "analyze",
            "started": self.started,
            "input": self.input,
            "output": self.output,
            "targets": self.targets,
            "torch_version": self.torch_version,
            "data": self.data,
            "summary": self.summary(),
            "touchpoints": [f.to_dict() for f in self.touchpoints()],
            "common": [f.to_dict() for f in self.common],
            "extensions": {
                "kernels": [{"file": f, "line": line, "name": n} for f, line, n in self.native.kernels],
                "pybind_ops": sorted(self.native.pybind_ops),
                "library_ops": {ns: sorted(ops) for ns, ops in sorted(self.native.library_ops.items())},
            },
            "libraries": self.libraries.to_dict() if self.libraries is not None else None,
            "per_target": {t: {"readiness": self.readiness[t].to_dict(),
                               "findings": [f.to_dict() for f in self.target_findings(t)],
                               "advice": [dict(zip((c.lower() for c in ADVICE_COLUMNS), row))
                                          for row in self.advice(t)]} for t in self.targets},
            "files": [{"path": s.path, "kind": s.kind, "status": s.status, "lines": s.lines}
                      for s in self.files if s.status != "skipped"],
        }


def parse_targets(spec: Union[str, Iterable[str], None]) -> list[str]:
    if not spec:
        return available_targets()
    names = [load_target(t.strip()).name if not t.strip().endswith(".toml") else t.strip()
             for t in (spec.split(",") if isinstance(spec, str) else spec) if t.strip()]  # UsageError: unknown
    return names


def _weight(entry: tree.Entry) -> int:
    if entry.kind != "file":
        return 0
    try:
        return entry.src.stat().st_size
    except OSError:
        return 0


@dataclass(frozen=True)
class AnalyzeRequest:
    """One assessment: a file or folder, the (loaded) targets, and how.  `torch_version`: the PyTorch whose op
    lists apply; `output`: the report folder (default <name>_analysis beside the input); `python`: the
    interpreter whose installed libraries the project's calls are looked up in (default: this one)."""

    input: Path
    targets: tuple[Target, ...]
    torch_version: Optional[str] = None
    output: Optional[Path] = None
    jobs: Optional[int] = None
    exclude: tuple[str, ...] = ()
    write_reports: bool = True
    force: bool = False
    python: Optional[str] = None
    progress: Optional[Callable[[int, int], object]] = None   # progress(done, total)

    @classmethod
    def of(cls, path: Union[str, os.PathLike[str]], targets: Union[str, Iterable[str], None] = None,
           **options: Any) -> AnalyzeRequest:
        """A request from the keywords `torchport.analyze` takes: `targets` names, aliases or .toml paths, or a
        comma list of them (default: every target convert writes for), loaded here; the fields above."""
        src = Path(path)
        if not src.exists():
            raise UsageError(f"input not found: {src}")
        options["exclude"] = tuple(options.get("exclude") or ())
        if options.get("output") is not None:
            options["output"] = Path(options["output"])
        return cls(src, tuple(load_target(n) for n in parse_targets(targets)), **options)


def analyze(request: AnalyzeRequest) -> AnalysisResult:
    """Assess the request's file or folder for its targets."""
    src, torch_version, output, jobs = Path(request.input), request.torch_version, request.output, request.jobs
    exclude, write_reports, force, progress, python = (request.exclude, request.write_reports, request.force,
                                                       request.progress, request.python)
    if not src.exists():
        raise UsageError(f"input not found: {src}")
    names = [t.ref for t in request.targets]
    named = Path(os.path.abspath(src))  # `analyze .`: named after the folder, beside it
    out = Path(output) if output else (named.parent / f"{named.name if src.is_dir() else named.stem}_analysis")
    if write_reports:
        tree.check_layout(src, None, out, force)
    start = time.perf_counter()
    entries = list(tree.walk(src, tuple(exclude)))
    # C/C++/CUDA first (few files): the ops they export are what Python call sites are matched against
    def is_native(e: tree.Entry) -> bool:
        return e.kind == "file" and not e.excluded and e.rel.endswith(NATIVE_SUFFIXES)

    native_entries = [e for e in entries if is_native(e)]
    init_worker(tuple(names))
    native_scans = [guarded_scan(e) for e in native_entries]
    native = NativeScan()
    for s in native_scans:
        if s.native is not None:
            _merge(native, s.native)
    library = tuple((ns, tuple(sorted(ops))) for ns, ops in sorted(native.library_ops.items()) if ops)
    rest = [e for e in entries if not is_native(e)]
    init_args = (tuple(names), tuple(sorted(native.pybind_ops)), library, tree.own_packages(entries), False, True,
                 None, project_facts(entries) if src.is_dir() else Facts())
    scans = native_scans + parallel.run(rest, init_worker, init_args, guarded_scan, jobs or parallel.default_jobs(),
                                        _weight, progress)
    scans.sort(key=lambda s: s.path)
    result = AnalysisResult(str(src), names, torch_version, scans, native=native,
                            output=str(out) if write_reports else None, started=time.strftime("%Y-%m-%dT%H:%M:%S"))
    result.libraries = scan_libraries([u for s in scans for u in s.uses], names, python,
                                      frozenset(local_names([e.rel for e in entries if e.kind == "file"])))
    for name in names:
        target = load_target(name)
        result.readiness[name] = _readiness(result, target)
        ops = op_list(target, torch_version)
        result.data[name] = {"api": target.api_source,
                             "ops": (f"{ops.vendor_version or 'torch'} (torch {ops.torch_version})" if ops else None),
                             "note": ops.note if ops else "no operator data"}
    result.elapsed = time.perf_counter() - start
    return result  # the reports (result.output) are written by the caller: torchport.analyze, the cli


def _merge(into: NativeScan, part: NativeScan) -> None:
    into.findings += part.findings
    into.kernels += part.kernels
    into.pybind_ops |= part.pybind_ops
    for ns, ops in part.library_ops.items():
        into.library_ops.setdefault(ns, set()).update(ops)
    into.cuda_files += part.cuda_files
    into.native_files += part.native_files


def _readiness(result: AnalysisResult, target: Target) -> Readiness:
    r = Readiness(kernels=len(result.native.kernels), kernels_blocked=target.cuda_kernels != "port")
    for f in result.target_findings(target.name):
        if f.action in CHANGES:
            r.automatic += 1
        elif f.action == UNSUPPORTED:
            r.unsupported += 1
        elif f.action == ADVICE and f.category != "third-party":  # package imports: counted per package below
            r.review += 1
            r.advice_review += 1
    r.not_read = len({f.file for f in result.common if f.rule == codes.TP000.id and f.action == ERROR})
    if result.libraries is not None:
        r.library_paths = len({reach.name for reach in result.libraries.reaches.get(target.name, [])})
    sites = [f for f in result.common if f.rule == codes.TP907.id and f.file.endswith(".py")]
    if sites and all(OPTIONAL_IMPORT in f.reasons for f in sites):
        r.kernels_optional = True  # the project runs without its kernels: porting them is review, not a block
        r.review += r.kernels
    kb = packages()
    uses: dict[str, tuple[Package, list[Finding]]] = {}
    for f in result.common:
        if f.rule == codes.TP903.id:
            r.ptx += 1
            r.review += 1 if r.kernels_optional else 0  # PTX of an optional extension: review, as its kernels
        elif f.rule in (codes.TP904.id, codes.TP905.id, codes.TP906.id, codes.TP910.id):
            r.review += 1
            r.native_review += 1
        elif f.rule in (codes.TP908.id, codes.TP909.id):
            pkg = package_of(f, kb)
            if pkg is not None:
                uses.setdefault(pkg.name, (pkg, []))[1].append(f)
    for pkg, found in uses.values():
        if all(f.rule == codes.TP908.id and OPTIONAL_IMPORT in f.reasons for f in found):
            r.optional_packages += 1  # imported only under try/except ImportError, never declared: not a block
            r.review += 1
        elif pkg.advice(target.name)[1]:
            r.package_swaps += 1
        else:
            r.blocked_packages += 1
    return r


_DISTRIBUTION = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")  # the name a requirement line starts with


def package_of(finding: Finding, kb: Packages) -> Optional[Package]:
    """The kb package behind a TP908 (import) or TP909 (declared dependency) finding."""
    if finding.rule == codes.TP908.id:
        words = finding.old.split()
        return kb.by_import(words[1]) if len(words) > 1 else None
    m = _DISTRIBUTION.match(finding.old)
    return kb.by_distribution(m.group(1)) if m else None
