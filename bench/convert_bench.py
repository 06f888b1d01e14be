"""Speed of `torchport convert`, printed as ratios from one run.

1. transformers 4.46.3 sdist: wall time of the `torchport convert` process (default
   jobs) against plain `ast.parse` of the same .py files in one process.  Target: <= 0.5.
2. the same tree through `torchport analyze` for all seven targets.  Target: no slower than convert.
   And `torchport analyze --to TARGET -j 1` (one process): its CPU time (user+sys) against the same
   ast.parse, with kb/advice.toml's performance advice included (analyze/advice.py parses only the files
   whose text holds a rule's words, and walks only their lines).  Target: <= 2.0.
3. yolox 0.3.0 (~8k lines): end-to-end wall time including process start.  Target: <= 0.25 s.
4. with --regex-converter PATH (Cambricon/torch_mlu's public tools/torch_gpu2mlu/torch_gpu2mlu.py,
   measured against, never vendored): that script as a whole process on a copy of the same
   yolox tree, against `torchport convert --to mlu`, CPU (user+sys of the child, from
   getrusage(RUSAGE_CHILDREN) deltas) and wall.  Target: torchport / regex <= 1.0.
   The script's options: `--input/-i DIR` (required; it writes DIR_mlu/ next to DIR, with a
   report.md) and `--strict/-s` (also rewrites CUDA/gpu/GPU).  It imports torch and torch_mlu
   and uses neither: PYTHONPATH points at bench/regex_stubs/ so both resolve to empty stubs.
   Then torchport's floor on that tree, what any convert spends before its rules run: the interpreter, the
   imports of `torchport convert`, and ast.parse of the files holding a trigger word (CPU of whole processes).

5. re-runs (converter/reuse.py), on a copy of transformers 4.46.3 with an empty cache folder of its own: the
   first run; unchanged re-runs into its own output (--force, as a user re-runs) and into new folders (every
   file created again); and a re-run after one converted file is edited, which must convert that one file.
   Target: re-run / first run <= 0.25.  Figures 1-4 are first runs (--no-cache).

Each figure is the median of --repeat runs.  Needs the network once (PyPI sdists, cached).
"""
from __future__ import annotations

import argparse
import ast
import compileall
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pypi_cache import python_files, sdist

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from torchport.backends import available_targets

TORCHPORT = [sys.executable, "-m", "torchport"]


def parse_time(files) -> float:
    sources = [p.read_bytes() for p in files]
    start = time.perf_counter()
    for src in sources:
        try:
            ast.parse(src)
        except SyntaxError:
            pass
    return time.perf_counter() - start


CPU: dict = {}  # command -> [(user, sys)] of its runs (children's rusage)


def command_time(command: str, src: Path, target: str, repeat: int, extra=(), key: str = "") -> list:
    times = []
    for _ in range(repeat):
        out = Path(tempfile.mkdtemp(prefix="tp-bench-")) / "out"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([*TORCHPORT, command, str(src), "--to", target, "-o", str(out), *extra],
                       check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        CPU.setdefault(key or command, []).append((after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime))
        shutil.rmtree(out.parent)
    return times


def cpu_text(command: str) -> str:
    runs = CPU.get(command, [])
    return (f"user {statistics.median(u for u, _ in runs):.2f} s, sys {statistics.median(s for _, s in runs):.2f} s "
            "(all processes)") if runs else ""


def child_run(cmd: list, env=None) -> tuple:
    """(cpu, wall) of one whole child process: user+sys from RUSAGE_CHILDREN deltas."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def floor_figures(tree: Path, repeat: int) -> dict:
    """What any torchport convert of `tree` spends before its rules run, CPU of whole processes (medians): a bare
    interpreter; one that imports what `torchport convert` imports (cli, the convert command, the report
    writers); and ast.parse of the files convert parses (those holding a trigger word), in one process."""
    from torchport.converter.run import Converter

    wants = Converter("mlu").python.wants
    parsed = [p for p in python_files(tree) if wants(p.read_text(encoding="utf-8", errors="replace").lower())]
    imports = "import torchport.cli, torchport.cli.convert, torchport.commands.convert, torchport.report"
    return {"bare": statistics.median(child_run([sys.executable, "-S", "-c", "pass"])[0] for _ in range(repeat)),
            "site": statistics.median(child_run([sys.executable, "-c", "pass"])[0] for _ in range(repeat)),
            "imports": statistics.median(child_run([sys.executable, "-c", imports])[0] for _ in range(repeat)),
            "parsed": len(parsed), "parse": statistics.median(parse_time(parsed) for _ in range(repeat))}


def regex_versus(tree: Path, script: Path, repeat: int) -> dict:
    """Median (cpu, wall) of the regex converter and of `torchport convert --to mlu` on tree."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent / "regex_stubs"))
    runs: dict = {"regex": [], "torchport": []}
    for _ in range(repeat):
        work = Path(tempfile.mkdtemp(prefix="tp-bench-"))
        copy = work / "src"
        shutil.copytree(tree, copy)
        runs["regex"].append(child_run([sys.executable, str(script), "-i", str(copy)], env))
        runs["torchport"].append(child_run([*TORCHPORT, "convert", str(tree), "--to", "mlu",
                                            "-o", str(work / "out"), "--no-cache"]))
        shutil.rmtree(work)
    return {k: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v))
            for k, v in runs.items()}


REUSED = re.compile(r"\((\d+) files? as in the last run")


def rerun_figures(tree: Path, target: str, repeat: int) -> dict:
    """Wall times of a first run; of unchanged re-runs into its own output (--force: the usual re-run) and into a
    new folder (medians); and of a re-run after editing one converted file, with the files that re-run converted."""
    work = Path(tempfile.mkdtemp(prefix="tp-rerun-"))
    env = dict(os.environ, TORCHPORT_CACHE=str(work / "cache"))
    env.pop("TORCHPORT_NO_RESULT_CACHE", None)
    env.pop("TORCHPORT_NO_CACHE", None)
    copy = work / "src"
    shutil.copytree(tree, copy)

    def once(out: str, *extra: str) -> tuple:
        start = time.perf_counter()
        p = subprocess.run([*TORCHPORT, "convert", str(copy), "--to", target, "-o", str(work / out), *extra],
                           check=True, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - start
        m = REUSED.search(p.stdout)
        return wall, int(m.group(1)) if m else 0

    def fresh(n: int) -> tuple:
        result = once(f"new{n}")
        shutil.rmtree(work / f"new{n}")
        shutil.rmtree(work / f"new{n}_report")
        return result

    first, _ = once("out")
    again = [once("out", "--force") for _ in range(repeat)]
    elsewhere = [fresh(n) for n in range(repeat)]
    edited = next(p for p in sorted(copy.rglob("*.py")) if "torch.cuda" in p.read_text(errors="replace"))
    with open(edited, "a") as f:
        f.write("\n# edited\n")
    one, reused = once("out", "--force")
    shutil.rmtree(work)
    # a file that fails is converted by every run (its result is not kept): counted in neither figure
    return {"first": first, "again": statistics.median(w for w, _ in again), "reused": again[0][1],
            "elsewhere": statistics.median(w for w, _ in elsewhere), "edited": one,
            "converted_after_edit": again[0][1] - reused}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--target", default="npu")
    ap.add_argument("--regex-converter", type=Path, metavar="PATH",
                    help="Cambricon's tools/torch_gpu2mlu/torch_gpu2mlu.py, to compare on yolox")
    args = ap.parse_args()
    if args.regex_converter and not args.regex_converter.is_file():
        ap.error(f"no such file: {args.regex_converter}")
    # Byte-compile torchport first, as `pip install` does: an editable checkout under
    # PYTHONDONTWRITEBYTECODE would otherwise recompile every module on every start.
    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "src" / "torchport"), quiet=1)
    tf = sdist("transformers", "4.46.3")
    files = python_files(tf)
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    parse = statistics.median(parse_time(files) for _ in range(args.repeat))
    conv = statistics.median(command_time("convert", tf, args.target, args.repeat, ("--no-cache",)))
    conv_cpu = cpu_text("convert")
    every = ",".join(available_targets())
    analysis = statistics.median(command_time("analyze", tf, every, args.repeat))
    command_time("analyze", tf, args.target, args.repeat, ("-j", "1"), key="analyze-1")
    one = statistics.median(u + s for u, s in CPU["analyze-1"])
    yolox = sdist("yolox", "0.3.0")
    ylines = sum(p.read_bytes().count(b"\n") for p in python_files(yolox))
    y = statistics.median(command_time("convert", yolox, args.target, args.repeat * 2, ("--no-cache",)))
    print(f"cpus: {len(os.sched_getaffinity(0))}, python {sys.version.split()[0]}, target {args.target}, "
          f"median of {args.repeat}")
    print(f"transformers 4.46.3: {len(files)} files, {lines} lines")
    print(f"  torchport convert (process, default jobs): {conv:.2f} s   ({conv_cpu})")
    print(f"  ast.parse, one process:                    {parse:.2f} s")
    print(f"  ratio convert / parse:                     {conv / parse:.2f}   (target <= 0.5)")
    print(f"  torchport analyze, all 7 targets:          {analysis:.2f} s")
    print(f"  ratio analyze / convert:                   {analysis / conv:.2f}   (target <= 1.0)")
    print(f"  torchport analyze --to {args.target} -j 1, CPU:      {one:.2f} s   (user+sys, advice included)")
    print(f"  ratio analyze CPU / parse:                 {one / parse:.2f}   (target <= 2.0)")
    r = rerun_figures(tf, args.target, args.repeat)
    print("transformers 4.46.3, re-runs (converter/reuse.py, a cache folder of its own):")
    print(f"  first run:                                 {r['first']:.2f} s")
    print(f"  unchanged re-run, --force into its output: {r['again']:.2f} s   ({r['reused']} files from the last run)")
    print(f"  ratio re-run / first run:                  {r['again'] / r['first']:.2f}   (target <= 0.25)")
    print(f"  unchanged re-run into a new folder:        {r['elsewhere']:.2f} s   (ratio {r['elsewhere'] / r['first']:.2f}: "
          "every file created again)")
    print(f"  re-run after editing one file:             {r['edited']:.2f} s   ({r['converted_after_edit']} "
          "file(s) converted; target 1)")
    print(f"yolox 0.3.0: {len(python_files(yolox))} files, {ylines} lines")
    print(f"  torchport convert end to end:              {y:.3f} s   (target <= 0.25 s)")
    if args.regex_converter:
        both = regex_versus(yolox, args.regex_converter, args.repeat * 2)
        (tc, tw), (rc, rw) = both["torchport"], both["regex"]
        print("  torchport convert --to mlu vs the regex converter (whole processes):")
        print(f"    torchport: cpu {tc:.3f} s, wall {tw:.3f} s")
        print(f"    regex:     cpu {rc:.3f} s, wall {rw:.3f} s")
        print(f"    ratio torchport / regex: cpu {tc / rc:.2f}, wall {tw / rw:.2f}   (target <= 1.0)")
        f = floor_figures(yolox, args.repeat * 2)
        print("  before any rule runs (cpu, whole processes; torchport's floor on this tree):")
        print(f"    interpreter: {f['bare']:.3f} s without site, {f['site']:.3f} s with it; "
              f"importing what convert imports: {f['imports']:.3f} s")
        print(f"    ast.parse of the {f['parsed']} files holding a trigger word: {f['parse']:.3f} s")
        print(f"    floor / regex cpu: {(f['imports'] + f['parse']) / rc:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
