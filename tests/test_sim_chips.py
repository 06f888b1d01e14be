"""The simulated devices' vendor facts (kb/sim/chips.toml through torchport.sim.chips): chips, the vendors' bf16
and autocast-dtype rules, visible-device parsing, allocator sizes.  No torch, no process."""
import pytest

from torchport.core.errors import UsageError
from torchport.sim import chips


def test_every_target_has_a_default_chip_and_every_chip_says_where_its_values_come_from():
    for target in ("npu", "mlu", "musa"):
        d = chips.device(target)
        assert d.name in chips.chip_names(target)
        assert d.total_memory > 0 and len(d.allocator()) == 7
        for name in chips.chip_names(target):
            assert chips.device(target, name).chip["source"]


def test_an_unknown_chip_lists_the_chips():
    with pytest.raises(UsageError, match="unknown mlu chip 'MLU999'.*MLU370-X8, MLU590"):
        chips.device("mlu", "MLU999")


@pytest.mark.parametrize("target,chip,bf16,emulated,amp", [
    ("npu", "Ascend910B2", True, True, ["float16", "bfloat16", "float32"]),   # SoC 221 >= Ascend910B1 (220)
    ("npu", "Ascend910A", False, False, ["float16", "float32"]),              # SoC 102
    ("mlu", "MLU370-X8", False, False, ["float16", "bfloat16"]),               # major 3 < 5; the amp list keeps bf16
    ("mlu", "MLU590", True, True, ["float16", "bfloat16"]),
    ("musa", "MTT S4000", True, True, ["float16", "bfloat16"]),                # MP 2.2
    ("musa", "MTT S80", False, True, ["float16", "bfloat16"]),                 # MP 2.1: True only with emulation
])
def test_the_vendors_bf16_rule_per_chip(target, chip, bf16, emulated, amp):
    d = chips.device(target, chip)
    assert d.bf16_supported(including_emulation=False) is bf16
    assert d.bf16_supported() is emulated
    assert d.amp_dtypes() == amp


def test_property_fields_are_the_vendors_binding():
    npu = chips.device("npu").property_values()
    assert npu["major"] is None and npu["multi_processor_count"] == npu["vector_core_num"]
    mlu = chips.device("mlu").property_values()
    assert mlu["multi_processor_count"] == mlu["cluster_count"] * mlu["core_num_per_cluster"]
    assert set(chips.device("musa").property_values()) == {"name", "major", "minor", "is_multi_gpu_board",
                                                           "is_integrated", "multi_processor_count", "total_memory"}


@pytest.mark.parametrize("target,environ,count", [
    ("npu", {}, 4),
    ("npu", {"ASCEND_RT_VISIBLE_DEVICES": "1"}, 1),
    ("npu", {"ASCEND_RT_VISIBLE_DEVICES": "0,2"}, 2),
    ("npu", {"ASCEND_RT_VISIBLE_DEVICES": "1,0"}, 0),      # not ascending: no device
    ("npu", {"ASCEND_RT_VISIBLE_DEVICES": "0,a,1"}, 1),    # reading stops at the first other character
    ("npu", {"ASCEND_RT_VISIBLE_DEVICES": "2,7"}, 1),      # the list stops at the first device not there
    ("npu", {"ASCEND_RT_VISIBLE_DEVICES": ""}, 0),
    ("mlu", {"MLU_VISIBLE_DEVICES": "3,1"}, 2),            # any order
    ("mlu", {"MLU_VISIBLE_DEVICES": "1,1"}, 0),            # a repeated id: no device
    ("mlu", {"CN_VISIBLE_DEVICES": "0", "MLU_VISIBLE_DEVICES": "0,1"}, 1),   # CN_VISIBLE_DEVICES first
    ("mlu", {"CUDA_VISIBLE_DEVICES": "0,1,2"}, 3),         # then CUDA_VISIBLE_DEVICES
    ("musa", {"MUSA_VISIBLE_DEVICES": "0,-1,2"}, 1),       # a negative id ends the list
    ("musa", {"ASCEND_RT_VISIBLE_DEVICES": "0"}, 4),       # another vendor's variable changes nothing
])
def test_visible_devices_as_the_vendor_parses_them(target, environ, count):
    assert chips.visible_count(target, 4, environ) == count


def test_allocator_sizes_follow_the_vendor():
    assert chips.device("npu").allocator()[0] == 32      # torch_npu pads 32 bytes before rounding
    assert chips.device("mlu").allocator() == (0, 512, 1 << 20, 2 << 20, 10 << 20, 20 << 20, 2 << 20)
