"""`torchport targets`: the bundled targets."""
from __future__ import annotations

import json
import sys


def run(args) -> int:
    from ..backends import TARGET_KINDS, load_target, target_names

    rows = []
    for name in target_names(kinds=TARGET_KINDS):
        t = load_target(name)
        rows.append({"name": t.name, "kind": t.kind, "aliases": list(t.aliases), "title": t.title,
                     "device": t.device or t.device_expr,
                     "namespace": t.namespace, "register": t.register, "backend": t.backend_expr or t.backend,
                     "visible_devices_env": t.visible_devices_env, "smi": t.smi, "api": t.api_source})
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for r in rows:
            extra = f"import {r['register']}" if r["register"] else "built into PyTorch"
            if r["kind"] == "port-only":
                extra = "port-ext only (C++ extensions)"
            print(f"{r['name']:12} {r['title']:36} {r['namespace']:18} backend {r['backend'][:12]:12} {extra}")
    return 0


def add(sub) -> None:
    t = sub.add_parser("targets", help="list the bundled targets",
                       description="List the bundled targets: name, title, device module, "
                                   "distributed backend and what registers the device with PyTorch.")
    t.add_argument("--json", action="store_true", help="print the targets as JSON")
    t.set_defaults(func=run)
