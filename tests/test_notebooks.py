"""Jupyter notebooks: code cells are converted as one program (imports in one cell seen in the next), outputs
and markdown kept; analyze counts them, check gates them; the cpu conversion's cells really run."""
import json

import pytest

import torchport
from torchport.api import (
    analyze,
    check,  # the keyword form: torchport.commands.check.CheckRequest.of
)

CELLS = [
    ("markdown", "# Train on CUDA\nuses `.cuda()`"),
    ("code", '%matplotlib inline\n!nvidia-smi\nimport torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\nprint(device)'),
    ("code", "x = torch.ones(3).cuda()\ntorch.cuda.synchronize()\ntotal = x.sum().item()"),
    ("code", "?torch.ones\nprint 'python 2'  # not Python 3"),
    ("code", "y = x * 2"),
]


def _notebook(path):
    cells = []
    for kind, text in CELLS:
        cell = {"cell_type": kind, "metadata": {}, "source": text.splitlines(True)}
        if kind == "code":
            cell.update(execution_count=1, outputs=[{"output_type": "stream", "name": "stdout", "text": ["cuda\n"]}])
        cells.append(cell)
    nb = {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, indent=1) + "\n")
    return nb


def _sources(path):
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]


def test_code_cells_are_converted_as_one_program(tmp_path):
    src = tmp_path / "proj" / "train.ipynb"
    before = _notebook(src)
    result = torchport.convert(src.parent, "npu", tmp_path / "out")
    out = tmp_path / "out" / "train.ipynb"
    cells = _sources(out)
    assert cells[0] == CELLS[0][1], "markdown untouched"
    assert cells[1].startswith("%matplotlib inline\n!nvidia-smi\nimport torch\nimport torch_npu")
    assert 'torch.device("npu" if torch.npu.is_available() else "cpu")' in cells[1]
    assert cells[2] == "x = torch.ones(3).npu()\ntorch.npu.synchronize()\ntotal = x.sum().item()", \
        "the import of cell 2 is seen in cell 3"
    assert cells[3] == CELLS[3][1] and cells[4] == CELLS[4][1]
    after = json.loads(out.read_text())
    assert [c.get("outputs") for c in after["cells"]] == [c.get("outputs") for c in before["cells"]]
    assert after["metadata"] == before["metadata"]
    where = {(f.rule, f.line, f.message.split(":")[0]) for f in result.findings}
    assert ("TP501", 1, "cell 3") in where and ("TP101", 2, "cell 3") in where
    assert any(f.rule == "TP000" and f.message.startswith("cell 4: not Python") for f in result.findings)
    again = torchport.convert(tmp_path / "out", "npu", tmp_path / "again")
    assert again.summary()["changes"] == 0
    assert (tmp_path / "again" / "train.ipynb").read_bytes() == out.read_bytes()


def test_analyze_and_check_see_notebooks(tmp_path):
    src = tmp_path / "proj" / "train.ipynb"
    _notebook(src)
    a = analyze(src.parent, "npu", write_reports=False)
    assert a.summary()["touchpoints"] >= 4
    assert check([src.parent], "npu").exit_code == 1
    torchport.convert(src.parent, "npu", tmp_path / "out")
    assert check([tmp_path / "out"], "npu").exit_code == 0


@pytest.mark.torch
def test_cpu_conversion_of_a_notebook_runs(tmp_path):
    pytest.importorskip("torch")
    src = tmp_path / "proj" / "train.ipynb"
    _notebook(src)
    torchport.convert(src.parent, "cpu", tmp_path / "out")
    cells = _sources(tmp_path / "out" / "train.ipynb")
    program = "\n".join(line for i in (1, 2, 4) for line in cells[i].splitlines() if not line.startswith(("%", "!")))
    namespace: dict = {}
    exec(compile(program, "train.ipynb", "exec"), namespace)  # the converted cells, in order, as Jupyter runs them
    assert namespace["total"] == 3.0 and namespace["y"].device.type == "cpu"
    original = "\n".join(line for i in (1, 2) for line in CELLS[i][1].splitlines() if not line.startswith(("%", "!")))
    with pytest.raises((AssertionError, RuntimeError)):
        exec(compile(original, "original.ipynb", "exec"), {})  # CUDA code fails here: the test proves something


def test_ipython_syntax_is_kept_and_the_python_around_it_converted(tmp_path):
    cells = ["import torch\nfiles = !ls\nx = torch.ones(2).cuda()",
             "x?\nw = torch.zeros(1, device='cuda')",
             "%time y = x.cuda() * 2\n%timeit -n 3 x.sum()",
             "%%bash\nnvidia-smi\necho cuda",
             "print 'py2'\nz = x.cuda()",
             "try:\n    import apex\nexcept ImportError:\n    !pip install apex\nv = x.cuda()"]
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": c}
                    for c in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    src = tmp_path / "proj" / "ipy.ipynb"
    src.parent.mkdir()
    src.write_text(json.dumps(nb, indent=1) + "\n")
    result = torchport.convert(src.parent, "npu", tmp_path / "out")
    out = _sources(tmp_path / "out" / "ipy.ipynb")
    assert out[0] == "import torch\nimport torch_npu  # noqa: F401\nfiles = !ls\nx = torch.ones(2).npu()"
    assert out[1] == "x?\nw = torch.zeros(1, device='npu')"
    assert out[2] == "%time y = x.npu() * 2\n%timeit -n 3 x.sum()"
    assert out[3] == cells[3], "a %%bash cell is not Python: kept whole"
    assert out[4] == cells[4]
    assert out[5] == cells[5].replace("x.cuda()", "x.npu()"), "an IPython line alone in a block still parses"
    errors = [f for f in result.findings if f.action == "error"]
    assert [f.message.split(":")[0] for f in errors] == ["cell 5"], "unconverted CUDA code is an error"
    assert check([src.parent], "npu").exit_code == 1
    assert check([tmp_path / "out"], "npu").exit_code == 1, "the cell left with .cuda() still fails check"


@pytest.mark.parametrize("style", ["bom", "compact", "indent2", "ascii", "crlf"])
def test_a_converted_notebook_keeps_how_its_file_was_written(tmp_path, style):
    """issue 31 item 13: a notebook's byte-order mark was dropped (and every notebook re-indented by 1)."""
    import codecs
    import json as json_

    from torchport.api import convert as convert_

    nb = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                     "source": ["import torch\n", "x = torch.ones(2).cuda()  # é\n"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    text = json_.dumps(nb, indent=None if style == "compact" else 2 if style == "indent2" else 1,
                       ensure_ascii=style == "ascii") + "\n"
    if style == "crlf":
        text = text.replace("\n", "\r\n")
    data = (codecs.BOM_UTF8 if style == "bom" else b"") + text.encode("utf-8")
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "n.ipynb").write_bytes(data)
    convert_(str(tmp_path / "p"), "cpu", str(tmp_path / "o"), write_reports=False)
    new = (tmp_path / "o" / "n.ipynb").read_bytes()
    nb["cells"][0]["source"][1] = 'x = torch.ones(2).to("cpu")  # é\n'
    expected = (codecs.BOM_UTF8 if style == "bom" else b"") + (json_.dumps(
        nb, indent=None if style == "compact" else 2 if style == "indent2" else 1,
        ensure_ascii=style == "ascii") + "\n").replace("\n", "\r\n" if style == "crlf" else "\n").encode("utf-8")
    assert new == expected
