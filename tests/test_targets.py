"""Targets are data: bundled files load, a file outside the package works, bad files are refused."""
import importlib
from pathlib import Path

import pytest

from torchport.backends import available_targets, load_target
from torchport.converter.run import Converter
from torchport.core.errors import UsageError
from torchport.kb import catalog
from torchport.kb.apimap import MAP, ApiMap

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


@pytest.mark.torch
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


# ------------------------------------------------------------------ one schema, names, kinds, queries
from torchport import backends  # noqa: E402
from torchport.backends import KERNEL_HANDLING, TARGET_KINDS, bundled_names, resolve_target_name, target_names  # noqa: E402


@pytest.mark.parametrize("name", bundled_names())
def test_every_target_names_its_kind_and_aliases_and_they_resolve_to_it(name):
    t = load_target(name)
    assert t.kind in TARGET_KINDS and t.cuda_kernels in KERNEL_HANDLING
    for alias in t.aliases:
        assert resolve_target_name(alias) == name and resolve_target_name(alias.upper()) == name
    assert resolve_target_name(name.upper()) == name and load_target(name.upper()) is load_target(name)


@pytest.mark.parametrize("text,hint", [("ascnd", "npu"), ("nxu", "xpu"), ("moorethread", "musa"), ("cambrican", "mlu")])
def test_an_unknown_target_is_one_line_with_the_closest_name(text, hint):
    with pytest.raises(UsageError) as e:
        resolve_target_name(text)
    message = str(e.value)
    assert f"unknown target '{text}'" in message and hint in message and "\n" not in message


def test_vendor_aliases_on_the_command_line(tmp_path):
    from torchport.cli import main

    (tmp_path / "a.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    for alias, device in (("ascend", "npu"), ("Cambricon", "mlu"), ("moorethreads", "musa"), ("NPU", "npu")):
        out = tmp_path / f"{alias}.py"
        assert main(["convert", str(tmp_path / "a.py"), "--to", alias, "-o", str(out)]) == 0
        assert f".{device}()" in out.read_text(), alias


def test_queries_read_the_target_files():
    """Lists of targets come from the files: nothing in code says which are vendors or port-ext targets."""
    from torchport.commands.port import port_ext_targets

    kinds = {n: load_target(n).kind for n in bundled_names()}
    assert target_names(kinds=("vendor",)) == sorted(n for n, k in kinds.items() if k == "vendor")
    assert available_targets() == sorted(n for n, k in kinds.items() if k in backends.CONVERTED_KINDS)
    assert port_ext_targets() == sorted(n for n in bundled_names() if load_target(n).cuda_kernels != "rewrite")
    for name in port_ext_targets():  # each target port-ext ports has a mapping table
        if load_target(name).cuda_kernels == "port":
            assert (Path(backends.__file__).parent.parent / "kb" / "port" / f"{name}.json").is_file(), name


def test_hip_is_a_port_target_with_nothing_to_convert(tmp_path):
    from torchport.cli import main

    hip = load_target("rocm")
    assert hip.name == "hip" and hip.kind == "port-only" and "hip" not in available_targets()
    with pytest.raises(UsageError, match="port-ext --to hip"):
        Converter("hip")
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "k.cu").write_text("void f() { cudaMalloc(0, 4); }\n")
    assert main(["port-ext", str(tmp_path / "p"), "--to", "amd", "-o", str(tmp_path / "o")]) == 0
    assert "hipMalloc" in "".join(p.read_text() for p in (tmp_path / "o").iterdir())


@pytest.mark.parametrize("name", bundled_names())
def test_analyze_convert_and_port_ext_agree_on_what_happens_to_kernels(name, tmp_path):
    """A target whose kernels port-ext does not cover is never sent to port-ext by convert's advice, and analyze
    counts its kernels as blocked exactly when port-ext does not port them."""
    from torchport.commands.analyze import AnalyzeRequest, analyze
    from torchport.commands.port import port_ext_targets

    t = load_target(name)
    covered = name in port_ext_targets()
    assert ("port-ext --to" in t.kernel_advice) == covered and ("port-ext does not cover" in t.kernel_advice) != covered
    if t.kind not in backends.CONVERTED_KINDS:
        return
    (tmp_path / "k.cu").write_text("__global__ void k(float* x) {}\n")
    (tmp_path / "setup.py").write_text("from torch.utils.cpp_extension import CUDAExtension\n"
                                       "ext = CUDAExtension('k', ['k.cu'])\n")
    result = analyze(AnalyzeRequest.of(tmp_path, [name], jobs=1))
    readiness = result.readiness[name]
    assert readiness.kernels == 1 and readiness.kernels_blocked == (t.cuda_kernels != "port")
    messages = [f.message for f in result.target_findings(name) if f.rule == "TP113"]
    assert messages and all(("port-ext --to" in m) == covered for m in messages), messages


# ------------------------------------------------------------------ typed sections, more queries
from torchport.core.tomlfile import tomllib  # noqa: E402

HEAD = 'name = "x"\ntitle = "x"\nnamespace = "torch.x"\ndevice = "x"\n'


def _files() -> dict:
    """Every bundled target file as the TOML it holds: what the queries must agree with."""
    return {p.stem: tomllib.loads(p.read_text()) for p in backends.HERE.glob("*.toml")}


@pytest.mark.parametrize("tail,key", [
    ('[port]\nflavour = "x"\n', "port"),
    ('[port]\nhome = "not a var"\n', "port.home"),
    ('[runtime]\namp_dtype = "float8"\n', "runtime.amp_dtype"),
    ('[runtime]\nbf16 = "yes"\n', "runtime.bf16"),
    ('[runtime]\nnoop = "torch.cuda.empty_cache"\n', "runtime.noop"),
    ('[doctor]\nversion_rule = "newest"\n', "doctor.version_rule"),
    ('[doctor]\nsmi_args = [1]\n', "doctor.smi_args[0]"),
    ('[sim]\nlabel = 0\n', "sim.label"),
    ('[sim]\nmemory_gib = 32\n', "sim"),
    ('kind = "plugin"\n', "kind"),
    ('aliases = ["two words"]\n', "aliases[0]"),
    ('cuda_kernels = "maybe"\n', "cuda_kernels"),
])
def test_a_bad_section_value_is_one_line_naming_file_and_key(tmp_path, tail, key):
    path = tmp_path / "bad.toml"
    path.write_text(HEAD + tail)
    with pytest.raises(UsageError) as e:
        load_target(str(path))
    message = str(e.value)
    assert message.startswith(f"{path}: '{key}' ") and "\n" not in message, message


def test_sections_are_typed_and_hold_what_the_files_say():
    for name, data in _files().items():
        t = load_target(name)
        for section, cls in backends.SECTIONS.items():
            value = getattr(t, section)
            if section not in data:
                assert value is None or value == cls(), (name, section)
                continue
            assert isinstance(value, cls)
            for key, raw in data[section].items():
                assert getattr(value, key) == (tuple(raw) if isinstance(raw, list) else raw), (name, section, key)


def test_each_section_class_takes_exactly_the_keys_the_schema_checks():
    import dataclasses

    for section, cls in backends.SECTIONS.items():
        assert backends._TARGET_KEYS[section].keys == {f.name for f in dataclasses.fields(cls)}, section


def test_an_alias_belongs_to_one_target():
    seen = {}
    for name, data in _files().items():
        for alias in data.get("aliases", []):
            assert alias not in seen and alias not in _files(), (alias, name, seen.get(alias))
            seen[alias] = name


@pytest.mark.parametrize("typed,meant", [("npux", "npu"), ("cambrcon", "mlu"), ("ROCM4", "hip")])
def test_unknown_target_suggests_the_closest(typed, meant):
    with pytest.raises(UsageError) as e:
        resolve_target_name(typed)
    message = str(e.value)
    assert f"unknown target '{typed}' (did you mean {meant}?)" in message and "\n" not in message
    assert all(name in message for name in bundled_names())


def test_convert_to_a_port_only_target_is_refused_in_one_line(tmp_path):
    from torchport.cli import main

    src = tmp_path / "a.py"
    src.write_text("import torch\nx = torch.ones(1).cuda()\n")
    for name in target_names(kinds=("port-only",)):
        try:
            Converter(name)
        except UsageError as e:
            assert "nothing to convert" in str(e) and "\n" not in str(e)
        else:
            raise AssertionError(f"convert --to {name} was not refused")
        assert main(["convert", str(src), "--to", name, "-o", str(tmp_path / "b.py")]) == 2
        assert not (tmp_path / "b.py").exists()


def test_every_kind_query_matches_the_raw_files():
    from torchport.commands.port import port_ext_targets
    from torchport.sim import simulated_targets

    files = _files()
    kind = {n: d.get("kind", "vendor") for n, d in files.items()}
    assert set(kind.values()) <= set(TARGET_KINDS)
    for k in TARGET_KINDS:
        assert target_names(kinds=(k,)) == sorted(n for n in files if kind[n] == k)
    assert backends.available_targets() == sorted(n for n in files if kind[n] in backends.CONVERTED_KINDS)
    assert port_ext_targets() == sorted(n for n, d in files.items()
                                        if d.get("cuda_kernels", "rewrite") in ("port", "inventory"))
    assert sorted(simulated_targets()) == sorted(n for n, d in files.items()
                                                 if "sim" in d and d.get("register") and kind[n] in backends.CONVERTED_KINDS)
    assert backends.device_types() == {d["device"] for d in files.values() if d.get("device")}


SDPA_SWITCHES = ("torch.backends.cuda.sdp_kernel", "torch.backends.cuda.enable_math_sdp",
                 "torch.backends.cuda.enable_flash_sdp", "torch.backends.cuda.enable_mem_efficient_sdp")


@pytest.mark.torch
def test_attention_backend_switches_are_not_cuda_only():
    """The cpu target keeps torch.backends.cuda's SDPA switches without a finding, because CPU torch reads them
    (checked here: with every backend off, CPU attention raises); other targets say so and call the rest
    unverified, instead of 'no effect'."""
    torch = pytest.importorskip("torch")
    q = torch.randn(1, 2, 4, 8)
    try:
        for switch in SDPA_SWITCHES[1:]:
            getattr(torch.backends.cuda, switch.rsplit(".", 1)[1])(False)
        with pytest.raises(RuntimeError, match="No viable backend"):
            torch.nn.functional.scaled_dot_product_attention(q, q, q)
    finally:
        for switch in SDPA_SWITCHES[1:]:
            getattr(torch.backends.cuda, switch.rsplit(".", 1)[1])(True)
    source = "import torch\n" + "".join(f"{s}(True)\n" for s in SDPA_SWITCHES[1:]) + \
        "with torch.backends.cuda.sdp_kernel(enable_math=True):\n    pass\n"
    _, findings, _ = Converter("cpu").convert_text("a.py", source.encode(), "python")
    assert findings == []
    _, findings, _ = Converter("npu").convert_text("a.py", source.encode(), "python")
    assert len(findings) == 4 and all("not only CUDA's" in f.message and "unverified" in f.message for f in findings)
