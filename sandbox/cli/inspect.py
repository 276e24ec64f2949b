"""`attention-sandbox inspect`: a real model's heads for a text, before and after a head change."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from core.files import finite_json
from core.files.atomic import ExportError, out_folder, staged
from sandbox.cli.args import seed_value

TEXT = "The chef who trained in Lucknow cooked biryani"


def add_inspect_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="smollm2-135m, minilm-l6, or a local Hugging Face folder")
    p.add_argument("--layer", type=int, default=0, help="the layer to show and change (default 0)")
    p.add_argument("--text", default=TEXT, help="the input text")
    p.add_argument("--kv-heads", type=int, help="pool K and V down to this many heads")
    p.add_argument("--heads", type=int, help="re-split the query/key/value width into this many heads")
    p.add_argument("--all-layers", action="store_true", help="change every layer, not only --layer")
    p.add_argument("--allow-pickle", action="store_true", help="load a folder that has only pickle weights")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.add_argument("--out", help="folder for the heatmaps as PNG and .npy")


def write_heatmaps(out: Path, name: str, probs: np.ndarray, group_size: int, title: str, cols: int,
                   vmax: float, tokens: list[str] | None = None, text: str = "") -> list[Path]:
    """probs (H, T, T) -> name.npy and name.png (the app's mosaic, titled tiles, token labels, a colour bar 0..vmax)."""
    from sandbox.tabs.mosaic_png import labelled_mosaic

    lines = (f"Text: {text[:160]}{'…' if len(text) > 160 else ''}",) if text else ()
    image = labelled_mosaic(probs, group_size, title, cols, vmax, tokens=tokens, lines=lines)
    paths = [out / f"{name}.npy", out / f"{name}.png"]
    with staged(paths) as (npy, png):
        with open(npy, "wb") as f:
            np.save(f, probs.astype(np.float32))
        if not image.save(str(png), "PNG"):
            raise ExportError(f"could not write {paths[1]}.")
    return paths


def write_inspect_heatmaps(out: Path, model_name: str, result, group_size: int, text: str = "") -> list[Path]:
    """The chosen layer before (and after) the change, on one grid and one scale."""
    out = out_folder(str(out))
    layer = result.layer
    before = result.before.attentions[layer]
    after = result.after.attentions[layer] if result.after is not None else None
    from widgets.maps.mosaic import plan_layout

    cols = plan_layout(len(before), len(result.tokens), group_size).cols  # whole KV groups per row, as trained
    vmax = float(max(before.max(), after.max() if after is not None else 0.0)) or 1.0
    tokens = len(result.tokens)
    paths = write_heatmaps(out, f"layer{layer}_before", before, group_size,
                           f"{model_name}, layer {layer} as trained: {len(before)} heads x {tokens} tokens", cols, vmax,
                           result.tokens, text)
    if after is not None:
        g = max(1, result.n_heads // result.n_kv_heads)
        where = "every layer" if result.all_layers else f"layer {layer} only"
        paths += write_heatmaps(out, f"layer{layer}_after", after, g,
                                f"{model_name}, layer {layer} changed ({where}): {result.n_heads} heads, "
                                f"{result.n_kv_heads} KV heads", cols, vmax, result.tokens, text)
    return paths


def cmd_inspect(args: argparse.Namespace) -> int:
    from core.models.inspect import HeadChange, inspect
    from core.models.source import load_model

    model = load_model(args.model, allow_pickle=args.allow_pickle)
    result = inspect(model, args.text, args.layer, HeadChange(args.kv_heads, args.heads, args.all_layers))
    if args.out is not None:  # `--out ""` is said, not ignored
        write_inspect_heatmaps(out_folder(args.out), model.name, result, model.group_size, args.text)
    data = result.to_json()
    if args.json:
        print(finite_json.dumps(data, indent=1))
        return 0
    print(f"{model.name} ({model.kind}), layer {args.layer} of {model.n_layers}: {len(result.tokens)} tokens")
    print("tokens: " + " | ".join(result.tokens))
    print(f"before: {result.native_n_heads} heads x {model.head_dim}, {result.native_n_kv_heads} KV heads")
    print(f"after:  {result.n_heads} heads, {result.n_kv_heads} KV heads"
          + (" (every layer)" if result.all_layers else f" (layer {args.layer} only)"))
    err = data["output_rel_error"]
    rows = [("JS divergence, mean (bits)", data["js_divergence_mean"]),
            ("layer output error (%)", None if err is None else 100 * err),
            ("loss before", data["loss_before"]), ("loss after", data["loss_after"]),
            ("perplexity before", data["perplexity_before"]), ("perplexity after", data["perplexity_after"]),
            ("sentence embedding cosine", data["embedding_cosine"]),
            ("KV cache bytes before (fp16)", data["kv_cache_bytes_before"]),
            ("KV cache bytes after (fp16)", data["kv_cache_bytes_after"])]
    for label, value in rows:
        text = "–" if value is None else (f"{value:,}" if isinstance(value, int) else f"{value:.5g}")
        print(f"  {label:<30}{text:>16}")
    return 0


def add_heads_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="smollm2-135m, minilm-l6, or a local Hugging Face folder")
    p.add_argument("--probe", choices=["text", "induction"], default="text",
                   help="text: --text; induction: a seeded random token sequence repeated twice")
    p.add_argument("--text", default=TEXT, help="the input text (with --probe text)")
    p.add_argument("--seed", type=seed_value, default=0, help="the induction probe's seed (0 to 2^32 - 1)")
    p.add_argument("--allow-pickle", action="store_true", help="load a folder that has only pickle weights")
    p.add_argument("--json", action="store_true", help="one JSON object")


def cmd_heads(args: argparse.Namespace) -> int:
    import time

    from core.models.head_roles import (
        BADGE_THRESHOLD,
        ROLES,
        all_layer_scores,
        badge,
        induction_probe_ids,
    )
    from core.models.inspect import encode, encode_ids, run, token_labels
    from core.models.source import load_model

    model = load_model(args.model, allow_pickle=args.allow_pickle)
    t0 = time.perf_counter()
    if args.probe == "induction":
        ids, repeat = induction_probe_ids(model.tokenizer.vocab_size, seed=args.seed, bos=model.tokenizer.bos_token_id)
        enc = encode_ids(model, ids)
    else:
        enc, repeat = encode(model, args.text), None
        ids = enc["input_ids"][0].tolist()
    out = run(model, enc, 0)
    scores = all_layer_scores(out.attentions, ids, repeat)
    seconds = time.perf_counter() - t0
    if args.json:
        print(json.dumps({"model": model.name, "probe": args.probe, "tokens": token_labels(model, ids),
                          "scores": {r: scores[r].round(6).tolist() for r in ROLES}, "seconds": round(seconds, 3)}))
        return 0
    print(f"{model.name}: {model.n_layers} layers x {model.n_heads} heads on the {args.probe} probe "
          f"({len(ids)} tokens), scored in {seconds:.2f} s (one forward with every attention map, its one-time "
          "warm-up included)")
    print(f"heads with a role at {BADGE_THRESHOLD:.2f} or more (best role, score):")
    for layer in range(model.n_layers):
        found = [(h, badge({r: scores[r][layer] for r in ROLES}, h)) for h in range(model.n_heads)]
        line = ", ".join(f"h{h} {b[0]} {b[1]:.2f}" for h, b in found if b)
        if line:
            print(f"  layer {layer:2}: {line}")
    return 0
