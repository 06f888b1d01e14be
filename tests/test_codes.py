"""The code catalogue: ids and names unique, every code documented, emitted by a checker on a fixture, examples
that hold, generated docs in sync."""
import ast
import json
import re
from pathlib import Path

import pytest
from code_cases import cases, converted
from conftest import analyze  # the keyword form: torchport.commands.analyze.AnalyzeRequest.of

import torchport
from torchport.commands import port as port_api
from torchport.converter.rules import builtin_checkers
from torchport.converter.run import Converter
from torchport.core import codes
from torchport.core.codes import CODES
from torchport.core.finding import CHANGES
from torchport.core.suppress import Selection
from torchport.report.rules_doc import EXAMPLE_OPTIONS, convert_example, rule_text, rules_markdown

SRC = Path(torchport.__file__).resolve().parent

# Codes whose catalogue example does not emit them on npu, and that have no case folder (tests/codes/<CODE>/,
# single files): a small project that does.
# code -> (command, target, files, options)
TRAIN = ("import torch\nfrom torch.utils.data import DataLoader\n\n\ndef main():\n"
         "    model = torch.nn.Linear(2, 2).cuda(0)\n    opt = torch.optim.SGD(model.parameters(), 0.1)\n"
         "    train_loader = DataLoader(ds, batch_size=4, shuffle=True)\n    for epoch in range(2):\n"
         "        for x in train_loader:\n            opt.zero_grad()\n            model(x.cuda()).sum().backward()\n"
         "            opt.step()\n        print(epoch)\n    torch.save(model.state_dict(), 'm.pt')\n")
NATIVE = {"k.cu": "#include <cuda_runtime.h>\n__global__ void k(float* x) { int l = __shfl_sync(0xffffffff, 1, 0);\n"
                  "#if __CUDA_ARCH__ >= 800\n  asm volatile(\"nop;\");\n#endif\n}\nvoid f() { cudaMalloc(0, 4); }\n",
          "ops.cpp": "TORCH_LIBRARY(myops, m) { m.def(\"k(Tensor x) -> Tensor\"); }\n",
          "use.py": "import torch\nimport apex\ny = torch.ops.myops.k(x)\n",
          "requirements.txt": "flash-attn==2.5.0\ntorch==2.1.0+cu118\n"}
EXTENSION = {"k.cu": '#include <cuda_runtime.h>\n#include "k.cuh"\n'
                     "__global__ void k(float* x) { int l = __shfl_sync(0xffffffff, 1, 0); }\n"
                     "void f() { cudaMalloc(0, 4); cudaFancyThing(); }\n",
             "k.cuh": "#pragma once\n",
             "map.json": json.dumps({"unsupported": {"cudaFancyThing": "no such thing on MUSA"}}),
             "setup.py": "from setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
                         "setup(name='k', ext_modules=[CUDAExtension('k', ['k.cu'])], cmdclass={'build_ext': BuildExtension})\n"}
FIXTURES = {
    "TP000": ("convert", "npu", {"a.py": "import torch\ntorch.cuda.synchronize(\n"}, {}),
    "TP115": ("convert", "npu+names", {"a.py": "import mylib\nmylib.cuda_op(1)\n"}, {}),
    "TP403": ("convert", "npu", {"a.py": "import torch\n", "cfg.yaml": "device: cuda\n"}, {}),
    "TP803": ("convert", "npu", {"run.sh": "nvidia-smi -L\npython train.py\n"}, {}),
    "TP404": ("convert", "npu", {"a.py": "import torch\nx = torch.ones(2).cuda()\n"},
              {"launch": "a.py", "specify_device": "NPU_CALCULATE_DEVICE"}),
    "TP123": ("convert", "npu", {"a.py": "import torch\nwith torch.cuda.nvtx.range('fwd'):\n    pass\n"},
              {"similar": True}),
    "TP003": ("convert", "npu", {"a.py": "import torch\nif __name__ == '__main__':\n    print(torch.ones(2).cuda())\n"},
              {"runtime_shim": True}),
    **{c: ("analyze", "npu", NATIVE, {}) for c in ("TP901", "TP902", "TP903", "TP904", "TP905", "TP906", "TP907",
                                                   "TP908", "TP909", "TP910")},
    **{c: ("port", "musa", EXTENSION, {"maps": ["map.json"]}) for c in ("TP950", "TP951", "TP952", "TP955", "TP956")},
    "TP957": ("port", "musa", EXTENSION, {"maps": ["map.json"], "fault": "includes"}),
    **{c: ("convert", "npu", {"train.py": TRAIN}, {"distributed": True, "main": "train.py"})
       for c in ("TP961", "TP962", "TP963", "TP964", "TP965", "TP966")},
}


CASES = cases()


def emitted(tmp_path, monkeypatch, command, target, files, options) -> list:
    """The findings of `command` on a project made of `files`."""
    src = tmp_path / "proj"
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    options = dict(options)
    if target == "npu+names":  # a target file deciding about a name outside every CUDA category
        text = (SRC / "backends" / "npu.toml").read_text()
        target = tmp_path / "npu_names.toml"
        target.write_text(text.replace("[names]\n", '[names]\n"mylib.cuda_op" = { unsupported = "CUDA-only" }\n', 1))
        target = str(target)
    if options.pop("fault", None) == "includes":  # a porting bug, simulated: a written include is renamed
        def broken(before, new):
            return [(line, path, "renamed_" + path) for line, path in before]
        monkeypatch.setattr(port_api, "quoted_includes", broken)
    if "maps" in options:
        options["maps"] = [str(src / m) for m in options["maps"]]
    if command == "convert":   # codes in preview too: every code is emitted somewhere
        options.setdefault("selection", Selection(preview=True))
        return torchport.convert(src, target, tmp_path / "out", jobs=1, **options).findings
    if command == "analyze":
        result = analyze(src, [target], jobs=1)
        return list(result.common) + result.target_findings(target)
    return port_api.port(port_api.PortRequest.of(src, target, tmp_path / "out", jobs=1, **options)).findings


def test_ids_and_names_are_unique_and_documented():
    assert len(CODES) >= 60
    names = [c.name for c in CODES.values()]
    assert len(set(names)) == len(names)
    for cid, c in CODES.items():
        assert re.fullmatch(r"TP\d{3}", cid) and c.id == cid
        assert c.what and c.name and c.category in codes.CATEGORIES and c.owner in codes.OWNERS
        assert c.fix in codes.FIXES
        assert getattr(codes, cid) is c, "each code is a module constant of the same name"
        assert any(cid.startswith(f.prefix) for f in codes.FAMILIES)


def test_a_second_entry_for_an_id_or_a_name_is_refused():
    with pytest.raises(ValueError, match="duplicate"):
        codes._define("TP201", "another-name", "device-string", codes.CONVERT, codes.REWRITE, what="x")
    with pytest.raises(ValueError, match="duplicate"):
        codes._define("TP999", codes.TP201.name, "device-string", codes.CONVERT, codes.REWRITE, what="x")
    assert "TP999" not in CODES


def test_every_code_is_declared_by_a_checker_or_an_engine_module():
    """Statically: a checker declares it, or engine code outside the catalogue and the report writers names it."""
    declared = {c.id for ch in builtin_checkers() for c in ch.codes}
    named = set()
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        if rel == "core/codes.py" or rel.startswith(("report/", "cli")):
            continue
        named |= set(re.findall(r"\bcodes\.(TP\d{3})\b", path.read_text(encoding="utf-8")))
    assert set(CODES) - declared - named == set(), "codes nothing emits"
    assert named - set(CODES) == set() and declared - set(CODES) == set(), "codes outside the catalogue"


def test_no_code_is_spelled_as_a_string_in_the_source():
    """Code refers to codes through the constants of core.codes, never through "TPnnn" strings."""
    spelled = []
    for path in SRC.rglob("*.py"):
        if path.name == "codes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"TP\d{3}", node.value):
                spelled.append(f"{path.relative_to(SRC)}:{node.lineno} {node.value}")
    assert spelled == []


@pytest.mark.parametrize("cid", sorted(c for c, code in CODES.items() if code.status != codes.REMOVED))
def test_every_code_is_emitted_on_its_fixture(cid, tmp_path, monkeypatch):
    """Dynamically: the catalogue example (npu) or a fixture project makes the owner emit the code; a code that
    stands for "reported" is never carried by an edit."""
    code = CODES[cid]
    folder = [c for c in CASES if c[0] == cid]   # tests/codes/<CODE>/: its first case
    if folder:
        _code, _case, target, before, _after = folder[0]
        _, findings = converted(before.name, before.read_text(), target)
    elif cid in FIXTURES:
        findings = emitted(tmp_path, monkeypatch, *FIXTURES[cid])
    else:
        assert code.example, f"{cid} has neither an example nor a fixture"
        _, findings = convert_example(code.example[0], "npu", shell=cid.startswith("TP8"),
                                      options={"selection": Selection(preview=True)})
    mine = [f for f in findings if f.rule == cid]
    assert mine, f"{cid} not emitted (got {sorted({f.rule for f in findings})})"
    if code.fix == codes.REPORT:
        assert not [f for f in mine if f.action in CHANGES], f"{cid} is 'reported' but rewrote"
    if code.fix == codes.REWRITE:
        assert [f for f in mine if f.action in CHANGES], f"{cid} is 'rewrite' but rewrote nothing"


@pytest.mark.parametrize("cid", sorted(c.id for c in CODES.values() if c.example))
def test_documented_example_holds(cid):
    before, after = CODES[cid].example
    out, _ = convert_example(before, "npu", shell=cid.startswith("TP8"), options=EXAMPLE_OPTIONS.get(cid))
    drop_register = [line for line in out.splitlines(True) if not line.startswith("import torch_npu")]
    assert "".join(drop_register) == "".join(line for line in after.splitlines(True)
                                             if not line.startswith("import torch_npu"))


@pytest.mark.subprocess
def test_checkers_are_assembled_in_one_place_whatever_was_imported():
    """The set of checkers does not depend on which modules a process happened to import first."""
    import subprocess
    import sys
    probe = ("import sys\nfrom torchport.converter.rules import builtin_checkers\n"
             "{}\nprint(len(builtin_checkers()), len({{c for ch in builtin_checkers() for c in ch.codes}}))\n")
    fresh = subprocess.run([sys.executable, "-c", probe.format("")], capture_output=True, text=True, check=True).stdout
    after = subprocess.run([sys.executable, "-c", probe.format("import torchport.analyze.scan, torchport.commands.port")],
                           capture_output=True, text=True, check=True).stdout
    assert fresh == after and int(fresh.split()[0]) > 30


def test_one_code_in_full_shows_its_example_for_every_target():
    from torchport.backends import available_targets
    text = rule_text(codes.TP101)
    assert text.startswith("TP101 cuda-device-api") and codes.TP101.why.splitlines()[0] in text
    for name in available_targets():
        assert f"After ({name}):" in text
    assert "torch.npu.set_device(args.gpu)" in text and "torch.cuda.set_device" in text


def test_docs_are_generated_from_the_catalogue():
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


def test_rules_command_shows_one_code_in_full(capsys):
    from torchport.cli import main

    assert main(["rules", "tp201"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("TP201 device-arguments") and "After (cpu):" in out and codes.TP201.why.split("\n")[0] in out
    assert main(["rules", "TP9999"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown code 'TP9999'" in err
