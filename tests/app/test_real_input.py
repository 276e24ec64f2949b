"""The real window under Xvfb, driven by real X input events (xdotool): a mouse drag on the n_heads slider,
Ctrl+P and Ctrl+E. The app runs in a process of its own, as a user starts it (worker processes included);
it reports what its widgets show, and the numbers are checked here against a real torch module."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.arch.config import AttentionConfig
from core.kinds.standard.layer import AttentionLayer

ROOT = Path(__file__).resolve().parents[2]
MISSING = [tool for tool in ("Xvfb", "xdotool") if shutil.which(tool) is None]
START = AttentionConfig(d_model=256, n_heads=4, n_kv_heads=1, seq_len=64, n_layers=2, causal=True)

DRIVER = r"""
import json, subprocess, sys, time
from PySide6.QtCore import QPoint, QSettings, QTimer
from PySide6.QtWidgets import QApplication, QStyle, QStyleOptionSlider
from core.arch.config import AttentionConfig
from sandbox.tabs.export import ExportDialog
from sandbox.window.main_window import MainWindow

def spin(cond, timeout=120.0):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise SystemExit(f"timed out waiting: {cond.__doc__ or cond}")
        app.processEvents()

def xdo(*args):  # real X events, from outside the app
    subprocess.run(["xdotool", *map(str, args)], check=True, timeout=30)

app = QApplication([])
w = MainWindow(settings=QSettings(sys.argv[2], QSettings.Format.IniFormat), config=AttentionConfig(**json.loads(sys.argv[1])))
w.resize(1280, 800)
w.show()
spin(lambda: w.view_is_current() and w.runner.is_idle())
wid = int(w.winId())
xdo("windowfocus", "--sync", wid)
out = {"before": {"n_heads": w.config().n_heads, "tiles": len(w.last_heatmaps.probs),
                  "params": w.metrics.values["params"].text()}}
mosaic_before = w.mosaic.grab().toImage()
# Drag the n_heads slider's handle to the right with the mouse.
slider = w.config_panel.n_heads.slider
app.processEvents()
opt = QStyleOptionSlider()
slider.initStyleOption(opt)
handle = slider.style().subControlRect(QStyle.ComplexControl.CC_Slider, opt, QStyle.SubControl.SC_SliderHandle, slider)
start = slider.mapToGlobal(handle.center())  # press on the handle itself, as a person dragging does
end = slider.mapToGlobal(QPoint(slider.width() - 2, handle.center().y()))
xdo("mousemove", "--sync", start.x(), start.y())
xdo("mousedown", 1)
for k in range(1, 11):
    xdo("mousemove", "--sync", start.x() + (end.x() - start.x()) * k // 10, start.y())
    app.processEvents()
xdo("mouseup", 1)
spin(lambda: w.config().n_heads != out["before"]["n_heads"] and w.view_is_current() and w.runner.is_idle())
mosaic_after = w.mosaic.grab().toImage()
changed = sum(mosaic_before.pixel(x, y) != mosaic_after.pixel(x, y)
              for x in range(0, min(mosaic_before.width(), mosaic_after.width()), 7)
              for y in range(0, min(mosaic_before.height(), mosaic_after.height()), 7))
colours = len({mosaic_after.pixel(x, y) for x in range(0, mosaic_after.width(), 5) for y in range(0, mosaic_after.height(), 5)})
out["after"] = {"config": w.config().to_dict(), "tiles": len(w.last_heatmaps.probs),
                "params": w.metrics.values["params"].text(), "changed_pixels": changed, "colours": colours}
# Ctrl+P pins the configuration; Ctrl+E opens the export dialog.
xdo("windowfocus", "--sync", wid)
xdo("key", "ctrl+p")  # XTEST: as a keyboard would, to the focused window
spin(lambda: len(w.pins.pins) == 1, 60)
out["pinned"] = w.pins.pins[0].config.to_dict()
# The export dialog is modal (its own event loop): a timer inside that loop sees it and closes it.
def close_dialog():
    for d in QApplication.topLevelWidgets():
        if isinstance(d, ExportDialog) and d.isVisible():
            out["export_dialog"] = True
            d.reject()
watcher = QTimer()
watcher.timeout.connect(close_dialog)
watcher.start(50)
xdo("key", "ctrl+e")
spin(lambda: out.get("export_dialog", False), 30)
watcher.stop()
print("RESULT " + json.dumps(out), flush=True)
w.close()  # stops the workers
sys.stdout.flush()
import os
os._exit(0)  # not the interpreter's teardown, where pyqtgraph items can outlive Qt
"""


@pytest.mark.xvfb
@pytest.mark.skipif(bool(MISSING), reason=f"{' and '.join(MISSING)} not installed (apt-get install xvfb xdotool)")
def test_a_real_drag_ctrl_p_and_ctrl_e_change_the_window_as_they_should(tmp_path):
    read, write = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1400x900x24", "-nolisten", "tcp"],
                            pass_fds=[write], stderr=subprocess.DEVNULL)
    os.close(write)
    try:
        number = b""
        while not number.endswith(b"\n"):  # written when the server is ready; read to its end, keep the pipe
            chunk = os.read(read, 64)
            assert chunk, "Xvfb did not start"
            number += chunk
        display = ":" + number.decode().strip()
        env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb", "PYTHONPATH": str(ROOT)}
        proc = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(START.to_dict()), str(tmp_path / "s.ini")],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    finally:
        xvfb.kill()
        xvfb.wait()
        os.close(read)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (proc.stdout[-1500:], proc.stderr[-3000:])
    seen = json.loads(lines[-1][len("RESULT "):])
    after = AttentionConfig(**seen["after"]["config"])
    assert seen["before"]["n_heads"] == START.n_heads and after.n_heads > START.n_heads  # dragged to the right
    assert seen["after"]["tiles"] == after.n_heads  # one tile a head
    # The parameter count shown is a real module's, before and after the drag.
    for shown, cfg in ((seen["before"]["params"], START), (seen["after"]["params"], after)):
        assert shown == f"{sum(p.numel() for p in AttentionLayer(cfg).parameters()):,}"
    assert seen["after"]["changed_pixels"] > 50 and seen["after"]["colours"] > 20  # a new mosaic, drawn
    assert AttentionConfig(**seen["pinned"]) == after and seen["export_dialog"] is True
