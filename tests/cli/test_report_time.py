"""`report --time` as a user meets it: estimated first, refused above a minute unless --force,
progress on stderr, and Ctrl-C that stops at once."""

import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.conftest import run_cli

SLOW = ["--d-model", "1024", "--heads", "16", "--seq-len", "8192", "--device", "cpu"]  # about 96 s estimated


def test_a_timing_over_a_minute_is_refused_unless_forced(capsys):
    code, out, err = run_cli(capsys, "report", *SLOW, "--time")
    assert code == 2 and out == ""
    assert "timing this configuration takes about 96 s on CPU" in err and "add --force" in err


def test_progress_is_printed_and_ctrl_c_stops_a_forced_timing_at_once(tmp_path):
    # As a terminal's foreground job has it: SIGINT delivered and handled. A suite started in the background
    # by a non-interactive shell (`.ci/run &`) ignores SIGINT and SIGQUIT, and a child inherits that (CI's log:
    # SigIgn 0x81001006), so without this the child rightly never saw the Ctrl-C.
    def foreground_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

    proc = subprocess.Popen([sys.executable, "-m", "sandbox", "report", *SLOW, "--time", "--force"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=foreground_sigint)
    lines = []
    while not any("(1/7)" in line for line in lines):  # the timing has started its work
        line = proc.stderr.readline()
        assert line, "".join(lines)
        lines.append(line)
    assert lines[0].startswith("timing: about 96 s on CPU; Ctrl-C stops it")
    status = [line for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
              if line.startswith(("SigBlk", "SigIgn", "SigCgt", "Threads"))] if Path(f"/proc/{proc.pid}").exists() else []
    sent = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()  # not left to time a 96 s layer beside the rest of the suite
        proc.wait()
        raise AssertionError(f"Ctrl-C did not stop the timing within 30 s; the child's signals: {status}") from None
    stopped_s = time.perf_counter() - sent
    rest = proc.stderr.read()
    assert code == 130 and "interrupted; stopping the measurement" in rest and "Traceback" not in rest
    assert stopped_s < 5, stopped_s  # not the 96 s the timing would take
    assert proc.stdout.read() == ""


def test_many_narrow_heads_are_estimated_by_their_maps_not_their_few_flops(capsys):
    """65,536 heads of width 1 were estimated at 5.1 s (their FLOPs) and took 85 s: every head scores its own
    T x T map, whatever its width, and the estimate now counts those scores."""
    import torch

    from core.arch.config import AttentionConfig
    from core.kinds.standard.estimate import ASSUMED_SCORES_PER_S
    from core.timing.layer import estimate_timing_s

    narrow = AttentionConfig(d_model=1024, n_heads=1024, n_kv_heads=1024, seq_len=4096, causal=True)
    cpu = torch.device("cpu")
    scores = 1024 * 4096 * 4096 / 2
    assert estimate_timing_s(narrow, cpu) >= 7 * scores / ASSUMED_SCORES_PER_S["cpu"]  # at least 7 calls of its maps
    code, _, err = run_cli(capsys, "report", "--time", "--d-model", "1024", "--heads", "1024", "--seq-len", "4096",
                           "--device", "cpu")  # by its FLOPs alone, about 19 s: it was run, for minutes
    assert code == 2 and "timing this configuration takes about" in err and "add --force" in err, err
