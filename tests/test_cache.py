"""core/cache.py: bundled data read once per change, never stale, and never in the way."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchport import backends
from torchport.core import cache

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty cache folder; `fresh()` stands for a new process (each entry is read from its file anyway)."""
    monkeypatch.setenv("TORCHPORT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TORCHPORT_NO_CACHE", raising=False)

    def forget():
        cache._MODULE_STAMPS.clear()
    forget()
    yield forget
    forget()


def counting_reader(calls):
    def read(path):
        calls.append(path)
        return {"text": Path(path).read_text(), "names": frozenset({"a", "b"}), "n": [1, 2.5, None, True]}
    return read


def test_a_second_process_reads_the_cache_not_the_file(tmp_path, fresh):
    data = tmp_path / "d.toml"
    data.write_text("x = 1\n")
    calls: list = []
    read = counting_reader(calls)
    first = cache.cached_data(data, read)
    fresh()  # a new process
    assert cache.cached_data(data, read) == first
    assert calls == [data]


def test_a_changed_file_is_read_again(tmp_path, fresh):
    data = tmp_path / "d.toml"
    data.write_text("x = 1\n")
    calls: list = []
    read = counting_reader(calls)
    cache.cached_data(data, read)
    data.write_text("x = 22\n")
    os.utime(data, ns=(1, 1))
    fresh()
    assert cache.cached_data(data, read)["text"] == "x = 22\n"
    assert len(calls) == 2


def test_a_corrupt_cache_file_is_ignored(tmp_path, fresh):
    data = tmp_path / "d.toml"
    data.write_text("x = 1\n")
    calls: list = []
    cache.cached_data(data, counting_reader(calls))
    for entry in cache._cache_folder().iterdir():
        entry.write_bytes(b"\x00garbage")
    fresh()
    assert cache.cached_data(data, counting_reader(calls))["text"] == "x = 1\n"
    assert len(calls) == 2


def test_no_cache_folder_means_no_cache(tmp_path, fresh, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("TORCHPORT_CACHE", str(blocker / "cache"))  # under a file: cannot be created
    data = tmp_path / "d.toml"
    data.write_text("x = 1\n")
    calls: list = []
    for _ in range(2):
        assert cache.cached_data(data, counting_reader(calls))["text"] == "x = 1\n"
    assert len(calls) == 2


def test_what_marshal_cannot_keep_is_read_every_time(tmp_path, fresh):
    data = tmp_path / "d.toml"
    data.write_text("x = 1\n")
    calls: list = []

    def read(path):
        calls.append(path)
        return {"object": object()}
    cache.cached_data(data, read)
    cache.cached_data(data, read)
    assert len(calls) == 2


def test_switched_off(tmp_path, fresh, monkeypatch):
    monkeypatch.setenv("TORCHPORT_NO_CACHE", "1")
    data = tmp_path / "d.toml"
    data.write_text("x = 1\n")
    calls: list = []
    cache.cached_data(data, counting_reader(calls))
    fresh()
    cache.cached_data(data, counting_reader(calls))
    assert len(calls) == 2 and not cache._cache_folder().exists()


@pytest.mark.subprocess
def test_targets_from_the_cache_equal_targets_read_anew(tmp_path):
    """Every bundled target, loaded in a process that fills the cache, one that reads it, and one without it."""
    code = ("import sys; from torchport import backends; "
            "print(repr([backends.load_target(n) for n in backends.bundled_names()]))")
    env = dict(os.environ, TORCHPORT_CACHE=str(tmp_path / "c"), PYTHONPATH=str(ROOT / "src"), PYTHONHASHSEED="0")
    env.pop("TORCHPORT_NO_CACHE", None)
    runs = [subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, check=True).stdout
            for e in (env, env, dict(env, TORCHPORT_NO_CACHE="1"))]
    assert (tmp_path / "c").is_dir() and any((tmp_path / "c").iterdir())
    assert runs[0] == runs[1] == runs[2]
    assert "Target(name='npu'" in runs[0]


def test_a_bad_bundled_target_is_still_refused_after_a_good_one_was_cached(tmp_path, fresh, monkeypatch):
    """The cache is keyed by the file's size and time: an edited bundled file is checked again."""
    here = tmp_path / "targets"
    here.mkdir()
    good = (ROOT / "src/torchport/backends/cpu.toml").read_text()
    (here / "cpu.toml").write_text(good)
    monkeypatch.setattr(backends, "HERE", here)
    monkeypatch.setattr(backends, "_CACHE", {})
    assert backends.load_target("cpu").name == "cpu"
    (here / "cpu.toml").write_text(good + "\nbogus_key = 1\n")
    monkeypatch.setattr(backends, "_CACHE", {})
    fresh()
    with pytest.raises(backends.UsageError, match="bogus_key"):
        backends.load_target("cpu")


def test_a_run_reads_only_the_entries_it_asks_for(tmp_path, fresh, monkeypatch):
    """Each data file's entry is a file of its own: other data files' entries (another checkout's, say) are not
    loaded, so a command's start-up does not grow with everything the cache folder has seen."""
    calls: list = []
    read = counting_reader(calls)
    files = [tmp_path / f"d{i}.toml" for i in range(3)]
    for i, f in enumerate(files):
        f.write_text(f"x = {i}\n")
        cache.cached_data(f, read)
    assert len(list(cache._cache_folder().iterdir())) == 3
    loaded: list = []
    real = cache.marshal.loads
    monkeypatch.setattr(cache.marshal, "loads", lambda data: loaded.append(len(data)) or real(data))
    fresh()
    assert cache.cached_data(files[1], read)["text"] == "x = 1\n" and len(calls) == 3   # from the cache
    own = cache._entry_file(f"{files[1]}|{read.__module__}.{read.__qualname__}")
    assert loaded == [own.stat().st_size]   # its own entry, and nothing else


def test_a_result_made_from_more_files_is_read_anew_when_any_of_them_changes(tmp_path, fresh):
    data, part = tmp_path / "d.toml", tmp_path / "part.json"
    data.write_text("x = 1\n")
    part.write_text("[1]\n")
    calls: list = []
    read = counting_reader(calls)
    cache.cached_data(data, read, also=(part,))
    fresh()
    cache.cached_data(data, read, also=(part,))
    assert len(calls) == 1
    part.write_text("[1, 2]\n")
    fresh()
    cache.cached_data(data, read, also=(part,))
    assert len(calls) == 2
    fresh()
    cache.cached_data(data, read, also=())          # another list of files is another result
    assert len(calls) == 3


@pytest.mark.subprocess
def test_targets_from_its_cached_table_equal_the_targets_loaded_and_skip_the_loader(tmp_path):
    """`torchport targets` reads its table from the cache when it can, without importing torchport.backends; the
    table equals one made from the loaded targets without any cache."""
    code = ("import runpy, sys\nsys.argv = ['torchport', 'targets', '--json']\n"
            "try:\n    runpy.run_module('torchport', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print('backends' if 'torchport.backends' in sys.modules else 'no backends', file=sys.stderr)\n")
    env = dict(os.environ, TORCHPORT_CACHE=str(tmp_path / "c"), PYTHONPATH=str(ROOT / "src"))
    env.pop("TORCHPORT_NO_CACHE", None)
    runs = [subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, check=True)
            for e in (env, env, dict(env, TORCHPORT_NO_CACHE="1"))]
    assert [r.stderr.strip() for r in runs] == ["backends", "no backends", "backends"]
    assert runs[0].stdout == runs[1].stdout == runs[2].stdout
    rows = json.loads(runs[1].stdout)
    assert [r["name"] for r in rows] == backends.bundled_names()
    npu = backends.load_target("npu")
    assert next(r for r in rows if r["name"] == "npu")["register"] == npu.register
