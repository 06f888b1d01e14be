#!/usr/bin/env bash
# Regenerate every knowledge-base file in src/torchport/kb/ from its source, nothing typed by hand
# (kb/packages.toml and kb/cuda_names.toml are curated with a source per entry; see their headers).
#
# Needs: .venv with torch==2.13.0 (the torch namespaces and aten ops), a python3 with PyYAML
# (vendor op lists), PyPI (torch_npu wheels, downloaded into $WHEELS) and bare git copies of
#   MUSA_GIT  github:MooreThreads/torch_musa     MLU_GIT  github:Cambricon/torch_mlu
#   XPU_GIT   github:intel/torch-xpu-ops
# (e.g. `git clone --bare`; in the torchport workplace, the search tool's fetch puts them in /work/.mirror).
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=${WHEELS:-.kb-cache/wheels}
MIRROR=${MIRROR:-/work/.mirror}
MUSA_GIT=${MUSA_GIT:-$MIRROR/MooreThreads+torch_musa/repo}
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
git status --short src/torchport/kb
