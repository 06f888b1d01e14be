"""The vendor kernels' dtype limits (kb/sim/dtypes/<target>.toml through torchport.sim.dtypes): their shape, that each
one reaches a kernel the simulator registers, and that a limit holds only on the chips it names.  No torch."""
import pytest

from torchport.backends import load_target
from torchport.kb.operators import aten, op_list
from torchport.sim import dtypes, host_kernels, limited_composites, vendor_composites

SCALAR_TYPES = {"Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double", "ComplexHalf", "ComplexFloat",
                "ComplexDouble", "Bool", "BFloat16"}


def keys_of(op: str, keys) -> list:
    """The op keys a limit's op names (as the extension reads it: name.overload, name.default, or every overload)."""
    name, _, overload = op.partition(".")
    if overload == "default":
        return [k for k in keys if k == name]
    if overload:
        return [k for k in keys if k == op]
    return [k for k in keys if k.partition(".")[0] == name]


@pytest.mark.parametrize("target", ["npu", "mlu", "musa"])
def test_decomposed_ops_are_ones_the_vendor_registers_and_torch_composes(target):
    ops = op_list(load_target(target))
    for op in dtypes.decomposed(target):
        assert op in vendor_composites(ops), op


@pytest.mark.parametrize("target", ["npu", "mlu", "musa"])
def test_every_limit_is_well_formed_and_reaches_a_simulated_kernel(target):
    rows = dtypes.limits(target)
    ops = op_list(load_target(target))
    limited = [(op,) for row in rows for op in row["ops"]]
    whole = sorted(set(vendor_composites(ops)) - set(dtypes.decomposed(target)))   # run whole, checking the limit
    kernels = host_kernels(ops) + limited_composites(ops, limited) + whole + list(dtypes.OWN_KERNELS)
    for row in rows:
        assert set(row["allowed"]) <= SCALAR_TYPES, row["ops"]
        assert row["message"].strip(), row["ops"]
        assert row["source"].split()[0].count("/") == 1, f"{row['ops']}: a source starts with the repo (owner/name)"
        for op in row["ops"]:
            assert op.partition(".")[0] in {k.partition(".")[0] for k in aten()["ops"]}, f"{op}: not an aten op"
            assert keys_of(op, kernels), f"{target} {op}: no kernel the simulator registers takes this limit"


def test_chips_select_limits(tmp_path, monkeypatch):
    (tmp_path / "musa.toml").write_text('''target = "musa"
[[limit]]
ops = ["cumsum"]
argument = "self"
allowed = ["Float"]
message = "no {dtype}"
source = "a/b c.cpp:1"
chips = ["MTT S8*"]
''')
    monkeypatch.setattr(dtypes, "FOLDER", tmp_path)
    assert dtypes.for_device("musa", "MTT S80") == [("cumsum", "self", ["Float"], "no {dtype}", False)]
    assert dtypes.for_device("musa", "MTT S4000") == []


@pytest.mark.parametrize("text,error", [
    ('target = "mlu"\n', "target is 'mlu'"),
    ('target = "musa"\n[[limit]]\nops = ["cumsum"]\n', "no argument"),
    ('target = "musa"\n[[limit]]\nops=["a"]\nargument="self"\nallowed=["Float"]\nmessage="m"\nsource="s"\nerror="KeyError"\n',
     "error must be"),
    ('target = "musa"\n[[limit]]\nops=["a"]\nargument="self"\nallowed=["Float"]\nmessage="m"\nsource="s"\nwhy="x"\n',
     "unknown fields"),
])
def test_a_malformed_file_is_refused(tmp_path, monkeypatch, text, error):
    (tmp_path / "musa.toml").write_text(text)
    monkeypatch.setattr(dtypes, "FOLDER", tmp_path)
    with pytest.raises(ValueError, match=error):
        dtypes.for_device("musa", "MTT S4000")


def test_two_limits_for_one_op_on_one_chip_are_refused(tmp_path, monkeypatch):
    row = '[[limit]]\nops=["cumsum"]\nargument="self"\nallowed=["Float"]\nmessage="m"\nsource="a/b c:1"\n'
    (tmp_path / "musa.toml").write_text('target = "musa"\n' + row + row)
    monkeypatch.setattr(dtypes, "FOLDER", tmp_path)
    with pytest.raises(ValueError, match="two dtype limits for cumsum"):
        dtypes.for_device("musa", "MTT S4000")
