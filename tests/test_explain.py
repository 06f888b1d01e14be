"""torchport explain: every known message is recognised, in a log full of noise too, and so are real
messages from public issue threads (tests/data/real_errors.toml); unknown errors get the nearest known
ones only when they are similar enough, and text that resembles no entry gets no guess."""
import json
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

from torchport.backends import available_targets
from torchport.core.tomlfile import tomllib
from torchport.doctor.explain import MIN_SIMILARITY, _nearest, explain, known_errors

ENTRIES = known_errors()
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
REAL = tomllib.loads((ROOT / "tests" / "data" / "real_errors.toml").read_text(encoding="utf-8"))
MESSAGES, UNRELATED = REAL["message"], REAL["unrelated"]
# words that belong to a session or a draft, not to advice for a user
INTERNAL = re.compile(r"\bseed\b|\bTODO\b|\bFIXME\b|\bwe\b|\bour\b|\bus\b|§", re.IGNORECASE)
OOM = {"any-device-out-of-memory", "npu-caching-allocator-oom", "mps-out-of-memory"}


def test_the_data_is_sound():
    ids = [e.id for e in ENTRIES]
    assert len(ids) == len(set(ids)) and len(ids) >= 60
    targets = set(available_targets()) | {"any"}
    for e in ENTRIES:
        assert e.target in targets and e.source and e.cause and e.fix and e.title and e.confidence in ("documented", "weak")
        for field in (e.title, e.cause, e.fix, e.source):
            assert not INTERNAL.search(field), (e.id, INTERNAL.search(field).group())
        # a source names a document (guide, manual, notes, torch's own file), a public thread or torchport's own code
        assert re.search(r"https://|guide|manual|notes|torch \d|torchport's own message \(src/", e.source), (e.id, e.source)
        # each pattern matches the entry's example or a real message the entry is cited for (another wording)
        cited = [e.example] + [m["text"] for m in MESSAGES if m["expect"] == e.id]
        assert all(any(rx.search(text) for text in cited) for rx in e.regexes), e.id
        for other in ENTRIES:
            if other is not e:
                assert not any(rx.search(other.example) for rx in e.regexes), f"{e.id} also matches {other.id}"
    required = {"npu-exchange-device", "npu-helpaclexecute", "npu-libhccl-missing", "npu-op-not-implemented",
                "musa-libmudnn-missing", "musa-extension-impl-not-found", "mlu-kernel-device-mismatch",
                "any-torch-not-compiled-cuda"}
    assert required <= set(ids)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_each_known_message_is_explained(entry):
    matches, nearest = explain(entry.example)
    assert [m.error.id for m in matches] == [entry.id] and nearest == []


@pytest.mark.subprocess
def test_a_log_with_one_error_among_noise(tmp_path):
    noise = [f"epoch {i} step {j} loss {0.5 / (j + 1):.4f} lr 0.01" for i in range(3) for j in range(40)]
    log = noise[:70] + ["Traceback (most recent call last):", '  File "train.py", line 12, in <module>',
                        "    import torch_musa",
                        "ImportError: libmudnn.so.1: cannot open shared object file: No such file or directory"] + noise[70:]
    path = tmp_path / "train.log"
    path.write_text("\n".join(log) + "\n")
    matches, _ = explain(path.read_text())
    assert [(m.error.id, m.line) for m in matches] == [("musa-libmudnn-missing", 74)]
    p = subprocess.run([sys.executable, "-m", "torchport", "explain", "--file", str(path)], capture_output=True,
                       text=True, env=ENV)
    assert p.returncode == 0 and "muDNN library not found" in p.stdout and "(line 74)" in p.stdout
    assert "export LD_LIBRARY_PATH" in p.stdout and "Torch_MUSA developer manual" in p.stdout


TWO_FAILURES = """epoch 1 loss 0.5
[rank0]: Traceback (most recent call last):
[rank0]:   File "train.py", line 12, in <module>
[rank0]:     import torch_musa
[rank0]: ImportError: libmudnn.so.1: cannot open shared object file: No such file or directory
Traceback (most recent call last):
  File "train.py", line 12, in <module>
    import torch_musa
ImportError: libmudnn.so.1: cannot open shared object file: No such file or directory
Traceback (most recent call last):
  File "eval.py", line 40, in <module>
    x = model(y)
[rank3]: ValueError: shapes (3,4) and (5,6) not aligned
done
"""


@pytest.mark.subprocess
def test_a_log_with_two_failures_names_both(tmp_path):
    """Before: the known error's first line only, and nothing of the ValueError that also ended the run."""
    from torchport.doctor.explain import unexplained

    matches, _ = explain(TWO_FAILURES)
    assert [(m.error.id, m.line, m.also) for m in matches] == [("musa-libmudnn-missing", 5, (9,))]
    assert unexplained(TWO_FAILURES, matches) == [(13, "[rank3]: ValueError: shapes (3,4) and (5,6) not aligned")]
    assert len(unexplained(TWO_FAILURES, [])) == 3, "each exception line, explained by nothing"
    path = tmp_path / "run.log"
    path.write_text(TWO_FAILURES)
    p = subprocess.run([sys.executable, "-m", "torchport", "explain", "--file", str(path)], capture_output=True,
                       text=True, env=ENV)
    assert p.returncode == 0 and "(line 5; also at 9)" in p.stdout, p.stdout
    assert "not explained: 1 other exception line" in p.stdout and "line 13: [rank3]: ValueError" in p.stdout
    p = subprocess.run([sys.executable, "-m", "torchport", "explain", "--file", str(path), "--json"],
                       capture_output=True, text=True, env=ENV)
    data = json.loads(p.stdout)
    assert data["matches"][0]["also"] == [9] and [u["line"] for u in data["unexplained"]] == [13]


def test_a_match_inside_a_traceback_explains_the_exception_that_ends_it():
    """A known message found on a line of a traceback (a warning, a C++ frame) explains the exception line that
    ends that traceback, not the one of the next traceback."""
    from torchport.doctor.explain import Match, unexplained

    text = "Traceback (most recent call last):\n  File 'a.py'\nknown words here\nRuntimeError: x\n" \
           "Traceback (most recent call last):\n  File 'b.py'\nRuntimeError: y\n"
    assert unexplained(text, [Match(ENTRIES[0], 3, "known words here")]) == [(7, "RuntimeError: y")]
    assert unexplained(text, [Match(ENTRIES[0], 6, "File 'b.py'")]) == [(4, "RuntimeError: x")]


# ------------------------------------------------------------------ real messages from issue threads
def test_the_real_corpus_is_wide():
    assert len(MESSAGES) >= 30 and len({m["text"] for m in MESSAGES}) == len(MESSAGES)
    repos = {"/".join(m["source"].split("/")[3:5]) for m in MESSAGES}
    assert {"Ascend/pytorch", "MooreThreads/torch_musa", "intel/torch-xpu-ops", "pytorch/pytorch"} <= repos
    assert len(repos) >= 10


@pytest.mark.parametrize("msg", MESSAGES, ids=lambda m: f"{m['expect']}:{m['source'].rsplit('/', 1)[-1]}")
def test_each_real_message_is_recognised(msg):
    matches, _ = explain(msg["text"])
    assert matches and matches[0].error.id == msg["expect"], [m.error.id for m in matches]
    entry = matches[0].error
    # the thread is cited by the entry that explains it (a URL ends where its number ends)
    assert re.search(re.escape(msg["source"]) + r"(?!\d)", entry.source), (entry.id, msg["source"])


@pytest.mark.parametrize("msg", UNRELATED, ids=lambda m: m["text"][:40])
def test_unrelated_messages_get_no_match_and_no_confident_guess(msg):
    """No entry of kb/errors.toml explains these.  An HCCL line with its return code is explained by that code
    alone (kb/error_families.toml, hccl_types.h: what HCCL returned, and where the cause is written), and torch_npu's
    ERRmmccc code by what its tables say of it (kb/acl_codes.json "pta"); one without a code gets nothing."""
    matches, nearest = explain(msg["text"])
    from torchport.doctor.families import _acl_codes

    code = re.search(r"hccl[^\n]*error code is (\d+)", msg["text"], re.IGNORECASE) if msg["kind"] == "hccl" else None
    acl = re.search(r"error code is (\d{6})", msg["text"])
    pta = re.search(r"\bERR(\d{5})\b", msg["text"])
    expected = [f"family:hccl-{code.group(1)}"] if code else \
        [f"family:acl-{acl.group(1)}"] if acl and acl.group(1) in _acl_codes()["codes"] else \
        [f"family:pta-ERR{pta.group(1)}"] if pta else []
    assert [m.error.id for m in matches] == expected and nearest == [], \
        [(m.error.id, m.score) for m in matches + nearest]


def test_unrelated_hccl_and_stream_errors_do_not_rank_out_of_memory_first():
    """Below the threshold too: the ranking itself must not put out-of-memory first for a communication or
    stream error that merely shares 'RuntimeError', 'NPU', 'error code' and a source path with it."""
    hccl = [m["text"] for m in UNRELATED if m["kind"] == "hccl"]
    assert len(hccl) >= 8
    for text in hccl:
        first = _nearest(text.splitlines(), list(ENTRIES), 3)[0]
        assert first.error.id not in OOM, (text, first.error.id, first.score)


def test_the_threshold_separates_unrelated_from_related_messages():
    """The calibration behind MIN_SIMILARITY: every unrelated message scores under it against every entry,
    and real messages of a known kind, worded differently from their entry's example, mostly reach it with
    their own entry first (found by similarity alone, as if no pattern matched them)."""
    unrelated = max(_nearest(m["text"].splitlines(), list(ENTRIES), 1)[0].score for m in UNRELATED)
    assert unrelated < MIN_SIMILARITY
    examples = {e.id: e.example for e in ENTRIES}
    related = [m for m in MESSAGES if m["text"] != examples[m["expect"]]]
    found = [m for m in related
             if (best := _nearest(m["text"].splitlines(), list(ENTRIES), 1)[0]).error.id == m["expect"]
             and best.score >= MIN_SIMILARITY]
    assert len(related) >= 25 and len(found) >= 16, len(found)


@pytest.mark.subprocess
def test_unknown_errors_get_the_nearest_known_ones():
    # a stream error in other words: no pattern matches it, its entry is the nearest guess (a return code
    # torch_npu's table does not name: kb/acl_codes.json would explain a known one)
    text = "RuntimeError: synchronize: NPU function error: AclrtSynchronizeStream(stream()), error code is 507999"
    matches, nearest = explain(text)
    assert matches == [] and nearest and nearest[0].error.id == "npu-stream-sync-failed"
    assert all(m.score >= MIN_SIMILARITY for m in nearest) and nearest[0].score >= nearest[-1].score
    p = subprocess.run([sys.executable, "-m", "torchport", "explain", text], capture_output=True, text=True, env=ENV)
    assert p.returncode == 1 and "the nearest known ones" in p.stdout and "[npu-stream-sync-failed]" in p.stdout
    p = subprocess.run([sys.executable, "-m", "torchport", "explain", "--json", "something odd happened: error 42"],
                       capture_output=True, text=True, env=ENV)
    data = json.loads(p.stdout)
    assert p.returncode == 1 and data["known"] is False and data["matches"] == []
    p = subprocess.run([sys.executable, "-m", "torchport", "explain", "The quick brown fox jumps over the lazy dog."],
                       capture_output=True, text=True, env=ENV)
    assert p.returncode == 1 and "no known error is similar" in p.stdout


@pytest.mark.subprocess
def test_target_filter_and_bad_input():
    nccl = "RuntimeError: Distributed package doesn't have NCCL built in"
    assert [m.error.id for m in explain(nccl, target="npu")[0]] == ["any-nccl-not-built"]
    only_mlu = explain("RuntimeError: ExchangeDevice:", target="mlu")[0]
    assert only_mlu == []
    p = subprocess.run([sys.executable, "-m", "torchport", "explain"], capture_output=True, text=True, env=ENV)
    assert p.returncode == 2 and "nothing to explain" in p.stderr
    p = subprocess.run([sys.executable, "-m", "torchport", "explain", "--file", "/nonexistent.log"],
                       capture_output=True, text=True, env=ENV)
    assert p.returncode == 2 and "cannot read" in p.stderr
    assert not re.search("Traceback", p.stderr)


@pytest.mark.parametrize("text, expected, vendor", [
    ("ImportError: libascend_hal.so: cannot open shared object file: No such file or directory",
     "library:libascend_hal", "npu"),
    ("OSError: libatb.so: cannot open shared object file: No such file or directory", "library:libatb", "npu"),
    ("ImportError: libcnnl.so.1: cannot open shared object file: No such file or directory", "library:libcnrt", "mlu"),
    ("OSError: libmupti.so.0.9: cannot open shared object file: No such file or directory", "musa-sdk-library-missing",
     "musa"),   # an entry of kb/errors.toml (the Torch_MUSA manual's) explains it before the family
    ("OSError: libccl.so.1: cannot open shared object file: No such file or directory", "library:libsycl", "xpu"),
    ("import torch_musa\nOSError: libtorch_cuda.so: cannot open shared object file: No such file or directory",
     "library:libcudart", "any"),
    ("OSError: libfoo_bar.so.3: cannot open shared object file: No such file or directory", "library:unknown", "any"),
    ("RuntimeError: PyTorch is not linked with support for xpu devices", "family:not-linked-xpu", "xpu"),
    ("ERROR! Intel Extension for PyTorch needs to work with PyTorch 2.5.*, but PyTorch 2.4.1 is found.",
     "family:ipex-torch-version", "xpu"),
    ("Warning: The operator 'aten::isin.Tensor_Tensor_out' is not currently supported on the NPU backend and will "
     "fall back to run on the CPU. This may have performance implications.", "family:cpu-fallback", "npu"),
])
def test_families_name_the_vendor_package_and_never_another_vendors_fix(text, expected, vendor):
    """issue 32 item 11: every missing library was answered with the MUSA SDK's fix; the families read the
    library's owner, a device type torch lacks, IPEX's torch, a CPU-fallback warning (kb/error_families.toml)."""
    matches, _nearest_ = explain(text)
    assert [m.error.id for m in matches] == [expected] and matches[0].error.target == vendor
    if vendor not in ("musa", "any"):
        assert "musa" not in (matches[0].error.cause + matches[0].error.fix).lower()


def test_a_guess_never_comes_from_another_vendors_entries():
    """A log that names one vendor's stack gets nearest guesses from that vendor's entries (or any vendor's)
    only: the held-out set's wrong-vendor answers were guesses of MUSA entries for Ascend and Intel logs."""
    text = ("[rank0]: torch_npu/csrc/core/npu/NPUException.cpp:200 NPU function error: something the kb never saw, "
            "shared object file version memory device driver toolkit library missing")
    _matches, nearest = explain(text)
    assert all(m.error.target in ("npu", "any") for m in nearest), [(m.error.id, m.error.target) for m in nearest]


def test_an_acl_return_code_is_read_from_torch_npus_own_table():
    """issue 32 item 11: ACL/runtime return codes (507xxx, 207xxx, 107xxx...) mean what torch_npu's map says
    (kb/acl_codes.json, extracted by tools/extract_error_codes.py), with where the detail is written."""
    matches, _ = explain("RuntimeError: synchronize: NPU function error: AclrtSynchronizeStream(stream()), "
                         "error code is 207018")
    assert [m.error.id for m in matches] == ["family:acl-207018"]
    assert "memory on the device is exhausted" in matches[0].error.title
    assert "NPUErrorCodes.h" in matches[0].error.source


def test_an_undefined_symbol_in_a_vendor_library_is_a_release_mismatch_not_a_missing_file():
    text = ("ImportError: /opt/venv/lib/python3.10/site-packages/torch_mlu/csrc/lib/libtorch_mlu.so: undefined symbol: "
            "_ZN3c1010TensorTypeC1Ev")
    matches, _ = explain(text)
    assert [m.error.id for m in matches] == ["symbol:torch"]
    assert "built against another release" in matches[0].error.title and "missing" not in matches[0].error.title


@pytest.mark.parametrize("symbol, owner", [
    ("aclnnFlashAttentionVarLenScore", "symbol:cann"), ("MsprofSysCycleTime", "symbol:cann-profiler"),
    ("_ZN3atb9OperationD2Ev", "symbol:nnal"), ("_ZN5torch8autograd4NodeD2Ev", "npu-torch-npu-version-mismatch"),
    ("cnnlGetBatchMatMulAlgo_v3", "symbol:neuware"), ("_ZN4musa3dnn6Tensor7SetTypeENS1_4TypeE", "symbol:musa-sdk"),
])
def test_an_undefined_symbol_is_answered_by_who_defines_it(symbol, owner):
    """A library that was found but calls a symbol the installed release of its dependency lacks: the dependency is
    named from the symbol (a CANN API, CANN's profiler, NNAL, torch, Neuware, the MUSA SDK), not assumed to be torch."""
    matches, _ = explain(f"ImportError: /venv/site-packages/pkg/lib/libtorch_npu.so: undefined symbol: {symbol}")
    assert matches[0].error.id == owner, [m.error.id for m in matches]
    assert symbol in matches[0].error.title or owner == "npu-torch-npu-version-mismatch"


def test_every_cann_code_is_answered_from_its_registry_with_its_module():
    """issue 32 item 11: CANN's codes (E + module + 4 digits) are read from CANN's own registries
    (kb/cann_codes.json); each gets its module's name and advice, and its title's hint."""
    import json

    from torchport.doctor.families import CANN_CODES, _data

    codes = json.loads(CANN_CODES.read_text(encoding="utf-8"))["codes"]
    assert len(codes) > 500 and {"EE1001", "EI0006", "EL0004", "EZ9999", "E10001"} <= set(codes)
    modules = _data()["cann"]["modules"]
    unanswered = []
    for code in codes:
        assert code[1] in modules, code
        matches, _ = explain(f"{code}: [PID: 1] 2026-01-01-10:00:00.000.000 something failed")
        if not matches or matches[0].error.id != f"family:cann-{code}":
            unanswered.append((code, [m.error.id for m in matches]))
    # only codes a kb/errors.toml entry explains first (the thread-backed answer) are not answered by the family
    assert all(ids and not ids[0].startswith("family:") for _code, ids in unanswered), unanswered[:5]
    matches, _ = explain("EL0004: Failed to allocate memory requested by HCCL module.")
    error = matches[0].error
    assert error.id == "family:cann-EL0004" and "NPU driver" in error.title and "lower the batch size" in error.fix
    assert "Failed to allocate memory requested by %s module." in error.cause and "error_code.json" in error.source


def test_an_internal_cann_code_quotes_the_line_that_says_more_than_its_header():
    log = ("EZ9999: Inner Error!\n"
           "EZ9999: [PID: 4242] 2025-03-01-08:00:00.123.456 Tiling of Foo failed for shape [3, 0].\n"
           "EZ9999: [PID: 4242] 2025-03-01-08:00:00.123.456 Tiling of Foo failed for shape [3, 0].")
    matches, _ = explain(log)
    assert [m.error.id for m in matches] == ["family:cann-EZ9999"], [m.error.id for m in matches]
    assert '"Tiling of Foo failed for shape [3, 0]."' in matches[0].error.cause


def test_torch_npus_err_code_points_to_the_cann_code_which_comes_first():
    """torch_npu's ERR00100 says only that an ACL call failed: with CANN codes in the log, their answer comes
    first (CANN's troubleshooting guide: read the first CANN code) and ERR00100's names them."""
    log = ("[ERROR] 2026-07-21-14:15:02 (PID:1, Device:7, RankID:-1) ERR00100 PTA call acl api failed\n"
           "EE1001: [PID: 1] 2026-07-21-14:15:02.000.000 The argument is invalid. Reason: Invalid device ID 8.")
    matches, _ = explain(log)
    assert [m.error.id for m in matches] == ["family:cann-EE1001", "family:pta-ERR00100"]
    assert "EE1001 at line 2" in matches[1].error.cause and "Ascend runtime" in matches[0].error.title
    alone, _ = explain(log.splitlines()[0])
    assert [m.error.id for m in alone] == ["family:pta-ERR00100"] and "call acl api failed" in alone[0].error.title


def test_an_acl_meaning_printed_without_its_code_is_read_back_to_the_code():
    matches, _ = explain("[Error]: The aicore execution is abnormal.\nRectify the fault based on the error information")
    assert [m.error.id for m in matches] == ["family:acl-507015"]


def test_ascends_codes_are_not_read_in_another_vendors_log():
    text = "torch_mlu/csrc/framework/core/device.cpp: CNRT error E10001 ERR00100 error code is 507015"
    matches, _ = explain(text)
    assert not [m.error.id for m in matches if m.error.target == "npu"], [m.error.id for m in matches]


@pytest.mark.parametrize("text, expected, vendor, words", [
    ("RuntimeError: CNNL error: CNNL_STATUS_BAD_PARAM", "family:status-cnnl", "mlu", "refused an argument"),
    ("RuntimeError: CNRT error: invalid device ordinal", "family:status-cnrt", "mlu", "beyond the MLUs"),
    ("RuntimeError: CNCL error in: /src/pg.cpp:61, unhandled system error", "family:status-cncl", "mlu", "system call"),
    ("RuntimeError: forward MUDNN failed in: Run Conv", "family:status-mudnn", "musa", "refused to run"),
    ("RuntimeError: MUSA error: no kernel image is available for execution on the device", "family:status-musa-runtime",
     "musa", "another GPU architecture"),
    ("RuntimeError: Native API failed. Native API returns: -45 (PI_ERROR_INVALID_BINARY)", "family:status-sycl", "xpu",
     "another GPU"),
    ("NotImplementedError: Could not run 'aten::_foo' with arguments from the 'XPU' backend.", "family:no-kernel", "xpu",
     "no kernel for xpu"),
    ("NotImplementedError: Could not run 'aten::_foo' with arguments from the 'MPS' backend.", "family:no-kernel", "mps",
     "PYTORCH_ENABLE_MPS_FALLBACK"),
    ("import torch_mlu\nRuntimeError: \"bitwise_and_mlu\" not implemented for 'Float'", "family:no-dtype", "mlu",
     "not built for Float"),
    ("RuntimeError: Failed to load the backend extension: torch_mlu. You can disable extension auto-loading with "
     "TORCH_DEVICE_BACKEND_AUTOLOAD=0.", "family:backend-autoload", "mlu", 'python -c "import torch_mlu"'),
    ("RuntimeError: ('torch version must not be less than v2.7.1 when using torch_musa,', ' but now torch version is "
     "2.5.0')", "family:vendor-torch-version", "musa", "built for another torch"),
    ("Warning: CANN package version 8.0.RC1 and PyTorch version 2.5.1 do not match. Please check the README of the "
     "Ascend PyTorch repo.", "family:cann-torch-npu-pair", "npu", "version table"),
])
def test_a_vendor_librarys_status_is_read_from_torchs_message(text, expected, vendor, words):
    """issue 32 item 11: the statuses torch_mlu, torch_musa and torch's XPU backend print (CNNL_STATUS_*, CNRT/CNCL
    errors, muDNN failures, the MUSA runtime's strings, PI/UR/ZE errors) and torch's own messages with a parameter
    (an op without a kernel for a backend or a dtype) are answered from kb/error_families.toml, for their vendor."""
    matches, _ = explain(text)
    error = matches[0].error
    assert error.id == expected and error.target == vendor, [(m.error.id, m.error.target) for m in matches]
    assert words in error.title + error.cause + error.fix
    others = {"npu": "ascend", "mlu": "cambricon", "musa": "moore threads", "xpu": "intel"}
    assert not [o for v, o in others.items() if v != vendor and o in (error.cause + error.fix).lower()]



@pytest.mark.parametrize("text, expected, words", [
    ("torch.OutOfMemoryError: XPU out of memory. Tried to allocate 192.00 MiB. GPU 3 has a total capacity of 31.89 GiB "
     "of which 13.22 GiB is free.", "family:oom-with-free-memory", "not used up"),
    ("RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 29.50 GiB total capacity; 3.1 GiB already "
     "allocated; 20.4 GiB free; 4.0 GiB reserved in total by PyTorch)", "family:oom-with-free-memory", "fragmentation"),
    ("RuntimeError: Current platform can NOT allocate memory block with size larger than 4GB! Tried to allocate "
     "6.00 GiB (GPU  0; 15.56 GiB total capacity)", "family:one-block-limit", "by design"),
    ("RuntimeError: call aclnnMatmul failed, detail:EZ1001: [PID: 1] 2024-01-01-00:00:00 self not implemented for "
     "DT_BF16, should be in dtype support list [DT_FLOAT16,DT_FLOAT]", "family:cann-dtype", "Matmul does not take BF16"),
])
def test_a_messages_own_parameters_refine_the_entry_that_matches_it(text, expected, words):
    """An out-of-memory error with more memory free than asked for is not exhaustion, a platform's limit on one
    block is not a lack of memory, and a CANN operator naming the dtype it refuses is not a missing kernel
    package: the message's parameters replace the entry's general answer for that line."""
    matches, _ = explain(text)
    assert [m.error.id for m in matches] == [expected], [m.error.id for m in matches]
    assert words in matches[0].error.title + matches[0].error.cause


def test_an_out_of_memory_error_that_used_the_memory_up_keeps_its_entry():
    matches, _ = explain("torch.OutOfMemoryError: XPU out of memory. Tried to allocate 16.00 MiB. GPU 0 has a total "
                         "capacity of 11.93 GiB of which 7.61 MiB is free.")
    assert [m.error.id for m in matches] == ["any-device-out-of-memory"]


def test_a_warning_comes_after_the_error_the_log_ends_with():
    """A CPU-fallback warning printed before the real error was the first answer; a warning is listed after the
    errors."""
    log = ("[W compiler_depend.ts:51] Warning: CAUTION: The operator 'aten::isin.Tensor_Tensor_out' is not currently "
           "supported on the NPU backend and will fall back to run on the CPU. This may have performance implications.\n"
           "RuntimeError: NPU function error: AclrtSynchronizeStream(stream()), error code is 207018")
    matches, _ = explain(log)
    assert [m.error.id for m in matches] == ["family:acl-207018", "family:cpu-fallback"]


def test_a_log_that_names_no_vendor_gets_no_vendors_guess():
    """issue 32: no wrong-vendor answers: a guess comes from the entries of a vendor the log names, or from entries
    for any vendor."""
    _matches, nearest = explain("ModuleNotFoundError: No module named 'some_adapter.contrib' while importing the plugin "
                                "wrapper for the device; shared object file version library missing driver toolkit")
    assert all(m.error.target == "any" for m in nearest), [(m.error.id, m.error.target) for m in nearest]


def test_a_dcmi_return_code_is_read_from_the_drivers_header():
    matches, _ = explain("npu-smi info\ndcmi model initialized failed, because the device is used. ret is -8020")
    assert [m.error.id for m in matches] == ["family:dcmi-8020"]
    assert "RESOURCE_OCCUPIED" in matches[0].error.title and "another process" in matches[0].error.cause
    assert "dcmi_interface_api.h" in matches[0].error.source


@pytest.mark.parametrize("text, expected, words", [
    ("ModuleNotFoundError: No module named 'flash_attn'", "package:flash_attn", "scaled_dot_product_attention"),
    ("ModuleNotFoundError: No module named 'vllm_ascend'", "package:vllm_ascend", "version table"),
    ("AttributeError: module 'torch_npu' has no attribute 'npu_moe_gating_top_k'", "family:vendor-api-missing",
     "another release"),
    ("ImportError: cannot import name 'npu_format_cast' from 'torch_npu.contrib'", "family:vendor-api-missing",
     "pip show torch_npu"),
    ("csrc/ops.cpp:3:10: fatal error: cnrt.h: No such file or directory", "header:mlu", "NEUWARE_HOME"),
    ("kernel.cu:1:10: fatal error: cuda_runtime.h: No such file or directory", "header:cuda", "torchport port-ext"),
    ("/usr/bin/ld: libmlu_ext.a(ops.o): undefined reference to `cnrtQueueSync'", "link:neuware", "link line"),
    ("torch._dynamo.exc.Unsupported: call_function UserDefinedObjectVariable(Foo) [] {}", "family:compile-failed",
     "enforce-eager"),
    ("RuntimeError: failed to initialize MUSA: system has unsupported display driver / musa driver combination",
     "family:status-musa-runtime", "not a pair"),
    ("torch.OutOfMemoryError: XPU out of memory. Tried to allocate 6.00 GiB. GPU 0 has a total capacity of 15.11 GiB "
     "of which 2.00 GiB is free.", "family:xpu-large-allocation", "UR_L0_ENABLE_RELAXED_ALLOCATION_LIMITS"),
])
def test_who_owns_what_a_build_or_an_import_is_missing(text, expected, words):
    """A Python package, a vendor API, a C header, a symbol at link time, a compile backend, a runtime's init:
    each answered by who owns it (kb/error_families.toml [[package]], [[header]], [[symbol]]), with its fix."""
    matches, _ = explain(text)
    assert matches[0].error.id == expected, [m.error.id for m in matches]
    assert words in matches[0].error.cause + matches[0].error.fix


def test_a_log_inside_a_json_body_is_read_as_lines():
    import json

    body = json.dumps({"detail": "RuntimeError: x\nEE1001: [PID: 1] The argument is invalid. Reason: bad\nmore\nmore"})
    matches, _ = explain("HTTP 500: " + body)
    assert [m.error.id for m in matches] == ["family:cann-EE1001"] and matches[0].line == 2


@pytest.mark.parametrize("text, expected, words", [
    ("AttributeError: module 'triton.language.extra.cann.libdevice' has no attribute 'pow'",
     "family:triton-api-missing", "not releases made for each other"),
    ("RuntimeError: The server socket has failed to listen on any local network address. port: 29500, code: -98, "
     "name: EADDRINUSE, message: address already in use", "family:port-taken", "MASTER_PORT"),
    ("[HCCL] [HcclSocket][Listen] socket listen on ip[10.0.0.1] and port[60000] fail", "family:port-taken",
     "HCCL_IF_BASE_PORT"),
    ("ModuleNotFoundError: No module named 'dlinfer'", "package:dlinfer", "dlinfer-ascend"),
    ("CMake Error: NEUWARE_HOME is not set", "mlu-neuware-home", "export NEUWARE_HOME"),
    ("xpu build: ocloc: Build failed with error code: -11", "xpu-aot-build", "TORCH_XPU_ARCH_LIST"),
    ("INFO vllm.engine starting\ntorch.OutOfMemoryError: NPU out of memory. Tried to allocate 64.00 MiB (NPU 0; "
     "60.96 GiB total capacity; 58.1 GiB already allocated; 12.3 MiB free)", "family:oom-in-server",
     "--gpu-memory-utilization"),
])
def test_frameworks_ports_and_toolchains(text, expected, words):
    """Triton that is not the calling library's, a port taken by a leftover rank, a framework's device adapter,
    the Neuware SDK's home, Intel's ahead-of-time compile, an inference server that reserves the memory first."""
    matches, _ = explain(text)
    assert matches[0].error.id == expected, [m.error.id for m in matches]
    assert words in matches[0].error.cause + matches[0].error.fix


@pytest.mark.parametrize("text, expected, words", [
    ("[W1106 16:55:04.8 OperatorEntry.cpp:218] Warning: Warning only once for all operators, other operators may "
     "also be overridden. Overriding a previously registered kernel for the same operator and the same dispatch key",
     "any-kernel-override", "Nothing to do"),
    ("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
     "family:rendezvous-timeout", "MASTER_ADDR"),
    ("RuntimeError: Expected a 'npu' device type for generator but found 'cpu'", "family:generator-device",
     "torch.Generator(device='npu')"),
    ("RuntimeError: Unsupported soc version: Ascend910_9391", "family:npu-chip", "npu-smi info"),
    ("[2024-01-01 10:00:00] [CNNL] [Error]:[cnnlCreate] Internal error", "family:cambricon-log-cnnl", "cnmon"),
    ("muDNN(2.7.0) ERROR# NOT_SUPPORTED in Conv::Run, Reason: mode", "family:mudnn-log", "no kernel"),
    ("RuntimeError: PassManager::run failed", "any-triton-pass-failed", "autotune"),
    ('OSError: [WinError 126] The specified module could not be found. Error loading "C:\\\\env\\\\Lib\\\\site-packages'
     '\\\\torch\\\\lib\\\\sycl8.dll" or one of its dependencies.', "family:windows-dll", "sycl8.dll"),
    ("ModuleNotFoundError: No module named 'triton'", "package:triton", "triton-ascend"),
    ("exporter: symbol lookup error: undefined symbol: cndevGetDeviceCount_v2", "symbol:neuware", "older"),
    ("NotImplementedError: Could not run 'torch_ipex::foo_bar' with arguments from the 'XPU' backend.",
     "family:vendor-private-op", "public API"),
])
def test_more_classes_read_from_their_sources(text, expected, words):
    """Classes from the third set's misses (its messages unread by the author): a benign kernel-override warning, the
    rendezvous store's timeout, a generator on another device, an Ascend chip a build does not support, Cambricon's
    library log lines, muDNN's own log line, a Triton pass failure, a Windows DLL load failure, Triton's per-device
    builds."""
    matches, _ = explain(text)
    assert matches[0].error.id == expected, [m.error.id for m in matches]
    assert words in matches[0].error.title + matches[0].error.cause + matches[0].error.fix


def test_a_cann_code_naming_the_cause_comes_before_a_synchronisation_follow_up():
    log = ("RuntimeError: npuSynchronizeDevice:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:467 NPU function "
           "error: AclrtSynchronizeDevice, error code is 507048\n"
           "EI0002: [PID: 1] 2026-01-01-10:00:00.000.000 The wait execution of the Notify register times out.")
    matches, _ = explain(log)
    assert matches[0].error.id == "family:cann-EI0002", [m.error.id for m in matches]


IGNITE_LOG = '''\
Traceback (most recent call last):
  File "/work/ig/train.py", line 3, in <module>
    import ignite.distributed as idist
  File "/venv/lib/python3.11/site-packages/ignite/distributed/comp_models/native.py", line 51, in _NativeDistModel
    available_backends = tuple(name for name in [NCCL, GLOO, MPI, HCCL] if getattr(dist, f"is_{name}_available")())
AttributeError: module 'torch.distributed' has no attribute 'is_hccl_available'. Did you mean: 'is_nccl_available'?
'''


@pytest.mark.parametrize("text, expected", [
    (IGNITE_LOG, "npu-is-hccl-available-missing"),
    ("AttributeError: module 'torch.distributed' has no attribute 'is_hccl_available'", "npu-is-hccl-available-missing"),
    ("ImportError: cannot import name 'is_cncl_available' from 'torch.distributed' (/x/torch/distributed/__init__.py)",
     "mlu-is-cncl-available-missing"),
    ("AttributeError: module 'torch.distributed' has no attribute 'is_mccl_available'", "musa-is-mccl-available-missing"),
    ("AttributeError: module 'torch.distributed.distributed_c10d' has no attribute 'is_mccl_available'",
     "musa-torch-without-musa-patches"),
])
def test_a_vendors_distributed_availability_function_is_the_vendor_packages_not_torchs(text, expected):
    """A new user's trial (pytorch-ignite 0.5.5 converted for npu, under the simulator, which then lacked it): explain
    read the message as a torch release lacking the name ("install the one the project requires") and, with ignite's
    traceback, as ignite's own fault.  torch has no is_hccl_available at all: torch_npu adds it on import (every
    release since 1.8.1), so it is an import question on the device and a simulator gap under the simulator; the
    call is right and is not to be undone.  torch_musa's own import needs the torch build it patches."""
    matches, _ = explain(text)
    assert matches[0].error.id == expected, [m.error.id for m in matches]
    words = matches[0].error.cause + matches[0].error.fix
    assert "pip show torch`" not in words and "install the one the calling project requires" not in words
    if expected != "musa-torch-without-musa-patches":
        assert "gap of the simulated stack" in words and "Import torch_" in words
    else:
        assert "torch_patches" in words
    if expected == "npu-is-hccl-available-missing":
        assert "not a question of the torch_npu release" in words and "# torchport: ignore" in words
