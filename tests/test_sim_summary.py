"""The line `torchport sim` ends with, when no process started the simulated device: a program that failed
before importing torch is told apart from one that ran without the vendor package."""
from torchport.sim.launch import summary


def merged(exit_code: int) -> dict:
    return {"processes": 0, "fallback_ops": [], "requested": "npu", "exit_code": exit_code}


def test_no_process_after_a_failure_points_at_the_program_not_the_package():
    line = summary(merged(1))
    assert line.startswith("torchport sim: simulated npu (0 processes), exit 1")
    assert "failed before it imported torch" in line and "did the program import" not in line


def test_no_process_after_success_asks_about_the_vendor_package():
    line = summary(merged(0))
    assert "did the program import the vendor package?" in line and "failed" not in line
