"""The simulator's cached C++ library is loaded only when it is the one built there (issue 31 item 5): its sha256
is recorded with the build and checked; a planted or truncated library, or a record that does not parse, is built
again; a folder or library another user could have written is refused, never loaded."""
import hashlib
import json

import pytest

torch = pytest.importorskip("torch")

from torchport.core.errors import UsageError  # noqa: E402
from torchport.sim import build  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache root in tmp_path holding a fake build for this torch; load()'s build and import recorded."""
    monkeypatch.setenv("TORCHPORT_CACHE", str(tmp_path / "cache"))
    ident = build._identity(torch.__version__)
    folder = build.build_dir(torch.__version__)
    folder.mkdir(parents=True, mode=0o755)
    library = folder / f"{ident['name']}.so"
    library.write_bytes(b"\x7fELF the library built here")
    library.chmod(0o755)
    record = folder / "build.json"
    record.write_text(json.dumps({**ident, "sha256": hashlib.sha256(library.read_bytes()).hexdigest()}))
    calls = []
    monkeypatch.setattr(build, "_import_library", lambda path, name: calls.append(("import", path.name)) or "module")
    monkeypatch.setattr(build, "_build", lambda *a: calls.append(("build",)) or "built")
    monkeypatch.setattr(build, "compiler", lambda: "/usr/bin/c++")
    from torch.utils import cpp_extension

    monkeypatch.setattr(cpp_extension, "is_ninja_available", lambda: True)
    return folder, library, record, calls


def test_the_library_built_there_is_loaded(cache):
    folder, library, record, calls = cache
    assert build.load() == "module" and calls == [("import", library.name)]


@pytest.mark.parametrize("damage", ["planted", "truncated", "record"])
def test_a_library_that_is_not_the_one_built_there_is_built_again(cache, damage, capsys):
    folder, library, record, calls = cache
    if damage == "planted":
        library.write_bytes(b"\x7fELF somebody else's constructor")
    elif damage == "truncated":
        library.write_bytes(library.read_bytes()[:5])
    else:
        record.write_text("{not json")
    assert build.load() == "built" and calls == [("build",)], "never imported"
    assert "building it again" in capsys.readouterr().err


def test_a_folder_others_can_write_is_refused(cache):
    folder, library, record, calls = cache
    folder.chmod(0o777)
    with pytest.raises(UsageError, match="other users"):
        build.load()
    folder.chmod(0o755)
    library.chmod(0o666)
    with pytest.raises(UsageError, match="other users"):
        build.load()
    assert calls == [], "nothing loaded, nothing built"


def test_a_malformed_record_reads_as_no_build(cache):
    folder, library, record, calls = cache
    record.write_text("[1, 2")
    assert build.build_info() == {}


@pytest.mark.parametrize("where", ["sim", "root"])
def test_a_folder_above_the_build_others_can_write_is_refused(cache, where):
    folder, library, record, calls = cache
    above = folder.parent if where == "sim" else folder.parent.parent
    above.chmod(0o777)   # another user could swap the build folder for their own
    try:
        with pytest.raises(UsageError, match="other users"):
            build.load()
        if where == "root":
            above.chmod(0o1777)   # sticky, as /tmp is: nobody else can rename what is ours
            assert build.load() == "module"
    finally:
        above.chmod(0o755)


@pytest.mark.subprocess
@pytest.mark.parametrize("command", ["sim", "run"])
def test_an_unsafe_cache_is_one_line_and_exit_2_not_a_child_traceback(cache, command):
    import subprocess
    import sys

    folder, library, record, calls = cache
    folder.chmod(0o777)
    script = "import torch, torch_npu" if command == "sim" else "import torch; torch.ones(1).cuda()"
    argv = (["sim", "--to", "npu"] if command == "sim" else ["run", "--to", "npu", "--simulate"])
    done = subprocess.run([sys.executable, "-m", "torchport", *argv, "--", "python", "-c", script],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "could not start: the simulator's cached build is not safe to load" in done.stderr
    assert library.read_bytes() == b"\x7fELF the library built here", "nothing rebuilt over it"
