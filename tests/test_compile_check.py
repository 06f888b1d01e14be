"""The check that converted Python still compiles looks only at the top-level statements a conversion changed
(converter/run.py: broken_spans over core.edits.changed_spans).  Random edits, benign and breaking, on varied
sources: it finds a broken file exactly when compiling the whole file does."""
import functools
import random
from pathlib import Path

import pytest

from torchport.converter.python import SourceFile
from torchport.converter.run import broken_spans, compile_error
from torchport.core import edits

FIXTURES = Path(__file__).resolve().parent / "fixtures"

TRICKY = '''"""Module docstring."""
from __future__ import annotations

import os, sys; import re
x = 1; y = (2 +
     3)


@decorator(
    arg=1)
@other
def f(a, b=x):
    """Doc."""
    if a:
        return a \\
            + b
    else:
        yield b


class C:
    z = """a
multi-line string with 'quotes'
"""

    async def g(self):
        async with self.lock:
            await self.h()


for i in range(3):
    if i:
        break
else:
    pass
try:
    import torch
except ImportError:  # comment
    torch = None
# trailing comment'''

SNIPPETS = ["", "x", "(", ")", "]", "'", '"""', "\\\\\\n", "\\n", " ", "    ", "\\n    ", "return 1\\n", "yield 2\\n",
            "await z\\n", "break\\n", "continue\\n", "nonlocal q\\n", "global x\\n", "from __future__ import annotations\\n",
            "import torch_npu\\n", "x = 1\\n", "lambda: (yield)", "def h():\\n    pass\\n", "if x:\\n", "@d\\n", "# c\\n",
            ", ", ":", "=", "f(", "torch.npu", '"npu:0"', "class D:\\n    pass\\n"]


@functools.cache
def sources() -> tuple:
    found = [TRICKY] + [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.py"))[:40]]
    return tuple(s for s in found if compile_error(s) is None)


def random_edits(rng, text: str, lines: list) -> list:
    chosen = []
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.5:
            start = rng.choice(lines)                        # at a line start
        else:
            start = rng.randrange(len(text) + 1)             # anywhere
        end = min(len(text), start + (rng.randint(0, 12) if rng.random() < 0.4 else 0))
        chosen.append(edits.Edit(start, end, bytes(rng.choice(SNIPPETS), "ascii").decode("unicode_escape")))
    kept, _dropped = edits.resolve(chosen)
    return kept


def changed_statements_decide_as_the_whole_file_does(seed):
    rng = random.Random(seed)
    checked = disagreements = 0
    for source in sources():
        src = SourceFile("m.py", source)
        for _ in range(40):
            kept = random_edits(rng, source, src.line_starts)
            new, kept, _ = edits.apply(source, kept)
            if new == source:
                continue
            spans = edits.changed_spans(kept, src.statement_spans(), src.line_starts, len(source))
            whole = compile_error(new) is not None
            part = broken_spans(source, new, spans) is not None  # the sources compile: no exoneration
            checked += 1
            disagreements += whole != part
            assert whole == part, (kept, new)
    assert checked > 500 and disagreements == 0


@pytest.mark.parametrize("seed", range(6))
def test_the_changed_statements_decide_as_the_whole_file_does(seed):
    """Six fixed seeds in every run (each over 500 random edits checked)."""
    changed_statements_decide_as_the_whole_file_does(seed)


@pytest.mark.soak
@pytest.mark.parametrize("seed", range(6, 206))
def test_the_changed_statements_decide_as_the_whole_file_does_soak(seed):
    """200 more seeds, only when asked for: `pytest -m soak` (about 5 minutes on 2 cores with -n 2)."""
    changed_statements_decide_as_the_whole_file_does(seed)


def test_every_edit_lies_inside_a_span():
    rng = random.Random(1)
    for source in sources()[:10]:
        src = SourceFile("m.py", source)
        for _ in range(50):
            kept = random_edits(rng, source, src.line_starts)
            spans = edits.changed_spans(kept, src.statement_spans(), src.line_starts, len(source))
            for e in kept:
                assert any(s <= e.start and e.end <= t for (s, t), _new in spans), (e, spans)
