"""Files convert copies unchanged: device and backend settings in configs are reported with file:line (by
convert and analyze alike), and every other file that mentions CUDA is counted and listed."""
import torchport
from torchport.api import analyze


def _project(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "train.yaml").write_text("train:\n  device: cuda\n  dist_backend: nccl   # multi-gpu\n  note: cuda is fast\n")
    (src / "run.json").write_text('{"device": "cuda:1", "backend": "NCCL", "name": "CUDA run"}\n')
    (src / "pyproject.toml").write_text('[tool.x]\ndevice = "cuda"\n')
    (src / "crlf.yml").write_bytes(b"flow: {device: cuda:0, backend: nccl}\r\naccelerator: cuda\r\n")
    (src / "README.md").write_text("Needs CUDA 12.\n")
    (src / "LICENSE").write_text("MIT\n")
    (src / "a.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    return src


def test_config_settings_are_reported_and_files_mentioning_cuda_counted(tmp_path):
    src = _project(tmp_path)
    before = {p.name: p.read_bytes() for p in src.iterdir()}
    result = torchport.convert(src, "npu", tmp_path / "out")
    found = sorted((f.file, f.line, f.old) for f in result.findings if f.rule == "TP403")
    assert found == [("crlf.yml", 1, "backend: nccl"), ("crlf.yml", 1, "device: cuda:0"),
                     ("crlf.yml", 2, "accelerator: cuda"),
                     ("pyproject.toml", 2, 'device = "cuda"'), ("run.json", 1, '"backend": "NCCL"'),
                     ("run.json", 1, '"device": "cuda:1"'), ("train.yaml", 2, "device: cuda"),
                     ("train.yaml", 3, "dist_backend: nccl   # multi-gpu")]
    messages = {f.old: f.message for f in result.findings if f.rule == "TP403"}
    assert messages['"device": "cuda:1"'].endswith("on npu use npu:1")
    assert messages["dist_backend: nccl   # multi-gpu"].endswith("on npu use hccl")
    for name, data in before.items():
        if name != "a.py":
            assert (tmp_path / "out" / name).read_bytes() == data, "configs are copied unchanged"
    assert result.summary()["unscanned_cuda_files"] == 5  # README, and the four configs; not LICENSE
    report = (tmp_path / "out_report" / "report.md").read_text()
    assert "## Other files that mention CUDA (5)" in report and "`README.md`" in report and "LICENSE" not in report
    a = analyze(src, "npu", write_reports=False)
    assert sorted((f.file, f.line) for f in a.target_findings("npu") if f.rule == "TP403") == [(f, line) for f, line, _ in found]


def test_package_metadata_is_no_mention_of_cuda(tmp_path):
    """pytorch_msssim 1.0.0's sdist: pytorch_msssim.egg-info/SOURCES.txt lists tests_cuda.py, which made a
    "mentions CUDA" row to review. A build's metadata mentions CUDA only where the sources do."""
    src = tmp_path / "proj"
    (src / "pkg.egg-info").mkdir(parents=True)
    (src / "pkg.egg-info" / "SOURCES.txt").write_text("setup.py\ntests/tests_cuda.py\n")
    (src / "pkg-1.0.dist-info").mkdir()
    (src / "pkg-1.0.dist-info" / "RECORD").write_text("pkg/cuda_ops.py,sha256=x,10\n")
    (src / "NOTES.txt").write_text("runs on cuda\n")
    result = torchport.convert(src, "npu", tmp_path / "out")
    assert sorted(r.path for r in result.files if r.mentions_cuda) == ["NOTES.txt"]
    assert (tmp_path / "out" / "pkg.egg-info" / "SOURCES.txt").is_file(), "still copied"


def test_a_binary_file_is_no_document_mentioning_cuda(tmp_path):
    """A new-user trial (performer-pytorch 1.1.4): checkpoints saved in the project were listed in What's left as
    "a file convert does not rewrite (docs, Dockerfile, config) mentions CUDA" at line 166 of a zip archive."""
    src = tmp_path / "proj"
    src.mkdir()
    (src / "ckpt.pt").write_bytes(b"PK\x03\x04\x00\x00" + b"archive/data.pkl device cuda:0\x00\x01" * 40)
    (src / "NOTES.txt").write_text("runs on cuda\n")
    result = torchport.convert(src, "npu", tmp_path / "out")
    assert sorted(r.path for r in result.files if r.mentions_cuda) == ["NOTES.txt"]
    assert (tmp_path / "out" / "ckpt.pt").read_bytes() == (src / "ckpt.pt").read_bytes(), "still copied"
