"""Issue 11's closing check, as a user would meet it: the CLI with huge and damaged inputs, and the
real window (offscreen) opening damaged workspaces. Counts what must stay at zero: tracebacks, hangs
(over 120 s), processes killed, and pins lost or replaced in the window. Prints JSON with --json.

Each CLI case runs in a fresh process; model folders are crafted from a tiny random Llama with
SmolLM2's tokenizer (the [models] extra is needed for those cases)."""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
HUGE = "1" + "0" * 400


def cli_cases(folders: dict[str, Path]) -> list[list[str]]:
    sizes = ["0", "-5", "9223372036854775808", "1000000000000000001", HUGE, "1e3", "abc", "", "3.5", "0x10"]
    cases: list[list[str]] = []
    for flag in ("--d-model", "--heads", "--kv-heads", "--seq-len", "--batch", "--layers"):
        for v in sizes:
            cases.append(["report", flag, v])
    cases += [["report", "--d-model", HUGE, "--heads", "3"], ["report", "--preset", ""], ["report", "--preset", "nope"],
              ["report", "--seq-len", "1048576", "--time"], ["report", "--dtype", "int4"], ["report", "--json", "--list-presets"],
              ["sweep", "--vary", "d_model=9223372036854775809"], ["sweep", "--vary", f"seq_len=1..{HUGE} log"],
              ["sweep", "--vary", "seq_len=1..2 log 100000000"], ["sweep", "--vary", "seq_len=1..100000000000"],
              ["sweep", "--vary", f"seq_len=1..{HUGE} log 5"], ["sweep", "--vary", "n_heads=" + ",".join(["7"] * 100)],
              ["sweep", "--heads", "4", "--kv-heads", "4", "--vary", "n_kv_heads=3,5"], ["sweep", "--vary", "x=1"],
              ["sweep", "--vary", "seq_len=" + "9" * 5000], ["report", "--d-model", "9" * 5000],
              ["snapshot", "--no-time", "--d-model", "8192", "--heads", "8192", "--text", "w " * 300, "--out",
               str(folders["tmp"] / "snap-refused")],
              ["heads", "--model", "minilm-l6", "--probe", "induction", "--seed", "-5"],
              ["inspect", "--model", "minilm-l6", "--out", "/proc/self"], ["inspect", "--model", "minilm-l6", "--out", "/sys/x"],
              ["inspect", "--model", "minilm-l6", "--layer", "99"], ["inspect", "--model", "minilm-l6", "--kv-heads", "5"],
              ["inspect", "--model", "minilm-l6", "--heads", "0"], ["inspect", "--model", str(folders["tmp"] / "missing")]]
    for name in sorted(folders):
        if name != "tmp":
            cases.append(["inspect", "--model", str(folders[name])])
            cases.append(["inspect", "--model", str(folders[name]), "--allow-pickle"])
    return cases


def make_folders(tmp: Path) -> dict[str, Path]:
    """Crafted model folders (none may load, none may crash the process, none may run its code)."""
    folders: dict[str, Path] = {"tmp": tmp}
    try:
        import torch
        from safetensors.torch import load_file, save_file
        from transformers import LlamaConfig, LlamaForCausalLM

        from core.models.source import load_model
    except ImportError:
        return folders
    tok = load_model("smollm2-135m").tokenizer
    base = tmp / "base"
    cfg = LlamaConfig(vocab_size=tok.vocab_size, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, intermediate_size=128, max_position_embeddings=256)
    LlamaForCausalLM(cfg).save_pretrained(base)
    tok.save_pretrained(base)

    def copy(name: str, **config_changes: object) -> Path:
        dst = tmp / name
        dst.mkdir()
        for f in base.iterdir():
            (dst / f.name).write_bytes(f.read_bytes())
        if config_changes:
            c = json.loads((dst / "config.json").read_text())
            c.update(config_changes)
            (dst / "config.json").write_text(json.dumps(c))
        folders[name] = dst
        return dst

    copy("huge", hidden_size=65536, num_attention_heads=64, num_key_value_heads=64, intermediate_size=65536,
         num_hidden_layers=32, head_dim=1024)
    copy("deep", num_hidden_layers=10**6)
    copy("zero-heads", num_attention_heads=0)
    copy("negative-layers", num_hidden_layers=-1)
    copy("remote", auto_map={"AutoModel": "evil.Model"})
    copy("string-size", hidden_size="64")
    for name, data in (("garbage", b"not safetensors"), ("empty-file", b""), ("bad-header", b"\xff" * 16)):
        (copy(name) / "model.safetensors").write_bytes(data)
    short = copy("truncated")
    (short / "model.safetensors").write_bytes((base / "model.safetensors").read_bytes()[:5000])
    tensors = load_file(str(base / "model.safetensors"))
    save_file({}, str(copy("no-tensors") / "model.safetensors"))
    save_file({k: v for k, v in tensors.items() if "layers.1." not in k}, str(copy("missing-keys") / "model.safetensors"))
    save_file({**tensors, "extra.weight": torch.zeros(2)}, str(copy("extra-keys") / "model.safetensors"))
    evil = copy("evil-pickle")
    (evil / "model.safetensors").unlink()
    (evil / "pytorch_model.bin").write_bytes(b"\x80\x02cos\nsystem\nq\x00X\x06\x00\x00\x00echo 1q\x01\x85q\x02Rq\x03.")
    tcfg = json.loads((base / "tokenizer_config.json").read_text())
    (copy("remote-tokenizer") / "tokenizer_config.json").write_text(json.dumps({**tcfg, "auto_map": {"x": "y"}}))
    return folders


def run_cli(argv: list[str]) -> dict:
    try:
        p = subprocess.run([sys.executable, "-m", "sandbox", *argv], capture_output=True, text=True, timeout=120,
                           cwd=ROOT, env={**os.environ})
    except subprocess.TimeoutExpired:
        return {"argv": argv, "hang": True}
    return {"argv": argv, "rc": p.returncode, "traceback": "Traceback" in p.stderr or "Traceback" in p.stdout,
            "killed": p.returncode in (-9, 137, -6, 134, -11, 139), "lines": len(p.stderr.strip().splitlines())}


def damaged_workspaces(good: dict, n_random: int, rng: random.Random) -> list[object]:
    pin = good["pins"][0]
    cases: list[object] = ["[" * 100_000 + "]" * 100_000, "not json", {"hello": 1}, {**good, "pins": 5},
                           {**good, "pins": None}, {**good, "schema": "1"}, {**good, "schema": 99}]
    for field, values in {"report": [[], None, "x"], "seed": [1e400, -1, "7"], "name": [7, "", "x" * 300],
                          "config": [None, {"d_model": "64"}, {**pin["config"], "dtype": ["float32"]}],
                          "tokens": ["x y", [1, 2]], "probe": ["all"], "device": ["tpu"],
                          "probs": [{"dtype": "float32", "shape": [40000, 256, 256], "zlib_b64": ""},
                                    {"dtype": "float32", "shape": [1, 2, 2],
                                     "zlib_b64": base64.b64encode(zlib.compress(bytes(50 * 2**20))).decode()}],
                          "architecture": [{"d_model": 64, "layers": [{"spec": {"n_heads": 10**300, "n_kv_heads": 1,
                                                                                 "head_dim": 1}, "count": 1}]}],
                          "model": [{"name": "x"}]}.items():
        for v in values:
            cases.append({**good, "pins": [{**pin, field: v}]})
    for t in ("fast", {"median_ms": "x"}, {**(pin["report"]["timing"] or {}), "median_ms": float("nan")}):
        cases.append({**good, "pins": [{**pin, "report": {**pin["report"], "timing": t}}]})
    atoms = [None, True, -1, 0, 2**70, 1e400, float("nan"), "x", [], {}, [1, "a"], {"a": None}]
    for _ in range(n_random):  # a random field of the pin, or of its report or config, set to an odd value
        target = dict(pin)
        where = rng.choice(["pin", "report", "config"])
        if where == "pin":
            target[rng.choice(list(pin))] = rng.choice(atoms)
        else:
            inner = dict(pin[where])
            inner[rng.choice(list(inner))] = rng.choice(atoms)
            target[where] = inner
        cases.append({**good, "pins": [target]})
    return cases


def window_run(n_random: int) -> dict:
    from PySide6.QtWidgets import QApplication

    from core.arch.config import AttentionConfig
    from sandbox.runner.thread_runner import ComputeRunner
    from sandbox.window.main_window import MainWindow
    from sandbox.window.qt_messages import quiet_offscreen_messages

    quiet_offscreen_messages()
    app = QApplication.instance() or QApplication([])
    w = MainWindow(runner=ComputeRunner(sync=True), settings=None, timing_budget_s=0.002,
                   config=AttentionConfig(d_model=64, n_heads=4, n_kv_heads=2, seq_len=16, n_layers=2, causal=True))
    w.resize(1280, 800)
    w.show()
    app.processEvents()
    w.pins.pin_current()
    w.config_panel.seq_len.spin.setValue(20)
    w.pins.pin_current()
    folder = Path(tempfile.mkdtemp(prefix="hostile-ws-"))
    mine = folder / "mine.json"
    w.pins.save(mine)
    good = json.loads(mine.read_text())
    before = list(w.pins.pins)
    tried = lost = exceptions = 0
    for i, case in enumerate(damaged_workspaces(good, n_random, random.Random(0))):
        bad = folder / f"bad{i}.json"
        bad.write_text(case if isinstance(case, str) else json.dumps(case, allow_nan=True))
        tried += 1
        try:
            opened = w.pins.open(bad)
        except Exception:  # noqa: BLE001 (counted: must stay 0)
            exceptions += 1
            continue
        if opened:
            w.pins.open(mine)  # a case the checks accepted (a harmless mutation): back to the user's file
            continue
        if w.pins.pins != before or w.pins.workspace_path != mine:
            lost += 1
    w.close()
    return {"workspaces_tried": tried, "window_exceptions": exceptions, "pins_lost": lost}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--random", type=int, default=60, help="random workspace mutations (default 60)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        folders = make_folders(Path(tmp))
        rows = [run_cli(argv) for argv in cli_cases(folders)]
    out = {"cli_inputs": len(rows), "tracebacks": sum(bool(r.get("traceback")) for r in rows),
           "hangs": sum(bool(r.get("hang")) for r in rows), "killed": sum(bool(r.get("killed")) for r in rows),
           "exit_2_one_line": sum(r.get("rc") == 2 and r.get("lines") == 1 for r in rows),
           "exit_0": sum(r.get("rc") == 0 for r in rows),
           "bad": [r["argv"][:4] for r in rows if r.get("traceback") or r.get("hang") or r.get("killed")
                   or r.get("rc") not in (0, 2) or (r.get("rc") == 2 and r.get("lines") != 1)]}
    out.update(window_run(args.random))
    print(json.dumps(out, indent=1) if args.json else out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
