"""The rule registry: ids, documentation, examples that hold, generated docs in sync."""
import re
from pathlib import Path

import pytest

from torchport.converter.registry import builtin_rules
from torchport.converter.rules_doc import rules_markdown
from torchport.converter.run import Converter

RULES = builtin_rules()
HEADER = "import os\nimport torch\nimport torch.distributed as dist\nfrom torch.utils.cpp_extension import load\n"


def test_ids_are_unique_and_documented():
    assert len(RULES) >= 40
    for rid, r in RULES.items():
        assert re.fullmatch(r"TP\d{3}", rid)
        assert r.summary and r.name and r.category
        assert r.doc.strip(), rid


@pytest.mark.parametrize("rid", sorted(r.id for r in RULES.values() if r.example))
def test_documented_example_holds(rid):
    before, after = RULES[rid].example
    conv = Converter("npu")
    if "shell" in RULES[rid].nodes:
        new, _, _ = conv.convert_text("x.sh", before.encode(), "shell")
        assert (new or before.encode()).decode() == after
        return
    source = before if before.startswith(("import", "from")) else HEADER + before
    new, _, _ = conv.convert_text("x.py", source.encode(), "python")
    out = (new or source.encode()).decode()
    out_lines = [line for line in out.splitlines(True) if not line.startswith("import torch_npu")]
    expected = after if before.startswith(("import", "from")) else HEADER + after
    expected_lines = [line for line in expected.splitlines(True) if not line.startswith("import torch_npu")]
    assert "".join(out_lines) == "".join(expected_lines)


def test_docs_are_generated_from_the_registry():
    doc = Path(__file__).resolve().parents[1] / "docs" / "rules.md"
    assert doc.read_text(encoding="utf-8") == rules_markdown(), "run: torchport rules --markdown > docs/rules.md"


def test_cpp_extension_build_is_reported_only_with_cuda_sources():
    """yolox's jit_ops passes nvcc flags to a C++-only build: not a CUDA extension (was a false report)."""
    source = ('from torch.utils.cpp_extension import load\n'
              'a = load(name="a", sources=self_sources(), extra_cuda_cflags=["-O3"])\n'
              'b = load(name="b", sources=["k.cpp", "k.cu"])\n'
              'c = load(name="c", sources=["k.cpp"], with_cuda=False, extra_cuda_cflags=["-O3"])\n'
              'd = load(name="d", sources=src, with_cuda=True)\n')
    _, findings, _ = Converter("npu").convert_text("x.py", source.encode(), "python")
    assert [f.line for f in findings if f.rule == "TP702"] == [3, 5]
