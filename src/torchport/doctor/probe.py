"""What a doctor check reads and returns: the `Probe` (the machine as the checks see it: environment, installed
distributions, files and device nodes, programs on PATH, the current folder; tests fake any of it), a `Check` row
and its statuses.  Both checks.py and stack.py import it: stack.py, whose checks checks.run_checks runs,
imports nothing of checks.py.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"


@dataclass
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Probe:
    """The machine as the checks see it."""

    environ: dict = field(default_factory=lambda: dict(os.environ))
    python: tuple = tuple(sys.version_info[:3])
    platform: str = sys.platform
    which: Callable = shutil.which
    modules: dict = field(default_factory=lambda: sys.modules)
    governor_files: str = "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"
    cpu_count: int = os.cpu_count() or 1
    run_timeout: float = 15.0
    device_count: Optional[Callable] = None   # target -> int, only when the vendor stack is already imported
    cwd: str = field(default_factory=lambda: _cwd())

    def version(self, dist: str) -> Optional[str]:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    def requires(self, dist: str) -> list:
        try:
            return importlib.metadata.requires(dist) or []
        except importlib.metadata.PackageNotFoundError:
            return []

    def find(self, module: str) -> Optional[str]:
        """The file of an importable module (not imported), or None."""
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return None
        return spec.origin if spec is not None else None

    def read(self, path: str) -> Optional[str]:
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def glob(self, pattern: str) -> list:
        import glob

        return sorted(glob.glob(pattern))

    def run(self, argv: list) -> tuple:
        """(exit code, first line of output) of a program; (None, why) when it cannot run."""
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=self.run_timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, str(e)
        text = (p.stdout or p.stderr or "").strip().splitlines()
        return p.returncode, text[0] if text else ""

    def output(self, argv: list) -> Optional[str]:
        """All a program prints on stdout when it succeeds, else None."""
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=self.run_timeout, errors="replace")
        except (OSError, subprocess.TimeoutExpired):
            return None
        return p.stdout if p.returncode == 0 else None

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def access(self, path: str) -> bool:
        """Whether this user may read and write the file (a device node)."""
        return os.access(path, os.R_OK | os.W_OK)

    def group(self, path: str) -> Optional[str]:
        """The name of the group owning a file, or None."""
        try:
            import grp

            return grp.getgrgid(os.stat(path).st_gid).gr_name
        except (ImportError, OSError, KeyError):
            return None

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def dist_dir(self, dist: str) -> Optional[str]:
        """The folder an installed distribution's files are under (site-packages), or None."""
        try:
            return str(importlib.metadata.distribution(dist).locate_file(""))
        except importlib.metadata.PackageNotFoundError:
            return None


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:   # the folder was removed under us
        return ""
