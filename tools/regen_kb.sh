#!/usr/bin/env bash
# Regenerate every knowledge-base file in src/torchport/kb/ from its source, nothing typed by hand
# (kb/packages.toml and kb/cuda_names.toml are curated with a source per entry; see their headers).
#
# Needs: .venv with torch==2.13.0 (the torch namespaces and aten ops), a python3 with PyYAML
# (vendor op lists), PyPI (torch_npu wheels, downloaded into $WHEELS) and bare git copies of
#   MUSA_GIT  github:MooreThreads/torch_musa     MLU_GIT  github:Cambricon/torch_mlu
#   XPU_GIT   github:intel/torch-xpu-ops     NPU_GIT  github:Ascend/pytorch
# and, for explain's raise sites, github:Ascend/op-plugin, github:vllm-project/vllm-ascend, github:Ascend/MindSpeed and
# github:intel/intel-extension-for-pytorch in $MIRROR/<owner>+<name>/repo
# (e.g. `git clone --bare`; in the torchport workplace, the search tool's fetch puts them in /work/.mirror).
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=${WHEELS:-.kb-cache/wheels}
MIRROR=${MIRROR:-/work/.mirror}
MUSA_GIT=${MUSA_GIT:-$MIRROR/MooreThreads+torch_musa/repo}
NPU_GIT=${NPU_GIT:-$MIRROR/Ascend+pytorch/repo}
MLU_GIT=${MLU_GIT:-$MIRROR/Cambricon+torch_mlu/repo}
XPU_GIT=${XPU_GIT:-$MIRROR/intel+torch-xpu-ops/repo}
NPU_VERSION=2.14.0
NPU_URL="https://files.pythonhosted.org/packages/48/cd/e0aa75f418ff943f228f096f341a0b3353258bac80880d08ea58c68efc16/torch_npu-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl"
NPU_SHA=7736f7d82cf9f16c7dfc4537f7e7c638153da760273a193455e70857f912189e
mkdir -p "$WHEELS"

# Python APIs of the device namespaces
.venv/bin/python tools/extract_api.py torch
[ -f "$WHEELS/$(basename "$NPU_URL")" ] || pip download "torch-npu==$NPU_VERSION" --no-deps --only-binary=:all: \
    --python-version 3.11 --platform manylinux_2_28_x86_64 -d "$WHEELS"
echo "$NPU_SHA  $WHEELS/$(basename "$NPU_URL")" | sha256sum -c -
python3 tools/extract_api.py wheel npu "$WHEELS/$(basename "$NPU_URL")" torch_npu/npu --referenced \
    --namespace torch.npu --version "torch_npu $NPU_VERSION (torch $NPU_VERSION)" --source "$NPU_URL sha256=$NPU_SHA"
python3 tools/extract_api.py git mlu "$MLU_GIT" torch_mlu/mlu --rev 9e95f972d3bfda0a855f9500aec852664ceecb6a \
    --namespace torch.mlu --version "torch_mlu 1.25.0 (torch 2.4.1), branch r2.4_develop" --source "github:Cambricon/torch_mlu"
python3 tools/extract_api.py git musa "$MUSA_GIT" torch_musa --rev v2.7.1 --runtime \
    --namespace torch.musa --version "torch_musa 2.7.1 (torch 2.7.1)" --source "github:MooreThreads/torch_musa"

# Operator lists (aten first: xpu reads it)
python3 tools/extract_ops.py aten
python3 tools/extract_ops.py npu --wheels "$WHEELS"
python3 tools/extract_ops.py musa --git "$MUSA_GIT"
python3 tools/extract_ops.py mlu --git "$MLU_GIT"
python3 tools/extract_ops.py xpu --git "$XPU_GIT"
python3 tools/extract_port_maps.py hip
python3 tools/extract_port_maps.py musa --git "$MUSA_GIT" --rev v2.7.1
# Autocast lists of the simulated devices: the vendor's registration file, and for mlu/musa the autocast_mode.h
# of the torch each builds against (its AT_FORALL_* lists), read from that torch's wheel (any platform: the
# header is the same; the macOS one is the smallest download)
AMP=$(mktemp -d)
git --git-dir="$NPU_GIT" show master:torch_npu/csrc/aten/AutoCastOps.cpp > "$AMP/npu.cpp"
git --git-dir="$MLU_GIT" show r2.4_develop:torch_mlu/csrc/aten/autocast_mode.cpp > "$AMP/mlu.cpp"
git --git-dir="$MUSA_GIT" show v2.7.1:torch_musa/csrc/amp/autocast_mode.cpp > "$AMP/musa.cpp"
for v in 2.4.1 2.7.1; do
    [ -f "$WHEELS/torch-$v-cp311-none-macosx_11_0_arm64.whl" ] || pip download "torch==$v" --no-deps --only-binary=:all: \
        --python-version 3.11 --platform macosx_11_0_arm64 -d "$WHEELS"
    unzip -p "$WHEELS/torch-$v-cp311-none-macosx_11_0_arm64.whl" torch/include/ATen/autocast_mode.h > "$AMP/autocast_mode-$v.h"
done
from_wheel() { echo "the torch $1 wheel on PyPI ($(basename "$WHEELS"/torch-"$1"-*.whl) sha256=$(sha256sum "$WHEELS"/torch-"$1"-*.whl | cut -c1-64)), torch/include/ATen/autocast_mode.h, the copy of aten/src/ATen/autocast_mode.h it installs"; }
python3 tools/extract_autocast.py npu "$AMP/npu.cpp" --repo Ascend/pytorch --ref master \
    --commit "$(git --git-dir="$NPU_GIT" rev-parse master)" --path torch_npu/csrc/aten/AutoCastOps.cpp
python3 tools/extract_autocast.py mlu "$AMP/mlu.cpp" --repo Cambricon/torch_mlu --ref r2.4_develop \
    --commit "$(git --git-dir="$MLU_GIT" rev-parse r2.4_develop)" --path torch_mlu/csrc/aten/autocast_mode.cpp \
    --torch-header "$AMP/autocast_mode-2.4.1.h" --torch-version 2.4.1 --torch-header-from "$(from_wheel 2.4.1)" \
    --torch-version-source 'Cambricon/torch_mlu@r2.4_develop scripts/release/independent_build.sh:8 PYTORCH_VERSION="2.4.1"'
python3 tools/extract_autocast.py musa "$AMP/musa.cpp" --repo MooreThreads/torch_musa --ref v2.7.1 \
    --commit "$(git --git-dir="$MUSA_GIT" rev-parse 'v2.7.1^{commit}')" --path torch_musa/csrc/amp/autocast_mode.cpp \
    --torch-header "$AMP/autocast_mode-2.7.1.h" --torch-version 2.7.1 --torch-header-from "$(from_wheel 2.7.1)" \
    --torch-version-source 'MooreThreads/torch_musa@v2.7.1 build.sh:30 PYTORCH_TAG=v2.7.1'
rm -r "$AMP"
# kb/acl_codes.json (torch_npu NPUErrorCodes.h, NPUException.h) and kb/cann_codes.json (CANN's error registries and the driver's DCMI codes:
# bare copies of github:hicann/runtime, ge, opbase and driver in $MIRROR as hicann+<name>/repo)
python3 tools/extract_error_codes.py --npu-git "$NPU_GIT" --cann-mirror "$MIRROR"

# Where the vendors' plug-ins and adapters raise their messages (explain)
python3 tools/extract_checks.py --mirror "$MIRROR"
git status --short src/torchport/kb
