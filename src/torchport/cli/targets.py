"""`torchport targets`: the bundled targets.

The table is made once per change of the target files, their API lists or their loader (core/cache.py, with
those files' stamps in its key): a start-up that finds it cached imports neither the loader (torchport.backends)
nor its dataclasses.
"""
from __future__ import annotations

import json
import os
import sys

from ..core.cache import cached_data

BACKENDS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "backends")
KB_API = os.path.join(os.path.dirname(BACKENDS), "kb", "api")


def _sources() -> tuple:
    """The files the table is made from: the target files, their API lists and the loader."""
    def listed(folder: str, suffix: str) -> list:
        return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(suffix))
    return (*listed(BACKENDS, ".toml"), *listed(KB_API, ".json"), os.path.join(BACKENDS, "__init__.py"))


def _rows(_folder) -> list:
    from ..backends import TARGET_KINDS, load_target, target_names

    rows = []
    for name in target_names(kinds=TARGET_KINDS):
        t = load_target(name)
        rows.append({"name": t.name, "kind": t.kind, "aliases": list(t.aliases), "title": t.title,
                     "device": t.device or t.device_expr,
                     "namespace": t.namespace, "register": t.register, "backend": t.backend_expr or t.backend,
                     "visible_devices_env": t.visible_devices_env, "smi": t.smi, "api": t.api_source})
    return rows


def target_rows() -> list:
    """[{name, kind, aliases, title, device, namespace, register, backend, visible_devices_env, smi, api}] of every
    bundled target, by name."""
    from pathlib import Path

    rows = cached_data(Path(BACKENDS), _rows, also=tuple(Path(p) for p in _sources()))
    assert isinstance(rows, list)
    return rows


def run(args) -> int:
    rows = target_rows()
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for r in rows:
            extra = f"import {r['register']}" if r["register"] else "built into PyTorch"
            if r["kind"] == "port-only":
                extra = "port-ext only (C++ extensions)"
            backend = r["backend"] if "{" not in r["backend"] else "(run time)"   # an expression: --json has it
            print(f"{r['name']:12} {r['title']:36} {r['namespace']:18} backend {backend[:12]:12} {extra}")
    return 0


def add(sub) -> None:
    t = sub.add_parser("targets", help="list the bundled targets",
                       description="List the bundled targets: name, title, device module, "
                                   "distributed backend and what registers the device with PyTorch.")
    t.add_argument("--json", action="store_true", help="print the targets as JSON")
    t.set_defaults(func=run)
