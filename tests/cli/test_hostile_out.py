"""Output folders and text files given by hostile hands: an empty name, a name too long for the file system, a
link planted in the folder that points elsewhere. Each is one sentence, and nothing outside the folder is written."""

import pytest

from tests.cli.conftest import run_cli

LONG = "x" * 300


@pytest.mark.parametrize("argv, words", [
    (["longmap", "--tokens", "256", "--out", ""], "--out is empty; give a folder"),
    (["longmap", "--tokens", "256", "--out", f"/tmp/{LONG}"], "is 300 bytes; a folder name may have at most 255"),
    (["snapshot", "--no-time", "--out", f"/tmp/{LONG}/inner"], "is 300 bytes; a folder name may have at most 255"),
    (["snapshot", "--no-time", "--out", ""], "--out is empty"),
    (["frontier", "--model", "minilm-l6", "--text-file", ""], "--text-file is empty"),
])
def test_an_empty_or_too_long_name_is_one_sentence(capsys, argv, words):
    code, _, err = run_cli(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and words in lines[0] and "Traceback" not in err, err


def test_a_link_planted_in_the_out_folder_never_writes_outside_it(capsys, tmp_path):
    outside = tmp_path / "precious.png"
    outside.write_bytes(b"keep me")
    out = tmp_path / "maps"
    out.mkdir()
    (out / "longmap.png").symlink_to(outside)
    code, _, err = run_cli(capsys, "longmap", "--tokens", "256", "--out", str(out))
    assert code == 2 and "is a link to" in err and "outside" in err and "Traceback" not in err, err
    assert outside.read_bytes() == b"keep me" and not (out / "longmap.npy").exists()


def test_torch_keeps_what_it_compiles_in_the_app_cache_not_in_tmp(tmp_path):
    """inspect (and frontier) left /tmp/torchinductor_<user> behind, shared by every user and never cleaned."""
    import os
    import subprocess
    import sys

    temp, cache = tmp_path / "tmp", tmp_path / "cache"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "XDG_CACHE_HOME": str(cache), "HF_HUB_OFFLINE": "1"}
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-m", "sandbox", "inspect", "--model", "minilm-l6"], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not list(temp.glob("torchinductor*")) and (cache / "attention-sandbox" / "torch").is_dir()


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_pipe_or_device_at_a_manifest_s_name_is_refused_not_read(capsys, tmp_path, kind):
    """longmap hung on a FIFO named longmap.npy.json, and read /dev/zero to a MemoryError, checking whether the
    manifest was its own."""
    import os

    out = tmp_path / "maps"
    out.mkdir()
    manifest = out / "longmap.npy.json"
    os.mkfifo(manifest) if kind == "fifo" else manifest.symlink_to("/dev/zero")
    code, _, err = run_cli(capsys, "longmap", "--tokens", "256", "--pixels", "64", "--out", str(out))
    assert code == 2 and "is not an Attention Sandbox manifest" in err and "Traceback" not in err, err


def test_snapshot_checks_all_three_names_before_writing_any(capsys, tmp_path):
    import os

    out = tmp_path / "shot"
    out.mkdir()
    os.mkfifo(out / "manifest.json")
    code, _, err = run_cli(capsys, "snapshot", "--no-time", "--d-model", "64", "--heads", "4", "--seq-len", "16",
                           "--out", str(out))
    assert code == 2 and "Nothing was written" in err
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"]  # no window.png, no heatmaps.png


def test_a_blocked_cache_leaves_torch_its_own_default(tmp_path, monkeypatch):
    """XDG_CACHE_HOME a file: the compile cache under it made every real model fail ('NotADirectoryError')."""
    import os

    from core.timing.torch_cache import keep_compiled_in_app_cache

    blocked = tmp_path / "cache"
    blocked.write_text("a file")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    keep_compiled_in_app_cache()
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ
