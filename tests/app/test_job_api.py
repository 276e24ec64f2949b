"""The runners' one job API at its edges: a sweep of no points, a reused id, and a damaged saved configuration."""

import pytest
from PySide6.QtCore import QSettings

from core.arch.config import AttentionConfig
from core.study.sweep import SweepResult
from sandbox.jobs.types import SweepJob
from sandbox.runner.thread_runner import ComputeRunner
from sandbox.window.settings_store import SETTINGS_VERSION, load_settings


def test_a_sweep_of_no_points_ends_at_once_with_no_rows(qapp):
    runner = ComputeRunner(sync=True)
    done, progress = [], []
    runner.done.connect(lambda kind, payload: done.append((kind, payload)))
    runner.progress.connect(lambda kind, payload: progress.append(payload))
    try:
        assert runner.submit(SweepJob(1, [], "", 0.1, SweepResult("seq_len"))) == 1
        assert [(k, p.sweep_id, p.result.rows) for k, p in done] == [("sweep", 1, [])] and progress == []
        assert not runner.running("sweep")
        with pytest.raises(ValueError, match="id must be above the newest one's \\(1\\), not 1"):
            runner.submit(SweepJob(1, [], "", 0.1, SweepResult("seq_len")))  # a reused id would revive a cancelled job
        assert len(done) == 1
    finally:
        runner.shutdown()


@pytest.mark.parametrize("stored", ["[1]", '"abc"', "null", '[["mla", 1]]', "[" * 100_000 + "]" * 100_000])
def test_a_damaged_saved_configuration_is_ignored(tmp_path, stored):
    s = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    s.setValue("version", SETTINGS_VERSION)
    s.setValue("config", stored)
    assert "config" not in load_settings(s)
    with pytest.raises(ValueError, match="must be an object"):
        AttentionConfig.from_dict([1])
