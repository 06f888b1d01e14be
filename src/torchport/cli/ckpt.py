"""`torchport ckpt inspect|fix`: a checkpoint from a CUDA machine, looked at and made loadable on the target."""
from __future__ import annotations

import json
import sys

from ..core.names import printable
from ..core.words import counted
from .common import add_trust_options, output_path


def run_inspect(args) -> int:
    from ..ckpt import inspect

    result = inspect(args.checkpoint, allow=args.allow, trust=args.trust)
    if args.json:
        json.dump(result.to_dict(), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 1 if result.problems else 0
    where = ", ".join(f"{loc} {n}" for loc, n in sorted(result.locations.items())) or "none"
    dtypes = ", ".join(f"{d} {n}" for d, n in result.dtypes.most_common())
    print(f"{printable(result.path)}: {counted(result.tensors, 'tensor')}; storages saved on: {where}")
    if dtypes:
        print(f"  dtypes: {dtypes}")
    for part in result.parts:
        label = part.where or "(the checkpoint)"
        text = {"state-dict": f"state dict, {counted(part.tensors, 'tensor')}" + (f", every key starts with '{part.prefix}'"
                                                                      if part.prefix else ""),
                "optimizer": f"optimizer state: {part.detail}", "grad-scaler": f"torch.amp.GradScaler state: {part.detail}",
                "apex-amp": f"apex amp state: {part.detail}", "tensor": f"tensor {part.detail}",
                "value": part.detail}[part.kind]
        print(f"  {printable(label)}: {printable(text)}")
    if not result.problems:
        print(f"no problems found: it loads with {_load_call('path', [*args.allow, *args.trust])} on any machine")
        return 0
    print("problems:")
    for what, fix in result.problems:
        print(f"  - {printable(what)}")
        print(f"    fix: {printable(fix)}")
    strip = sorted({p.prefix for p in result.parts if p.prefix})
    if strip or any(not loc.startswith("cpu") for loc in result.locations):
        allow = "".join(f" --allow {a}" for a in args.allow) + "".join(f" --trust {a}" for a in args.trust)
        print(f"next: torchport ckpt fix {printable(args.checkpoint)} -o FIXED.pt"
              + "".join(f" --strip-prefix {p}" for p in strip) + allow)
    return 1


def run_fix(args) -> int:
    from ..ckpt import fix

    result = fix(args.checkpoint, args.output, strip=args.strip_prefix, allow=args.allow, trust=args.trust,
                 check_model=args.check_model,
                 force=args.force)
    moved = ", ".join(f"{loc} {n}" for loc, n in sorted(result.locations.items()) if not loc.startswith("cpu"))
    print(f"wrote {printable(result.output)}: every storage on the CPU" + (f" (saved on {moved})" if moved else ""))
    for prefix, n in sorted(result.stripped.items()):
        print(f"  stripped '{prefix}' from {counted(n, 'state dict')}")
    missing = [p for p in args.strip_prefix if p not in result.stripped]
    for prefix in missing:
        print(f"  no state dict had '{prefix}' on every key: nothing stripped for it")
    if result.checked:
        print(f"  loaded into {printable(result.checked)}'s model: every key fits")
    print(f"next: {_load_call(repr(printable(result.output)), [*args.allow, *args.trust])} loads it on any machine; "
          "move the model to the device after load_state_dict")
    return 1 if missing else 0


def _load_call(path: str, allow) -> str:
    """How the user's code loads the checkpoint: the globals --allow let in are still in it, and torch.load's
    weights-only loader refuses them unless they are allowed there too."""
    if not allow:
        return f"torch.load({path}, weights_only=True)"
    names = ", ".join(allow)
    return (f"torch.load({path}, weights_only=True) inside torch.serialization.safe_globals([{names}]) (the "
            f"{'object' if len(allow) == 1 else 'objects'} --allow let in {'is' if len(allow) == 1 else 'are'} "
            "still in it)")


def add(sub) -> None:
    ck = sub.add_parser("ckpt", help="look at a checkpoint from a CUDA machine, and make a copy that loads anywhere",
                        description="Checkpoints are read with torch.load(weights_only=True): no pickled code runs.")
    csub = ck.add_subparsers(dest="ckpt_command", metavar="CKPT_COMMAND", required=True)
    ins = csub.add_parser("inspect", help="devices of the storages, state dicts and their key prefixes, optimizer "
                                          "and scaler states, and what will fail on another machine",
                          description="List what a checkpoint holds and the problems it causes on the target; "
                                      "exit 1 when there are problems.")
    fx = csub.add_parser("fix", help="write a copy with every storage on the CPU and key prefixes stripped",
                         description="Write a copy of the checkpoint that loads with weights_only=True on any machine.")
    for p in (ins, fx):
        p.add_argument("checkpoint", help="the checkpoint file (torch.save output)")
        add_trust_options(p)
    ins.add_argument("--json", action="store_true", help="the findings as JSON")
    ins.set_defaults(func=run_inspect)
    fx.add_argument("-o", "--output", type=output_path, required=True, help="the new checkpoint (never the input)")
    fx.add_argument("--strip-prefix", action="append", default=[], metavar="PREFIX",
                    help="cut PREFIX (module., _orig_mod.) from the keys of state dicts whose keys all start with it; "
                         "repeatable, applied in order")
    fx.add_argument("--check-model", metavar="MODULE:FACTORY",
                    help="load the model state dict into FACTORY()'s model (imported from the current folder) "
                         "strictly before writing")
    fx.add_argument("--force", action="store_true", help="replace OUTPUT if it exists")
    fx.set_defaults(func=run_fix)
