"""A short soak in `make test`; `python bench/soak.py --actions 5000 --json` runs the full one."""

import os

from sandbox.window.main_window import OPENING_CONFIG, MainWindow
from sandbox.window.soak import Soak, threads_left

ACTIONS = int(os.environ.get("SOAK_ACTIONS", "300"))


def test_short_soak(qtbot, qapp, tmp_path):
    w = MainWindow(settings=None, config=OPENING_CONFIG, timing_budget_s=0.005, max_timing_s=1.0)
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    report = Soak(qapp, w, tmp_path, seed=1).run(ACTIONS)
    w.close()
    assert report.errors == [] and report.qt_warnings == []
    assert report.stale_views == 0 and report.checkpoints >= ACTIONS // 50
    assert sum(report.action_counts.values()) == ACTIONS and len(report.action_counts) >= 10
    assert threads_left() == 0
