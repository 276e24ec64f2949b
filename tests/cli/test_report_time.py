"""`report --time` as a user meets it: estimated first, refused above a minute unless --force,
progress on stderr, and Ctrl-C that stops at once."""

import signal
import subprocess
import sys
import time

from tests.cli.conftest import run_cli

SLOW = ["--d-model", "1024", "--heads", "16", "--seq-len", "8192", "--device", "cpu"]  # about 96 s estimated


def test_a_timing_over_a_minute_is_refused_unless_forced(capsys):
    code, out, err = run_cli(capsys, "report", *SLOW, "--time")
    assert code == 2 and out == ""
    assert "timing this configuration takes about 96 s on CPU" in err and "add --force" in err


def test_progress_is_printed_and_ctrl_c_stops_a_forced_timing_at_once(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "sandbox", "report", *SLOW, "--time", "--force"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    while not any("(1/7)" in line for line in lines):  # the timing has started its work
        line = proc.stderr.readline()
        assert line, "".join(lines)
        lines.append(line)
    assert lines[0].startswith("timing: about 96 s on CPU; Ctrl-C stops it")
    sent = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=30)
    stopped_s = time.perf_counter() - sent
    rest = proc.stderr.read()
    assert code == 130 and "interrupted; stopping the measurement" in rest and "Traceback" not in rest
    assert stopped_s < 5, stopped_s  # not the 96 s the timing would take
    assert proc.stdout.read() == ""
