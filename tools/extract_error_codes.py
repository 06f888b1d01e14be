"""Regenerate src/torchport/kb/acl_codes.json: the Ascend runtime's (ACL) return codes and what each means, as
torch_npu prints them after "error code is N" (its NPUErrorCodes.h map, read with `git show` from a bare copy of
Ascend/pytorch; only each code's first sentence, the meaning, is kept).

    python tools/extract_error_codes.py [--git /work/.mirror/Ascend+pytorch/repo] [--rev HEAD]
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "torchport" / "kb" / "acl_codes.json"
FILE = "torch_npu/csrc/core/npu/NPUErrorCodes.h"
ENTRY = re.compile(r'\{(\d{6}),\s*"((?:[^"\\]|\\.)*)"', re.S)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--git", default="/work/.mirror/Ascend+pytorch/repo")
    ap.add_argument("--rev", default="HEAD")
    args = ap.parse_args()
    commit = subprocess.run(["git", "-C", args.git, "rev-parse", args.rev], capture_output=True, text=True,
                            check=True).stdout.strip()
    text = subprocess.run(["git", "-C", args.git, "show", f"{commit}:{FILE}"], capture_output=True, text=True,
                          check=True).stdout
    codes = {}
    for code, message in ENTRY.findall(text):
        first = message.replace("\\\n", "").split("\\n", 1)[0].strip()
        codes[code] = " ".join(first.split())
    data = {"source": f"Ascend/pytorch@{commit[:8]} {FILE}", "extracted": datetime.date.today().isoformat(),
            "method": "the first sentence (the meaning) of each code's text in torch_npu's AclErrorCode map",
            "codes": dict(sorted(codes.items()))}
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(codes)} codes -> {OUT}")


if __name__ == "__main__":
    main()
