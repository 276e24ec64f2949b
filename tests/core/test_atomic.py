"""Atomic writes: whole or nothing, honest about a group that stops half-way, the file's mode and
symlinks kept, fsynced, and temporary files of a killed save cleaned up by the next one."""

import os
import stat
import subprocess
import sys

import pytest

from core.atomic import ExportError, staged, write_text_atomic


def test_a_group_whose_second_rename_fails_says_which_file_was_written(tmp_path, monkeypatch):
    a, b = tmp_path / "maps.png", tmp_path / "maps.json"
    a.write_text("old image")
    b.write_text("old manifest")
    real = os.replace
    calls = []

    def second_fails(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(os, "replace", second_fails)
    with pytest.raises(ExportError) as exc:
        with staged([a, b]) as (ta, tb):
            ta.write_text("new image")
            tb.write_text("new manifest")
    assert str(exc.value) == f"wrote maps.png but could not write maps.json in {tmp_path}: No space left on device."
    assert a.read_text() == "new image" and b.read_text() == "old manifest"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["maps.json", "maps.png"]  # no temporary left


def test_a_failure_before_any_rename_says_nothing_was_written(tmp_path, monkeypatch):
    a = tmp_path / "x.txt"
    monkeypatch.setattr(os, "replace", lambda *_: (_ for _ in ()).throw(OSError(5, "Input/output error")))
    with pytest.raises(ExportError, match="Nothing was written"):
        write_text_atomic(a, "new")
    assert list(tmp_path.iterdir()) == []


def test_the_files_mode_is_kept_and_a_new_file_gets_the_umask(tmp_path):
    private = tmp_path / "ws.json"
    private.write_text("old")
    private.chmod(0o600)
    write_text_atomic(private, "new")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and private.read_text() == "new"
    fresh = tmp_path / "new.json"
    write_text_atomic(fresh, "x")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~mask


def test_a_symlink_is_written_through_and_stays_a_link(tmp_path):
    real = tmp_path / "real" / "ws.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "ws.json"
    link.symlink_to(real)
    write_text_atomic(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new" and link.read_text() == "new"


def test_the_file_and_its_folder_are_fsynced_before_and_after_the_rename(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real(fd)))
    write_text_atomic(tmp_path / "x.txt", "data")
    assert any(p.endswith(".part") for p in synced) and str(tmp_path) in synced


def test_a_save_killed_with_sigkill_leaves_a_part_file_the_next_save_removes(tmp_path):
    target = tmp_path / "ws.json"
    # A child process starts a save, writes its temporary file, and is killed before the rename.
    child = subprocess.Popen([sys.executable, "-c", f"""
import os, signal, sys
sys.path.insert(0, {os.getcwd()!r})
from core.atomic import staged
with staged([__import__('pathlib').Path({str(target)!r})]) as (tmp,):
    tmp.write_bytes(b"x" * 2**20)
    print(tmp, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""], stdout=subprocess.PIPE, text=True)
    left = child.stdout.readline().strip()
    child.wait()
    assert child.returncode == -9 and os.path.exists(left)  # what SIGKILL leaves behind
    keep = tmp_path / f".other.json.{os.getpid()}.abc.part"  # a live process's (ours): never touched
    keep.write_text("in progress")
    write_text_atomic(target, "saved")
    assert not os.path.exists(left) and keep.exists() and target.read_text() == "saved"
