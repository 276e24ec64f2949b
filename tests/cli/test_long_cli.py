"""`attention-sandbox longmap` and `decode`: the files and figures are the core's for the same layer, the
cache is the app's count at every step, and bad input is refused in one sentence."""

import json
import os

import numpy as np
import pytest

from core.arch.config import AttentionConfig
from core.long.inputs import design_inputs
from core.long.map import long_map
from core.models.source import shipped_unavailable_reason
from tests.cli.conftest import run_cli

LAYER = ["--d-model", "64", "--heads", "4", "--kv-heads", "2", "--window", "48", "--layers", "2"]


def test_longmap_writes_the_cores_pooled_map_its_picture_and_manifest(capsys, tmp_path):
    code, out, err = run_cli(capsys, "longmap", *LAYER, "--tokens", "700", "--pixels", "100", "--out",
                             str(tmp_path / "m"))
    assert code == 0, err
    pooled = np.load(tmp_path / "m" / "longmap.npy")
    cfg = AttentionConfig(d_model=64, n_heads=4, n_kv_heads=2, window=48, layer_pattern="local", n_layers=2,
                          causal=True)
    ref = design_inputs(cfg, cfg.layer_spec(0), 700)
    m = long_map(ref.q, ref.k, ref.rule, 7, "max")  # ceil(700 / 100) tokens a cell
    np.testing.assert_allclose(pooled, m.pooled, atol=1e-6)
    manifest = json.loads((tmp_path / "m" / "longmap.npy.json").read_text())
    assert manifest["block_tokens"] == 7 and manifest["window"] == 48 and manifest["tokens"] == 700
    assert (tmp_path / "m" / "longmap.png").read_bytes()[:4] == b"\x89PNG"
    assert "local W=48" in out and "scoring" in err  # the figures on stdout, the progress on stderr
    lines = [line for line in out.splitlines() if line.strip().startswith(("0 ", "1 ", "2 ", "3 "))]
    assert len(lines) == 4 and lines[0].split()[2] == f"{100 * m.stats.band[0]:.1f}%"


def test_longmap_json_gives_the_figures_the_map_counted(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "longmap", *LAYER, "--tokens", "300", "--pool", "mean", "--out", str(tmp_path),
                           "--json")
    assert code == 0
    body = json.loads(out)
    assert body["stats"]["band_width"] == 48 and len(body["stats"]["sink"]) == 4
    assert all(abs(s + b + y - 1) < 1e-5 for s, b, y in zip(body["stats"]["sink"], body["stats"]["band"],
                                                            body["stats"]["beyond"], strict=True))


@pytest.mark.parametrize(("args", "says"), [
    (["--tokens", "40000"], "--tokens must be from 2 to 32,768"),
    (["--tokens", "100", "--pixels", "8"], "16 to 4,096 pixels"),
    (["--tokens", "100", "--text", "a", "--text-file", "b"], "give --text or --text-file, not both"),
    (["--tokens", "100", "--layer", "5"], "layer"),
])
def test_longmap_refuses_bad_input_in_a_sentence(capsys, tmp_path, args, says):
    code, _, err = run_cli(capsys, "longmap", *LAYER, "--out", str(tmp_path), *args)
    assert code == 2 and says in err and "Traceback" not in err


def test_longmap_will_not_write_into_a_file(capsys, tmp_path):
    (tmp_path / "f").write_text("x")
    code, _, err = run_cli(capsys, "longmap", *LAYER, "--tokens", "64", "--out", str(tmp_path / "f"))
    assert code == 2 and "is a file; give a folder" in err


def test_decode_of_random_weights_times_the_step_against_its_context(capsys):
    code, out, err = run_cli(capsys, "decode", *LAYER, "--tokens", "400", "--steps", "4", "--json")
    assert code == 0, err
    curve = json.loads(out)["curve"]
    assert [p["context"] for p in curve["points"]] == [16, 144, 272, 400]
    assert [p["cached"] for p in curve["points"]] == [16, 48, 48, 48]  # the window caps what a step reads
    assert all(p["kv_bytes"] == 2 * 2 * 16 * 4 * p["cached"] for p in curve["points"])  # K, V x 2 heads x 16 x fp32


@pytest.mark.skipif(bool(shipped_unavailable_reason("smollm2-135m")), reason="the SmolLM2 wheel is not installed")
def test_decode_of_smollm2_counts_its_cache_at_every_step(capsys):
    code, out, err = run_cli(capsys, "decode", "--model", "smollm2-135m", "--text", "Alice was beginning to",
                             "--steps", "3", "--kv-format", "q8_0", "--json")
    assert code == 0, err
    body = json.loads(out)
    steps = body["steps"]
    assert len(steps) == 3 and body["kv_format"] == "q8_0"
    for s in steps:  # 30 layers x K and V x 3 heads x 64 values, in q8_0's 34 bytes a block of 32
        assert s["kv_bytes"] == 30 * (2 * 3 * 64 // 32) * 34 * s["cached_tokens"]
    assert [s["cached_tokens"] for s in steps] == list(range(steps[0]["cached_tokens"], steps[0]["cached_tokens"] + 3))
    code, _, err = run_cli(capsys, "decode", "--model", "smollm2-135m", "--steps", "3")
    assert code == 2 and "give the prompt with --text" in err


@pytest.mark.parametrize(("args", "says"), [
    (["--tokens", "100", "--pixels", "0"], "16 to 4,096 pixels"),
    (["--tokens", "100", "--band", "-5"], "the band W is 1 to 32,768 tokens"),
    (["--tokens", "100", "--band", "0"], "the band W is 1 to 32,768 tokens"),
    (["--tokens", "100", "--text", "words"], "random weights read seeded inputs"),
])
def test_longmap_refuses_what_hostile_input_sent_it(capsys, tmp_path, args, says):
    code, _, err = run_cli(capsys, "longmap", *LAYER, "--out", str(tmp_path), *args)
    assert code == 2 and says in err and "Traceback" not in err and "Error:" not in err


def test_longmap_keeps_a_users_own_json_and_reads_no_pipe(capsys, tmp_path):
    (tmp_path / "longmap.npy.json").write_text('{"my": "precious"}')
    code, _, err = run_cli(capsys, "longmap", *LAYER, "--tokens", "64", "--out", str(tmp_path))
    assert code == 2 and "not an Attention Sandbox manifest" in err
    assert (tmp_path / "longmap.npy.json").read_text() == '{"my": "precious"}'
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, _, err = run_cli(capsys, "longmap", "--model", "smollm2-135m", "--text-file", str(fifo), "--tokens", "64",
                           "--out", str(tmp_path / "o"))
    assert code == 2 and "is not a regular file" in err  # refused before it could block on the open
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:  # a sparse file just over the limit
        f.truncate(64 * 2**20 + 1)
    from sandbox.cli.text_file import read_text

    with pytest.raises(ValueError, match="is over 64 MB"):
        read_text(big)


def test_decode_prints_every_context_and_refuses_flags_random_weights_do_not_use(capsys):
    code, out, err = run_cli(capsys, "decode", *LAYER, "--tokens", "400", "--steps", "3")
    assert code == 0, err
    assert [line.split()[1] for line in out.splitlines() if line.startswith("context")] == ["16", "208", "400"]
    code, _, err = run_cli(capsys, "decode", *LAYER, "--tokens", "400", "--kv-format", "q4_0")
    assert code == 2 and "give --dtype instead" in err
    code, _, err = run_cli(capsys, "decode", *LAYER, "--tokens", "400", "--steps", "0")
    assert code == 2 and "1 to 256 tokens" in err


def test_a_long_map_says_its_estimate_first_and_asks_for_force_past_a_minute(capsys, tmp_path):
    """Gemma 3 27B's layer at 32,768 tokens on random weights ran past 300 s with no estimate."""
    from core.arch.config import AttentionConfig
    from core.arch.presets import find_preset
    from core.long.budget import overview_budget

    cfg = find_preset("gemma-3-27b").apply(AttentionConfig())
    spec = cfg.layer_spec(5)  # a global layer of the 5:1 pattern
    expected = overview_budget(spec.n_heads, spec.n_kv_heads, spec.head_dim, 32768, 1024, True, None, "cpu")
    code, _, err = run_cli(capsys, "longmap", "--preset", "gemma-3-27b", "--layer", "5", "--tokens", "32768",
                           "--device", "cpu", "--out", str(tmp_path / "m"))
    assert code == 2 and f"this map takes {expected.text()} on CPU" in err and "add --force" in err, err
    assert not (tmp_path / "m").exists()  # refused before anything was made
    code, _, err = run_cli(capsys, "longmap", "--tokens", "512", "--device", "cpu", "--out", str(tmp_path / "s"))
    assert code == 0 and "estimate: under a second" in err
