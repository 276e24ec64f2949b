"""A big mosaic crosses from the worker in shared memory, intact, and no block outlives its result."""

from pathlib import Path

import numpy as np
import pytest

from core.arch.config import AttentionConfig
from sandbox.jobs.compute import ComputeRequest, compute_heatmaps
from sandbox.runner.shared_arrays import (
    MIN_SHARED_BYTES,
    SharedArray,
    from_shared,
    release,
    to_shared,
)

SHM = Path("/dev/shm")


def blocks_now() -> set[str]:
    return {p.name for p in SHM.glob("psm_*")} if SHM.is_dir() else set()


def test_big_arrays_go_to_shared_memory_small_ones_stay_and_all_come_back_equal():
    req = ComputeRequest(AttentionConfig(d_model=256, n_heads=64, n_kv_heads=8, seq_len=256), "word " * 300)
    result = compute_heatmaps(req, 1)
    assert result.probs.nbytes >= MIN_SHARED_BYTES  # 64 x 256 x 256 float32: 16 MiB
    before = blocks_now()
    blocks = {}
    sent = to_shared(result, blocks)
    assert isinstance(sent.probs, SharedArray) and len(blocks) == 1
    assert sent.tokens == result.tokens  # everything else rides in the pickle as it was
    back, names = from_shared(sent)
    assert names == [sent.probs.name]
    np.testing.assert_array_equal(back.probs, result.probs)  # bit for bit
    release(names, blocks)
    assert blocks == {} and blocks_now() == before  # freed


def test_a_small_result_never_makes_a_block():
    result = compute_heatmaps(ComputeRequest(AttentionConfig(d_model=64, n_heads=4, n_kv_heads=2, seq_len=16), "a b c"), 1)
    blocks = {}
    assert to_shared(result, blocks) is result and blocks == {}


@pytest.mark.skipif(not SHM.is_dir(), reason="no /dev/shm to count blocks in")
def test_a_64_head_mosaic_from_the_worker_process_equals_the_in_process_one(make_window, qtbot):
    cfg = AttentionConfig(d_model=256, n_heads=64, n_kv_heads=8, seq_len=256, n_layers=2)
    before = blocks_now()
    w = make_window(sync=False, kind="process", config=cfg, text="word " * 300, live_timing=False)
    assert w.runner.wait_ready(120)
    qtbot.waitUntil(lambda: w.view_is_current() and w.runner.is_idle(), timeout=60000)
    expected = compute_heatmaps(ComputeRequest(cfg, w.text.text()), 0)
    np.testing.assert_allclose(w.last_heatmaps.probs, expected.probs, atol=1e-6)
    assert w.last_heatmaps.probs.shape == (64, 256, 256)
    qtbot.waitUntil(lambda: blocks_now() == before, timeout=10000)  # the worker freed it once copied out
