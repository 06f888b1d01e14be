"""Regenerate the Ascend error-code tables `torchport explain` reads, from bare git copies of the vendor's sources:

- src/torchport/kb/acl_codes.json: the Ascend runtime's (ACL) return codes and what each means, as torch_npu
  prints them after "error code is N" (its NPUErrorCodes.h map; only each code's first sentence, the meaning), and
  torch_npu's own ERRmmccc codes (the SubModule and ErrCode enums of NPUException.h, and the words it prints for
  them in NPUException.cpp).
- src/torchport/kb/cann_codes.json: CANN's error codes (EE1001, EI0006, EZ9999, E10001...) as its error managers
  register them: each code's class, title and message template (the "error_info_list" JSON of the runtime's
  error_code.json, of GE's error registry and of the operator base's two registries).  The vendor's suggested
  causes and solutions are prose and are not copied.  Also the NPU driver's DCMI return codes (-8001...), which
  npu-smi and the driver's management library print as "ret is -8020" (hicann/driver dcmi_interface_api.h).

    python tools/extract_error_codes.py [--npu-git /work/.mirror/Ascend+pytorch/repo] [--cann-mirror /work/.mirror]
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
from pathlib import Path

KB = Path(__file__).resolve().parents[1] / "src" / "torchport" / "kb"
ACL_FILE = "torch_npu/csrc/core/npu/NPUErrorCodes.h"
PTA_HEADER = "torch_npu/csrc/core/npu/NPUException.h"
PTA_SOURCE = "torch_npu/csrc/core/npu/NPUException.cpp"
ENTRY = re.compile(r'\{(\d{6}),\s*"((?:[^"\\]|\\.)*)"', re.S)
ENUM = re.compile(r"enum class (SubModule|ErrCode)\s*\{([^}]*)\}", re.S)
WORDS = re.compile(r'\{\s*(SubModule|ErrCode)::(\w+),\s*"([^"]*)"\s*\}')
# CANN's registries, in the order a code is taken from (the first that has it)
CANN_TABLES = (
    ("hicann/runtime", "src/dfx/error_manager/error_code.json"),
    ("hicann/ge", "base/common/error_registry/error_registry.cc"),
    ("hicann/opbase", "src/nnopbase/composite_op/log/op_error_manager.cpp"),
    ("hicann/opbase", "src/op_common/log/log.cpp"),
)
DCMI_FILE = ("hicann/driver", "src/custom/include/dcmi_interface_api.h")
DCMI = re.compile(r"#define (DCMI_ERR_CODE_\w+)\s+\(DCMI_ERROR_CODE_BASE - (\d+)\)")
DCMI_BASE = re.compile(r"#define DCMI_ERROR_CODE_BASE \((-?\d+)\)")
RAW_JSON = re.compile(r'R"\((\s*\{\s*"error_info_list".*?)\)"', re.S)


def _git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True).stdout


def acl_codes(git: str, rev: str) -> dict:
    commit = _git(git, "rev-parse", rev).strip()
    codes = {}
    for code, message in ENTRY.findall(_git(git, "show", f"{commit}:{ACL_FILE}")):
        first = message.replace("\\\n", "").split("\\n", 1)[0].strip()
        codes[code] = " ".join(first.split())
    enums = {name: {} for name in ("SubModule", "ErrCode")}
    for name, body in ENUM.findall(_git(git, "show", f"{commit}:{PTA_HEADER}")):
        for item in body.split(","):
            if "=" in item:
                key, value = (s.strip() for s in item.split("="))
                enums[name][key] = int(value)
    words = {(kind, key): text for kind, key, text in WORDS.findall(_git(git, "show", f"{commit}:{PTA_SOURCE}"))}
    pta = {"submodules": {f"{v:02d}": {"name": k, "words": words.get(("SubModule", k), k)}
                          for k, v in enums["SubModule"].items()},
           "codes": {f"{v:03d}": {"name": k, "words": words.get(("ErrCode", k), k)} for k, v in enums["ErrCode"].items()}}
    return {"source": f"Ascend/pytorch@{commit[:8]} {ACL_FILE}", "extracted": datetime.date.today().isoformat(),
            "method": "the first sentence (the meaning) of each code's text in torch_npu's AclErrorCode map",
            "codes": dict(sorted(codes.items())),
            "pta": {"source": f"Ascend/pytorch@{commit[:8]} {PTA_HEADER} (SubModule, ErrCode) and {PTA_SOURCE} "
                              "(submoduleMap, errCodeMap): torch_npu prints ERR<submodule:2><code:3> <words> <words>",
                    **pta}}


def _entries(text: str, path: str) -> list:
    if path.endswith(".json"):
        return json.loads(text)["error_info_list"]
    out = []
    for block in RAW_JSON.findall(text):
        out += json.loads(block)["error_info_list"]
    return out


def cann_codes(mirror: str) -> dict:
    codes, sources = {}, []
    for index, (repo, path) in enumerate(CANN_TABLES):
        git = f"{mirror}/{repo.replace('/', '+')}/repo"
        commit = _git(git, "rev-parse", "HEAD").strip()
        entries = _entries(_git(git, "show", f"{commit}:{path}"), path)
        sources.append(f"{repo}@{commit[:9]} {path} ({len(entries)} entries)")
        for e in entries:
            code = e["ErrCode"].strip()
            if code not in codes:
                codes[code] = {"class": (e.get("errClass") or "").strip(), "title": (e.get("errTitle") or "").strip(),
                               "message": " ".join(e.get("ErrMessage", "").split()), "source": index}
    repo, path = DCMI_FILE
    git = f"{mirror}/{repo.replace('/', '+')}/repo"
    commit = _git(git, "rev-parse", "HEAD").strip()
    header = _git(git, "show", f"{commit}:{path}")
    base = int(DCMI_BASE.search(header).group(1))
    dcmi = {"source": f"{repo}@{commit[:9]} {path}",
            "codes": {str(base - int(offset)): name[len("DCMI_ERR_CODE_"):] for name, offset in DCMI.findall(header)}}
    return {"sources": sources, "extracted": datetime.date.today().isoformat(), "dcmi": dcmi,
            "method": "each registry's error_info_list: the code, its class, title and message template, and the index "
                      "of its registry in sources (the vendor's causes and solutions are not copied)",
            "codes": dict(sorted(codes.items()))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npu-git", "--git", default="/work/.mirror/Ascend+pytorch/repo")
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--cann-mirror", default="/work/.mirror",
                    help="a folder holding bare copies named hicann+runtime/repo, hicann+ge/repo, hicann+opbase/repo, "
                         "hicann+driver/repo")
    args = ap.parse_args()
    for name, data in (("acl_codes.json", acl_codes(args.npu_git, args.rev)), ("cann_codes.json", cann_codes(args.cann_mirror))):
        (KB / name).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{len(data['codes'])} codes -> {KB / name}")


if __name__ == "__main__":
    main()
