"""The line `torchport sim` ends with, when no process started the simulated device: a program that failed
before importing torch is told apart from one that ran without the vendor package."""
from torchport.sim.launch import summary


def merged(exit_code: int) -> dict:
    return {"processes": 0, "fallback_ops": [], "requested": "npu", "exit_code": exit_code}


def test_no_process_after_a_failure_points_at_the_program_not_the_package():
    line = summary(merged(1))
    assert line.startswith("torchport sim: simulated npu (0 processes), exit 1")
    assert "failed before it imported torch_npu" in line and "torchport run --simulate" in line
    assert "did the program import" not in line


def test_no_process_after_success_asks_about_the_vendor_package():
    line = summary(merged(0))
    assert "did the program import the vendor package?" in line and "failed" not in line


def test_a_process_killed_by_a_signal_is_called_a_crash_not_a_missing_package():
    """A SIGSEGV left no report (its atexit never ran): it was a crash, even if it ran on the device for a while."""
    line = summary(merged(-11))
    assert "killed by SIGSEGV" in line and "crash" in line and "imported" not in line


def test_the_line_says_how_many_cpu_threads_the_program_had(monkeypatch):
    """A new user's trial: a simulated run differed from a 2-thread CPU run in the last digits, and nothing said the
    simulated device runs its kernels on one CPU thread unless OMP_NUM_THREADS says otherwise."""
    ran = {"processes": 1, "fallback_ops": [], "device": "npu", "exit_code": 0}
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert summary(ran).startswith("torchport sim: simulated npu (1 process on 1 CPU thread), exit 0")
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert "(1 process on 4 CPU threads)" in summary(ran)
