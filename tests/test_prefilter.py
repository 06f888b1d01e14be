"""What convert skips, and that skipping loses nothing: files without any checker's needs are not parsed,
a checker runs only on files holding its needs, and names bound to CUDA-only packages are followed on
every line (not only on lines that happen to hold a trigger word)."""
import ast
import re

import pytest

from torchport.backends import available_targets
from torchport.converter.checkers import Phase, checker
from torchport.converter.python import PythonConverter, lower_text
from torchport.converter.rules import builtin_checkers
from torchport.converter.run import Converter
from torchport.core import codes
from torchport.core.words import trie_pattern

# Plain PyTorch without CUDA: tensors, type names, distributed questions, other devices' counts.
PLAIN = '''"""A model."""
import torch
import torch.distributed as dist
from safetensors.torch import load_file
from torch import Tensor


class Net(torch.nn.Module):
    def forward(self, x: Tensor) -> torch.FloatTensor:
        if dist.is_available() and dist.is_initialized():
            x = x * dist.get_world_size()
        n = torch.xpu.device_count() if hasattr(torch, "xpu") else 0
        return torch.tensor([n]) + x.type("torch.FloatTensor")
'''


@pytest.mark.parametrize("target", available_targets())
def test_plain_pytorch_is_not_parsed(target):
    python = Converter(target).python
    assert not python.wants(lower_text(PLAIN))
    assert python.convert("m.py", PLAIN + "def broken(:\n") == (PLAIN + "def broken(:\n", [], [])  # never parsed


def test_a_cuda_tensor_type_name_is_still_found():
    src = 'import torch\nx = y.type("torch.cuda.FloatTensor")\n'
    new, _kept, findings = Converter("npu").python.convert("m.py", src)
    assert '"torch.npu.FloatTensor"' in new and codes.TP118.id in {f.rule for f in findings}


def test_a_checker_runs_only_on_files_holding_its_needs():
    seen = []

    @checker(codes.TP201, nodes=(ast.Call,), triggers=("cuda",), needs=("zzz_word",))
    def probe(node, ctx):
        seen.append(ctx.path)

    conv = Converter("npu")
    python = PythonConverter(conv.api, [*conv.python.rules, probe.checker], conv.import_words)
    python.convert("with.py", "import torch\nx = torch.cuda.device_count()  # zzz_word\n")
    python.convert("without.py", "import torch\nx = torch.cuda.device_count()\n")
    assert seen == ["with.py"]


def test_needs_default_to_triggers_and_feed_the_prefilter():
    for c in builtin_checkers():
        # the others look at lines without the word their file needs: `props.major` in a file that calls
        # get_device_properties
        assert c.needs == c.triggers or c.name in ("cuda-requirement", "guard-keeps-cuda-branch",
                                                   "load-without-map-location",
                                                   "device-properties-fields", "own-target-branches",
                                                   "device-count-as-processes", "patched-names"), c.name
    python = Converter("npu").python
    every_need = {w for r in python.rules for w in r.needs}
    assert set(python.words) <= every_need


def test_names_of_cuda_only_packages_are_followed_on_every_line():
    src = ("def load(m):\n    import bitsandbytes as bnb\n\n    layer = bnb.nn.Linear8bitLt(1, 2)\n"
           "    return bnb.functional.dequantize_4bit(layer)\n")
    _new, _kept, findings = Converter("npu").python.convert("q.py", src)
    lines = {f.line for f in findings if f.rule == codes.TP114.id}
    assert {4, 5} <= lines


IMPORT_LINES = ["import apex", "  import apex.amp as amp", "from apex import amp", "\tfrom  apex.parallel import x",
                "import apex_tools", "from apexx import y", "# import apex", "x = 'import apex'", "from . import apex",
                "importlib.import_module('apex')", "import os, apex", "from pynvml import *", "   import  pynvml"]


@pytest.mark.parametrize("line", IMPORT_LINES)
def test_cuda_package_imports_are_found_as_the_line_pattern_finds_them(line):
    python = Converter("npu").python
    anchored = re.compile(r"^[ \t]*(?:from|import)[ \t]+(?:" + trie_pattern(python.import_words) + r")\b",
                          re.MULTILINE)
    text = f"x = 1\n{line}\ny = 2\n"
    assert python.imports_cuda_package(text) == (anchored.search(text) is not None)


def test_reference_checkers_run_where_only_a_cuda_package_is_imported():
    python = Converter("npu").python
    table = python.dispatch_for(lower_text("import apex\nx = 1\n"))
    assert table.get(Phase.REFERENCE)
    assert not python.dispatch_for(lower_text("import os\nx = 1\n")).get(Phase.REFERENCE)
