"""Atomic writes: whole or nothing, honest about a group that stops half-way, the file's mode and
symlinks kept, fsynced, and temporary files of a killed save cleaned up by the next one."""

import os
import stat
import subprocess
import sys

import pytest

from core.files.atomic import ExportError, staged, write_text_atomic


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
from core.files.atomic import staged
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


def test_a_device_a_fifo_or_a_socket_is_never_renamed_over(tmp_path):
    """Saving to /dev/null (or through a link to a device) once turned the device into a regular file. The test
    makes its own device node (as root, which these machines are) rather than risk the machine's /dev/null."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    targets = [fifo]
    null = tmp_path / "null"
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        targets.append(null)
    except PermissionError:  # not root: the FIFO alone
        null = None
    for target in targets:
        with pytest.raises(ExportError, match="not a file; the app writes only over regular files"):
            write_text_atomic(target, "x")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    if null is not None:
        assert stat.S_ISCHR(os.stat(null).st_mode)
        link = tmp_path / "out" / "map.png"
        link.parent.mkdir()
        link.symlink_to(null)
        with pytest.raises(ExportError):
            write_text_atomic(link, "x")
        assert stat.S_ISCHR(os.stat(null).st_mode) and link.is_symlink()


def test_a_link_to_a_file_outside_the_folder_is_refused_and_the_file_is_untouched(tmp_path):
    outside = tmp_path / "elsewhere" / "precious.txt"
    outside.parent.mkdir()
    outside.write_text("keep me")
    out = tmp_path / "out"
    out.mkdir()
    (out / "layer0.png").symlink_to(outside)
    with pytest.raises(ExportError, match="outside .*; the app writes only inside the folder you chose"):
        with staged([out / "layer0.png", out / "layer0.json"]) as (a, b):
            a.write_text("new")
            b.write_text("new")
    assert outside.read_text() == "keep me" and not (out / "layer0.json").exists()


def test_a_name_over_255_bytes_is_refused_in_a_sentence_and_one_of_250_is_written(tmp_path):
    with pytest.raises(ExportError, match="is 300 bytes; a file or folder name may have at most 255"):
        write_text_atomic(tmp_path / ("a" * 300), "x")
    long = tmp_path / ("é" * 125)  # 250 bytes: its temporary name must fit as well
    write_text_atomic(long, "x")
    assert long.read_text() == "x" and [p.name for p in tmp_path.iterdir()] == [long.name]
