"""`ops check` tells the truth: every claim it makes for xpu and mps about an op-rich model (recorded on
the CPU with `ops record`) agrees with torch's own dispatch data, read here with torchgen's parser from
the native_functions.yaml of the installed torch (its sha256 is the one kb/ops/aten.json names), with
the XPU kernels and CPU-fallback list of intel/torch-xpu-ops (kb/ops/xpu.json, extracted from a named
commit) and MPS's always-CPU registrations (kb/op_kernels.toml, sources per entry)."""
import hashlib
import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from conftest import shared_folder

torch = pytest.importorskip("torch")
torchgen_gen = pytest.importorskip("torchgen.gen")

from torchport.cli import main  # noqa: E402
from torchport.core.tomlfile import tomllib  # noqa: E402

pytestmark = pytest.mark.torch

KB = Path(__file__).resolve().parents[1] / "src" / "torchport" / "kb"
NATIVE = Path(torchgen_gen.__file__).resolve().parent / "packaged" / "ATen" / "native"
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}

# LSTM, GRU, attention (MultiheadAttention and scaled_dot_product_attention), conv 1d/2d, batch norm,
# group norm, layer norm, embedding with max_norm, pooling, dropout, ten losses, linear algebra,
# AdamW + SGD with gradient clipping.
MODEL = '''
import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16, max_norm=1.0)
        self.lstm = nn.LSTM(16, 16, batch_first=True)
        self.gru = nn.GRU(16, 16, batch_first=True)
        self.attn = nn.MultiheadAttention(16, 2, batch_first=True)
        self.ln = nn.LayerNorm(16)
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.conv1 = nn.Conv1d(16, 16, 3, padding=1)
        self.gn = nn.GroupNorm(2, 16)
        self.fc = nn.Linear(20, 5)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        h, _ = self.lstm(self.emb(x))
        h, _ = self.gru(h)
        a, _ = self.attn(h, h, h)
        h = self.ln(h + a)
        q = h.view(h.shape[0], 2, h.shape[1], 8)
        h = h + F.scaled_dot_product_attention(q, q, q, is_causal=True).reshape(h.shape)
        c = self.gn(F.gelu(self.conv1(h.transpose(1, 2)))).transpose(1, 2)
        h = self.drop(F.silu(h + c))
        img = F.max_pool2d(F.relu(self.bn(self.conv(h.unsqueeze(1)))), 2)
        img = F.adaptive_avg_pool2d(F.avg_pool2d(img, 2), 1).flatten(1)
        return self.fc(torch.cat([h.mean(1), img], 1)), h

model = Model()
opts = [torch.optim.AdamW(model.parameters(), lr=1e-3), torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)]
for step in range(2):
    x, y = torch.randint(0, 50, (4, 8)), torch.randint(0, 5, (4,))
    out, h = model(x)
    loss = (F.cross_entropy(out, y) + F.mse_loss(out, torch.zeros_like(out))
            + F.binary_cross_entropy_with_logits(out, torch.ones_like(out)) + F.smooth_l1_loss(out, out.detach() / 2)
            + F.huber_loss(out, out.detach() / 2) + F.l1_loss(out, out.detach() / 2)
            + F.kl_div(F.log_softmax(out, 1), F.softmax(out.detach(), 1), reduction="batchmean")
            + F.nll_loss(F.log_softmax(out, 1), y)
            + F.ctc_loss(F.log_softmax(h, 2).transpose(0, 1), torch.randint(1, 16, (4, 3)), torch.full((4,), 8),
                         torch.full((4,), 3)))
    w = model.fc.weight[:, :5]
    g = w @ w.T + torch.eye(5)
    loss = loss + 1e-3 * (torch.linalg.svdvals(g).sum() + torch.linalg.eigvals(g).real.sum()
                          + torch.linalg.cholesky(g).diagonal().sum() + torch.linalg.qr(g).R.diagonal().sum()
                          + torch.linalg.matrix_exp(g / 100).sum())
    for o in opts:
        o.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    for o in opts:
        o.step()
'''


# ---------------------------------------------------------------- torch's own dispatch data
class Dispatch:
    """Per op: the backend keys with a kernel, from torchgen's parse of native_functions.yaml."""

    def __init__(self):
        parsed = torchgen_gen.parse_native_yaml(str(NATIVE / "native_functions.yaml"), str(NATIVE / "tags.yaml"))
        self.functions = {str(f.func.name): f for f in parsed.native_functions}
        self.index = {str(key): {str(name) for name in bi.index} for key, bi in parsed.backend_indices.items()}

    def has_kernel(self, op: str, key: str, extra=frozenset()) -> bool:
        f = self.functions[op]
        named = {op, str(f.structured_delegate)} if f.structured_delegate else {op}
        return bool(named & (self.index.get(key, set()) | extra))

    def composite(self, op: str) -> bool:
        f = self.functions[op]
        return bool(f.has_composite_implicit_autograd_kernel or f.has_composite_explicit_autograd_kernel
                     or f.has_composite_explicit_autograd_non_functional_kernel)


@pytest.fixture(scope="module")
def dispatch():
    return Dispatch()


def xpu_data():
    v = json.loads((KB / "ops" / "xpu.json").read_text())["versions"][-1]
    return frozenset(v["ops"]) - frozenset(v.get("key_limited", ())), frozenset(v.get("cpu_fallback_ops", ()))


def truth(dispatch, op: str, key: str, calls: dict = None) -> str:
    """What torch's data says `op` does on the backend `key`: supported / cpu-fallback / composite / missing.
    `calls` ({composite op: [ops its kernel called]}, from the recording): a composite is what the worst of
    those is, since its kernel needs theirs."""
    kernels = tomllib.loads((KB / "op_kernels.toml").read_text())
    extra, always = frozenset(), frozenset(kernels["always_cpu"].get(key, {}).get("ops", ()))
    if key == "XPU":
        extra, always = xpu_data()
    picked = kernels["picked"].get(op)
    if picked:   # a kernel the recording device chose: what matters is the op the model called
        found = []
        for asked in picked["for"]:
            uses = kernels["uses"].get(asked, {}).get(key)
            found += [truth(dispatch, k, key) for k in uses] if uses else [truth(dispatch, asked, key)]
        return min(found, key=["missing", "cpu-fallback", "composite", "supported"].index)
    if dispatch.has_kernel(op, key, extra):
        return "supported"
    if op in always:
        return "cpu-fallback"
    f = dispatch.functions[op]
    if f.structured_delegate:
        return truth(dispatch, str(f.structured_delegate), key)
    if dispatch.composite(op) and (calls or {}).get(op):
        return min((truth(dispatch, child, key, calls) for child in calls[op] if child != op),
                   key=["missing", "cpu-fallback", "composite", "supported"].index)
    return "composite" if dispatch.composite(op) else "missing"


def recorded_calls(recording) -> dict:
    """{composite op: [ops its kernel called]} of the recording (`via`), in ops check's spelling."""
    calls: dict = {}
    for row in json.loads(Path(recording).read_text())["ops"]:
        for parent in row.get("via", {}):
            calls.setdefault(short_name(parent), []).append(short_name(row["op"]))
    return calls


def short_name(op: str) -> str:
    name = op.removeprefix("aten::")
    return name.removesuffix(".default")


# ---------------------------------------------------------------- the recording and the claims
@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    def make(folder):
        (folder / "model.py").write_text(MODEL)
        p = subprocess.run([sys.executable, "-m", "torchport", "ops", "record", "-o", str(folder / "ops.json"), "--",
                            "python", str(folder / "model.py")], capture_output=True, text=True, env=ENV, timeout=600)
        assert p.returncode == 0, p.stderr
    return shared_folder(tmp_path_factory, "ops-truth-recording", make) / "ops.json"


def ops_check(*args) -> tuple:
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        code = main(["ops", "check", *map(str, args)])
    return code, buffer.getvalue()


def claims(recording, target: str) -> list:
    code, out = ops_check(recording, "--to", target, "--json")
    assert code == 0, out
    return json.loads(out)["ops"]


@pytest.mark.subprocess
@pytest.mark.parametrize("target,key", [("xpu", "XPU"), ("mps", "MPS")])
def test_every_claim_agrees_with_torch_dispatch_data(dispatch, recording, target, key):
    rows = claims(recording, target)
    assert len(rows) > 100, "an op-rich model"
    calls = recorded_calls(recording)
    assert calls, "the recording names what composite ops' kernels call"
    wrong = {}
    for row in rows:
        expected = truth(dispatch, row["op"], key, calls)
        if row["status"] != expected:
            wrong[row["op"]] = (row["status"], expected)
    assert wrong == {}, f"{target}: claim vs torch's dispatch data"
    said = {row["status"] for row in rows}
    assert {"supported", "composite", "cpu-fallback"} <= said, "the model must make ops check say each of these"
    if target == "mps":
        assert "missing" in said


@pytest.mark.subprocess
@pytest.mark.parametrize("target,key", [("xpu", "XPU"), ("mps", "MPS")])
def test_an_op_with_a_kernel_is_never_missing(dispatch, recording, target, key):
    extra = xpu_data()[0] if key == "XPU" else frozenset()
    for row in claims(recording, target):
        if row["op"] in dispatch.functions and dispatch.has_kernel(row["op"], key, extra):
            assert row["status"] == "supported", row


@pytest.mark.subprocess
def test_kernels_the_cpu_picks_are_checked_as_the_op_the_model_called(recording):
    for target in ("xpu", "mps", "npu", "musa", "mlu"):
        rows = {row["op"]: row for row in claims(recording, target)}
        for op in ("mkldnn_rnn_layer", "mkldnn_rnn_layer_backward", "_scaled_dot_product_flash_attention_for_cpu",
                   "_scaled_dot_product_flash_attention_for_cpu_backward"):
            assert rows[op]["status"] in ("supported", "composite"), (target, rows[op])
            assert rows[op]["asked"] in ("lstm.input", "scaled_dot_product_attention")


def test_the_picked_table_is_what_the_cpu_records():
    """Each cpu entry of kb/op_kernels.toml [picked]: running the op it names on the CPU records the kernel."""
    from torchport.debug.recorder import record_ops

    if not torch.backends.mkldnn.is_available():
        pytest.skip("this torch has no oneDNN: the CPU LSTM does not use mkldnn_rnn_layer")
    with record_ops() as rec:
        out, _ = torch.nn.LSTM(4, 4)(torch.randn(3, 2, 4))
        out.sum().backward()
        q = torch.randn(1, 2, 4, 8, requires_grad=True)
        torch.nn.functional.scaled_dot_product_attention(q, q, q).sum().backward()
    seen = {o["op"].split("::")[1].removesuffix(".default") for o in rec.to_dict()["ops"]}
    picked = tomllib.loads((KB / "op_kernels.toml").read_text())["picked"]
    cpu = {op for op, entry in picked.items() if entry["device"] == "cpu"}
    assert cpu and cpu <= seen, cpu - seen
    aten = json.loads((KB / "ops" / "aten.json").read_text())["ops"]
    for op, entry in picked.items():   # a picked kernel exists on its device only
        keys = aten[op]["dispatch"]
        assert entry["device"].upper() in keys and not aten[op]["composite"], op
        assert all(entry["device"].upper() in k or "Meta" in k for k in keys), (op, keys)


def test_the_dispatch_data_is_the_installed_torch(dispatch):
    """kb/ops/aten.json names the yaml it was made from; that is this torch's, and it agrees with torchgen."""
    aten = json.loads((KB / "ops" / "aten.json").read_text())
    assert torch.__version__.split("+")[0] == aten["torch_version"], "the project pins torch 2.13.0"
    sha = hashlib.sha256((NATIVE / "native_functions.yaml").read_bytes()).hexdigest()
    assert f"sha256={sha}" in aten["source"]
    for key in ("MPS", "XPU", "CPU", "CUDA"):
        ours = {op for op, info in aten["ops"].items() if key in info["dispatch"]}
        theirs = {op for op in dispatch.functions if dispatch.has_kernel(op, key)}
        assert ours == theirs, (key, sorted(ours ^ theirs)[:10])


def test_mps_always_cpu_ops_have_no_mps_kernel_in_that_torch(dispatch):
    data = tomllib.loads((KB / "op_kernels.toml").read_text())["always_cpu"]["MPS"]
    assert data["torch_version"] == torch.__version__.split("+")[0] and data["sources"]
    for op in data["ops"]:
        assert not dispatch.has_kernel(op, "MPS"), op
    for part, whole in data["covers"].items():
        assert whole in data["ops"] and part in dispatch.functions


@pytest.mark.subprocess
def test_the_recorded_torch_version_picks_the_data(recording, tmp_path):
    recorded = json.loads(recording.read_text())
    assert recorded["torch"] == torch.__version__
    code, out = ops_check(recording, "--to", "npu")
    assert f"recorded with torch {torch.__version__}" in out.splitlines()[0]
    assert "data: 2.13.0 (torch 2.13.0)" in out.splitlines()[0] and "note:" not in out   # not the newest (2.14)

    older = tmp_path / "older.json"
    older.write_text(json.dumps({**recorded, "torch": "2.12.1"}))
    for target, data in (("npu", "npu 2.7.1.post11 (torch 2.7.1)"), ("xpu", "torch-xpu-ops release/2.13"),
                         ("mps", None)):
        code, out = ops_check(older, "--to", target)
        note = out.splitlines()[1]
        assert note.startswith("  note:") and "2.12.1" in note and "torch 2.13.0's" in note, out
        assert data is None or data in note
        code, out = ops_check(older, "--to", target, "--json")
        assert json.loads(out)["torch_version"] == "2.12.1"

    unsaid = tmp_path / "unsaid.json"
    unsaid.write_text(json.dumps({k: v for k, v in recorded.items() if k != "torch"}))
    code, out = ops_check(unsaid, "--to", "npu")
    assert "does not say which torch recorded it: using the data for torch 2.14.0" in out


@pytest.mark.subprocess
def test_a_bad_torch_field_is_one_line(recording, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**json.loads(recording.read_text()), "torch": ["2.13"]}))
    assert main(["ops", "check", str(bad), "--to", "mps"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "torch must be a string" in err


def test_a_cpu_fallback_needs_a_cpu_kernel():
    from torchport.backends import load_target
    from torchport.kb.operators import CPU_ONLY, FALLBACK, MISSING, classify, op_list

    npu, mps, xpu = (op_list(load_target(t), "2.13.0") for t in ("npu", "mps", "xpu"))
    assert classify("aten::linalg_eig", npu).status == FALLBACK          # CPU kernel, not in torch_npu's list
    st = classify("aten::_cudnn_ctc_loss", npu)                          # CUDA-only: nothing to fall back to
    assert st.status == MISSING and "no CPU kernel" in st.detail
    for target in (mps, xpu):                                            # only the CPU has one: say so
        assert classify("aten::_add_relu.Tensor", target).status == CPU_ONLY
    assert classify("aten::_add_relu.Tensor", npu).status in ("supported", FALLBACK)
    assert classify("aten::embedding_renorm_", mps).status == FALLBACK
    assert "linalg_svd" in classify("aten::_linalg_svd.U", mps).detail
