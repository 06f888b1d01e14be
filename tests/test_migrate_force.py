"""`migrate --force` over an earlier output removes only what that run wrote (issue 31 items 1 and 2): a manifest
(migrate.json `renamed`) names paths inside OUT only, reached without following links; the report folder keeps
what the user saved there; a symlinked report folder is refused, not followed."""
import contextlib
import hashlib
import io
import json
import os

from torchport.cli import main


def cli(*args) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def project(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    return proj


def forge(out, entries) -> None:
    record = out / "torchport-report" / "migrate.json"
    data = json.loads(record.read_text())
    data["renamed"] = entries
    record.write_text(json.dumps(data))


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_forged_manifest_deletes_nothing_outside_the_output(tmp_path):
    proj, out = project(tmp_path), tmp_path / "out"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "elsewhere").mkdir()
    linked = tmp_path / "elsewhere" / "x.mu"
    linked.write_text("also precious")
    assert cli("migrate", proj, "--to", "npu", "-o", out)[0] in (0, 1)
    os.symlink(tmp_path / "elsewhere", out / "linkdir")
    forge(out, [{"from": "train.py", "to": str(victim), "sha256": sha(victim)},
                {"from": "train.py", "to": "../victim.txt", "sha256": sha(victim)},
                {"from": "train.py", "to": "linkdir/x.mu", "sha256": sha(linked)}])
    code, _, err = cli("migrate", proj, "--to", "npu", "-o", out, "--force")
    assert code in (0, 1), err
    assert victim.read_text() == "precious" and linked.read_text() == "also precious"


def test_force_keeps_what_the_user_saved_in_the_report_folder(tmp_path):
    proj, out = project(tmp_path), tmp_path / "out"
    cli("migrate", proj, "--to", "npu", "-o", out)
    notes = out / "torchport-report" / "my-notes.md"
    notes.write_text("what I found")
    (out / "torchport-report" / "convert" / "mine.txt").write_text("mine too")
    code, _, err = cli("migrate", proj, "--to", "npu", "-o", out, "--force")
    assert code in (0, 1), err
    assert notes.read_text() == "what I found"
    assert (out / "torchport-report" / "convert" / "mine.txt").read_text() == "mine too"
    assert (out / "torchport-report" / "migrate.md").is_file()


def test_a_symlinked_report_folder_is_refused(tmp_path):
    proj, out = project(tmp_path), tmp_path / "out"
    cli("migrate", proj, "--to", "npu", "-o", out)
    real = tmp_path / "real-report"
    (out / "torchport-report").rename(real)
    os.symlink(real, out / "torchport-report")
    code, _, err = cli("migrate", proj, "--to", "npu", "-o", out, "--force")
    assert code == 2 and err.count("\n") == 1 and "link" in err, err
    assert (real / "migrate.json").is_file(), "nothing behind the link was removed"


def test_a_linked_report_subfolder_is_refused_and_nothing_is_written_through_it(tmp_path):
    """A hostile trial: `OUT/torchport-report/convert` made a link to a folder outside OUT; --force wrote convert's
    reports there."""
    proj, out = project(tmp_path), tmp_path / "out"
    cli("migrate", proj, "--to", "npu", "-o", out)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "report.md").write_text("v")
    import shutil

    shutil.rmtree(out / "torchport-report" / "convert")
    os.symlink(victim, out / "torchport-report" / "convert")
    code, _, err = cli("migrate", proj, "--to", "npu", "-o", out, "--force")
    assert code == 2 and err.count("\n") == 1 and "link" in err, err
    assert [p.name for p in victim.iterdir()] == ["report.md"] and (victim / "report.md").read_text() == "v"


def test_a_marker_that_lists_nothing_removes_no_user_file(tmp_path):
    """A hostile trial: a marker with no file list (an older one, or a run that stopped) made --force delete every
    file under convert/, a user's too."""
    proj, out = project(tmp_path), tmp_path / "out"
    cli("migrate", proj, "--to", "npu", "-o", out)
    mine = out / "torchport-report" / "convert" / "mine.txt"
    mine.write_text("n2")
    (out / "torchport-report" / ".torchport-report").write_text("written by torchport; its files:\n")
    code, _, err = cli("migrate", proj, "--to", "npu", "-o", out, "--force")
    assert code in (0, 1), err
    assert mine.read_text() == "n2" and (out / "torchport-report" / "convert" / "report.md").is_file()


def test_notes_saved_in_a_steps_report_folder_survive_two_forced_runs(tmp_path):
    """A hostile re-trial: the marker was built by listing convert/ and port-ext/, so a note saved there was listed
    by the first --force run and deleted by the second."""
    proj, out = project(tmp_path), tmp_path / "out"
    cli("migrate", proj, "--to", "npu", "-o", out, "-q")
    notes = out / "torchport-report" / "convert" / "my-notes.md"
    notes.write_text("mine")
    for _ in range(2):
        assert cli("migrate", proj, "--to", "npu", "-o", out, "-q", "--force")[0] in (0, 1)
    assert notes.read_text() == "mine"
    assert "my-notes.md" not in (out / "torchport-report" / ".torchport-report").read_text()


def test_a_port_the_project_adopted_is_not_removed_as_a_stale_rename(tmp_path):
    """A hostile re-trial: the user adopted port-ext's k.mu into the project (deleting k.cu); the next --force run
    deleted OUT's copy of the project's k.mu as a file its earlier port had renamed, exit 0, nothing said."""
    proj = tmp_path / "ext"
    (proj / "csrc").mkdir(parents=True)
    (proj / "csrc" / "k.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] = 1; }\n")
    (proj / "a.py").write_text("import torch\n")
    out = tmp_path / "out"
    assert cli("migrate", proj, "--to", "musa", "-o", out, "-q")[0] in (0, 1)
    (proj / "csrc" / "k.cu").unlink()
    (proj / "csrc" / "k.mu").write_bytes((out / "csrc" / "k.mu").read_bytes())
    assert cli("migrate", proj, "--to", "musa", "-o", out, "-q", "--force")[0] in (0, 1)
    assert (out / "csrc" / "k.mu").is_file()
