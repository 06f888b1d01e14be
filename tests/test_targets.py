"""Targets are data: bundled files load, a file outside the package works, bad files are refused."""
import importlib
from pathlib import Path

import pytest

from torchport.backends import available_targets, load_target
from torchport.kb.apimap import MAP, ApiMap
from torchport.converter.run import Converter
from torchport.core.errors import UsageError
from torchport.kb import catalog

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "fancy" / "fancy.toml"
BUILTIN = {"xpu", "mps", "cpu", "accelerator"}  # namespaces that exist in the installed torch


def test_bundled_targets():
    names = available_targets()
    assert set(names) >= {"npu", "mlu", "musa", "xpu", "mps", "cpu", "accelerator"}
    expected = {"npu": ("torch_npu", "hccl", "ASCEND_RT_VISIBLE_DEVICES", "npu-smi"),
                "mlu": ("torch_mlu", "cncl", "MLU_VISIBLE_DEVICES", "cnmon"),
                "musa": ("torch_musa", "mccl", "MUSA_VISIBLE_DEVICES", "mthreads-gmi"),
                "xpu": ("", "xccl", "ZE_AFFINITY_MASK", "xpu-smi")}
    for name, (register, backend, env, smi) in expected.items():
        t = load_target(name)
        assert (t.register, t.backend, t.visible_devices_env, t.smi) == (register, backend, env, smi)
        assert t.api_names, name


def test_target_defined_only_in_a_fixture_converts():
    conv = Converter(str(FIXTURE))
    src = b"import os\nimport torch\ng = torch.cuda.CUDAGraph()\nx = torch.ones(1).cuda()\n" \
          b"os.environ['CUDA_VISIBLE_DEVICES'] = '0'\ntorch.cuda.synchronize()\ntorch.cuda.empty_cache()\n"
    new, findings, _ = conv.convert_text("t.py", src, "python")
    assert new.decode() == ("import os\nimport torch\nimport torch_fancy  # noqa: F401\ng = torch.fancy.FancyGraph()\n"
                            "x = torch.ones(1).fancy()\nos.environ['FANCY_VISIBLE_DEVICES'] = '0'\n"
                            "torch.fancy.synchronize()\ntorch.cuda.empty_cache()\n")
    assert [f.old for f in findings if f.action == "unsupported"] == ["torch.cuda.empty_cache"]


def test_fixture_target_via_cli(tmp_path):
    from torchport.cli import main

    (tmp_path / "a.py").write_text("import torch\nprint(torch.cuda.is_available())\n")
    assert main(["convert", str(tmp_path / "a.py"), "--to", str(FIXTURE), "-o", str(tmp_path / "b.py")]) == 0
    assert "torch.fancy.is_available()" in (tmp_path / "b.py").read_text()


@pytest.mark.parametrize("body,message", [
    ('title = "x"\nnamespace = "torch.x"\ndevice = "x"\n', "missing required key 'name'"),
    ('name = "x"\ntitle = "x"\nnamespace = "torch.x"\n', "exactly one of 'device'"),
    ('name = "x"\ntitle = "x"\nnamespace = "torch.x"\ndevice = "x"\ndevice_expr = "y"\n', "exactly one of 'device'"),
    ('name = "x"\ntitle = "x"\nnamespace = "torch.x"\ndevice = "x"\namp = "maybe"\n', "'amp' must be"),
    ('name = "x"\ntitle = "x"\nnamespace = "torch.x"\ndevice = "x"\ncolour = "red"\n', "unknown keys"),
    ('name = "x"\ntitle = "x"\nnamespace = "torch.x"\ndevice = "x"\n[names]\n"torch.cuda.a" = { new = "b", unsupported = "c" }\n',
     "exactly one of"),
    ('name = "x"\ntitle = "x"\nnamespace = "torch.x"\ndevice = "x"\napi = "nowhere"\n', "API list 'nowhere' not found"),
    ('name = "x"\ntitle = [\n', "invalid TOML"),
])
def test_bad_target_files_are_refused(tmp_path, body, message):
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(UsageError) as e:
        load_target(str(path))
    assert message in str(e.value) and str(path) in str(e.value)


def test_unknown_target():
    with pytest.raises(UsageError, match="unknown target 'tpu'"):
        load_target("tpu")


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_builtin_targets_never_invent_names(name):
    """Every rewrite the built-in targets can produce names something that exists in torch 2.13."""
    torch = pytest.importorskip("torch")
    api = ApiMap(load_target(name))
    checked = 0
    for attr in sorted(catalog().cuda_names):
        res = api.resolve(f"torch.cuda.{attr}")
        if res is None or res.kind != MAP:
            continue
        obj = torch
        for part in res.new.split(".")[1:]:
            obj = getattr(obj, part) if hasattr(obj, part) else importlib.import_module(f"{obj.__name__}.{part}")
        checked += 1
    assert checked > 5


@pytest.mark.parametrize("name", ["npu", "mlu", "musa"])
def test_vendor_rewrites_stay_inside_the_api_list(name):
    """Rewrites into a vendor namespace only use names its extracted API list has."""
    t = load_target(name)
    api = ApiMap(t)
    for attr in sorted(catalog().cuda_names):
        res = api.resolve(f"torch.cuda.{attr}")
        if res is not None and res.kind == MAP and res.new.startswith(t.namespace + "."):
            first = res.new[len(t.namespace) + 1:].split(".")[0]
            assert t.has(first), (name, attr, res.new)
