import json
import os
import shutil
import subprocess
import sys

import pytest
from PySide6.QtGui import QImage

from sandbox.cli.main import main
from tests.app.test_export_frames import colour_bar_column, pixels, text_rows
from widgets.maps.colormaps import lut


def test_snapshot_command_writes_window_heatmaps_and_manifest(qtbot, tmp_path):
    out = tmp_path / "snap"
    code = main(["snapshot", "--d-model", "128", "--heads", "8", "--kv-heads", "2", "--seq-len", "16",
                 "--text", "one two three four", "--out", str(out), "--no-time"])
    assert code == 0
    window = QImage(str(out / "window.png"))
    assert (window.width(), window.height()) == (1280, 800)
    heat = pixels(QImage(str(out / "heatmaps.png")))
    assert len(text_rows(heat[:120])) > 30, "heatmaps.png has no title"  # 2x: title and two lines
    assert colour_bar_column(heat, lut("viridis")) is not None, "heatmaps.png has no colour bar"
    m = json.loads((out / "manifest.json").read_text())
    assert m["report"]["config"]["mode"] == "GQA" and m["tokens"] == ["one", "two", "three", "four"]
    assert m["report"]["params"]["total"] == 2 * 128 * 16 * (8 + 2)


def test_snapshot_bad_config_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["snapshot", "--heads", "5", "--out", "/tmp/never"])
    assert exc.value.code == 2 and "does not divide" in capsys.readouterr().err


@pytest.mark.xvfb
@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="Xvfb is not installed (apt-get install xvfb)")
def test_real_window_under_xvfb(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "xcb"}
    proc = subprocess.run(
        ["xvfb-run", "-a", "-s", "-screen 0 1400x900x24", sys.executable, "-m", "sandbox", "snapshot",
         "--d-model", "256", "--heads", "8", "--seq-len", "32", "--out", str(tmp_path), "--no-time"],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    img = QImage(str(tmp_path / "window.png"))
    assert (img.width(), img.height()) == (1280, 800)


QUIT_SCRIPT = """
import os, sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
import sandbox.window.app as app_module
real_exec = QApplication.exec

def exec_then_quit(*args):
    def act():
        (w,) = [w for w in QApplication.topLevelWidgets() if w.windowTitle() == "Attention Sandbox"]
        w.pins.pin_current()
        w.close()
    QTimer.singleShot(1500, act)
    return real_exec()

QApplication.exec = staticmethod(exec_then_quit)
sys.exit(app_module.run_app())
"""


def test_the_app_launches_and_quits_cleanly(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", QUIT_SCRIPT], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert list(tmp_path.rglob("AttentionSandbox.conf")), "settings were not saved"


def test_snapshot_prints_only_its_paths(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run([sys.executable, "-m", "sandbox", "snapshot", "--d-model", "64", "--heads", "4",
                           "--seq-len", "8", "--out", str(tmp_path), "--no-time"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and proc.stdout.split() == [str(tmp_path / n) for n in
                                                          ("window.png", "heatmaps.png", "manifest.json")]


def test_a_refused_snapshot_makes_no_folder(capsys, tmp_path):
    out = tmp_path / "never"
    with pytest.raises(SystemExit) as exc:
        main(["snapshot", "--no-time", "--d-model", "8192", "--heads", "8192", "--text", "word " * 300,
              "--out", str(out)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "the heatmaps of 8,192 heads x 256 tokens need about" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
