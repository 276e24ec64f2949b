"""`attention-sandbox longmap` and `decode`: the Long tab's jobs from the command line, run by the same
code the app's worker runs (sandbox/jobs/long.py), with progress on stderr.

  longmap --model smollm2-135m --text-file F --layer 10 --out DIR [--pool max|mean] [--pixels 1024]
  longmap --preset gemma-3-27b --layer 0 --tokens 8192 --out DIR          (random weights: seeded inputs)
  decode --model smollm2-135m --text T --steps 64 [--json]
  decode --preset gemma-3-27b --layer 0 --tokens 8192 [--json]            (random weights: the step's curve)
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from core.arch.config import short_int
from core.arch.formats import KV_FORMATS
from core.files.atomic import ExportError, out_folder, staged
from core.long.budget import DEFAULT_BAND, MAX_TOKENS, Budget, overview_budget
from sandbox.cli.args import PROG, add_config_args, config_from_args
from sandbox.jobs.long_types import LongDone, LongJob, LongProgress


def add_longmap_args(p: argparse.ArgumentParser) -> None:
    _source_args(p)
    p.add_argument("--out", required=True, help="folder for longmap.png, longmap.npy and their .json manifests")
    p.add_argument("--pool", choices=["max", "mean"], default="max", help="each cell's max (default) or mean")
    p.add_argument("--pixels", type=int, default=1024, help="cells a side (16 to 4,096; default 1,024)")
    p.add_argument("--band", type=int, default=DEFAULT_BAND, help="the band W a global layer's figures count")
    p.add_argument("--json", action="store_true", help="the per-head figures as one JSON object")
    p.add_argument("--force", action="store_true", help=f"compute a map estimated to take over {LIMIT_S:.0f} s")


LIMIT_S = 60.0  # a map estimated to take longer asks for --force, as report --time does


def map_estimate(job: LongJob, work: Any, device_kind: str) -> Budget:
    """The overview's seconds and bytes, as the Long tab estimates them beside its button, once the job's pixels,
    band and layer are checked (a refusal prints nothing else and makes no folder)."""
    from sandbox.jobs.long import check_job, design_spec

    check_job(job)
    m = work.models.get(job.model) if job.model else None
    if m is not None:
        if isinstance(job.layer, bool) or not isinstance(job.layer, int) or not 0 <= job.layer < m.n_layers:
            raise ValueError(f"layer {short_int(job.layer)} does not exist; {m.name} has layers 0 to "
                             f"{m.n_layers - 1}.")
        return overview_budget(m.n_heads, m.n_kv_heads, m.head_dim, job.n_tokens, job.pixels, m.kind == "causal",
                               None, device_kind, job.layer + 1, m.d_model)
    spec = design_spec(job)
    return overview_budget(spec.n_heads, spec.n_kv_heads, spec.head_dim, job.n_tokens, job.pixels, job.config.causal,
                           spec.window if job.config.causal else None, device_kind)


def add_decode_args(p: argparse.ArgumentParser) -> None:
    _source_args(p)
    p.add_argument("--steps", type=int, default=64, help="tokens to generate (random weights: context lengths to "
                                                         "time, at most 24); default 64")
    p.add_argument("--kv-format", default="bfloat16", help="the format the cache is counted in (default bfloat16)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object")
    fmt.add_argument("--csv", action="store_true", help="one CSV row per step")


def _source_args(p: argparse.ArgumentParser) -> None:
    add_config_args(p)
    p.add_argument("--model", help="smollm2-135m, minilm-l6 or a local Hugging Face folder (default: random weights "
                                   "of the configuration given by --preset and the flags above)")
    p.add_argument("--layer", type=int, default=0, help="the layer (default 0)")
    p.add_argument("--text", help="the text a real model reads (default: the shipped long text, Alice I-IV)")
    p.add_argument("--text-file", help="a UTF-8 file to read instead")
    p.add_argument("--tokens", type=int, help=f"tokens of input (default: random weights 4,096, a model the whole "
                                              f"text up to its context); at most {MAX_TOKENS:,}")
    p.add_argument("--allow-pickle", action="store_true", help="load a folder that has only pickle weights")


def say(text: str) -> None:
    print(f"{PROG}: {text}", file=sys.stderr, flush=True)


def _work(args: argparse.Namespace) -> tuple[Any, LongJob, list]:
    """The worker code, a model loaded if asked for, and the job the flags describe."""
    from core.device import default_dtype, resolve_device
    from core.models.source import load_model
    from resources import long_text
    from sandbox.cli.text_file import read_text
    from sandbox.jobs.long import LongWork
    from sandbox.jobs.worker import describe_error

    if args.text is not None and args.text_file is not None:
        raise ValueError("give --text or --text-file, not both.")
    cfg = config_from_args(args, default_dtype(resolve_device(args.device)))
    models, key = {}, None
    text = args.text if args.text is not None else read_text(args.text_file) if args.text_file is not None else None
    if args.model:
        say(f"loading {args.model}…")
        m = load_model(args.model, allow_pickle=args.allow_pickle)
        key = args.model
        models[key] = m
        limit = m.max_tokens
        if text is None:
            text = long_text()
    else:
        limit = MAX_TOKENS
        if text is not None:
            raise ValueError("--text and --text-file are what a real model reads (--model); random weights read seeded "
                             "inputs: drop them, or give --model.")
        if getattr(args, "kv_format", "bfloat16") != "bfloat16":
            raise ValueError("--kv-format counts a real model's cache (--model); a random-weight layer's step reads its "
                             "cache in --dtype: give --dtype instead.")
    kv_format = getattr(args, "kv_format", "bfloat16")
    if kv_format not in KV_FORMATS:
        raise ValueError(f"--kv-format {kv_format!r} is not known; choose one of {', '.join(KV_FORMATS)}.")
    if args.tokens is not None and not 2 <= args.tokens <= limit:
        raise ValueError(f"--tokens must be from 2 to {limit:,}, not {short_int(args.tokens)}.")
    n_tokens = args.tokens or (min(limit, 2**15) if key else 4096)
    out: list = []
    work = LongWork(lambda name, kind, payload: out.append(payload), models, describe_error)
    job = LongJob(1, "overview", cfg, key, args.layer, text or "", n_tokens, getattr(args, "pool", "max"),
                  getattr(args, "pixels", 1024), getattr(args, "band", DEFAULT_BAND), 0, args.device,
                  steps=getattr(args, "steps", 64), kv_format=getattr(args, "kv_format", "bfloat16"))
    return work, job, out


def _progress(item: Any, last: list[str]) -> None:
    if isinstance(item, LongProgress) and item.text != last[0]:
        last[0] = item.text
        say(item.text)


def cmd_longmap(args: argparse.Namespace) -> int:
    from sandbox.tabs.export_render import ours
    from sandbox.tabs.long_export import long_map_png, manifest_path

    work, job, out = _work(args)  # the arguments checked, nothing computed yet
    out_folder(args.out, make=False)  # its name too, before the estimate is said
    from core.device import resolve_device

    kind = resolve_device(args.device).type
    budget = map_estimate(job, work, kind)
    if budget.seconds > LIMIT_S and not args.force:  # said first: a large layer at 32,768 tokens takes minutes
        raise ValueError(f"this map takes {budget.text()} on {kind.upper()} (more than {LIMIT_S:.0f} s); give fewer "
                         "--tokens, or add --force to compute it anyway.")
    say(f"estimate: {budget.text()} ({kind})")
    out_dir = out_folder(args.out)  # before the map: a bad folder is said at once, not after minutes of work
    mine = manifest_path(out_dir / "longmap.npy")
    if mine.exists() and not ours(mine):
        raise ValueError(f"{mine} exists and is not an Attention Sandbox manifest; choose another --out, so that it is "
                         "not overwritten.")
    last = [""]
    work.emit = lambda name, kind, payload: (_progress(payload, last), out.append(payload))
    work.step(job, 0)
    done = next((d for d in out if isinstance(d, LongDone)), None)
    if done is None or done.view is None:
        raise ValueError(done.message if done is not None else "the long map stopped without a result.")
    v = done.view
    npy, png = out_dir / "longmap.npy", out_dir / "longmap.png"
    image = long_map_png(v)
    manifest = {"title": "Attention Sandbox long map", **v.manifest, "shape": list(v.pooled.shape),
                "axes": "(head, query block, key block)", "files": [npy.name, png.name]}
    with staged([npy, png, manifest_path(npy)]) as (t_npy, t_png, t_json):
        with open(t_npy, "wb") as f:
            np.save(f, np.ascontiguousarray(v.pooled, dtype=np.float32))
        if not image.save(str(t_png), "PNG"):
            raise ExportError(f"could not write {png}.")
        t_json.write_text(json.dumps(manifest, indent=1, default=str), encoding="utf-8")
    if args.json:
        print(json.dumps({"what": v.what, "block": v.block, "seconds": round(v.seconds, 3), "stats": v.stats,
                          "files": [str(npy), str(png), str(manifest_path(npy))]}, indent=1))
        return 0
    s = v.stats or {}
    print(f"{v.what}: {v.pooled.shape[1]:,} x {v.pooled.shape[2]:,} cells of {v.block:,} "
          f"token{'s' * (v.block != 1)} ({v.pool}), "
          f"{v.seconds:.1f} s on {v.device}")
    print(f"{'head':>5} {'sink':>7} {'band ' + format(s.get('band_width', 0), ','):>11} {'beyond':>8} "
          f"{'distance':>9}  most-attended key")
    for h in range(len(s.get("sink", []))):
        print(f"{h:>5} {100 * s['sink'][h]:6.1f}% {100 * s['band'][h]:10.1f}% {100 * s['beyond'][h]:7.1f}% "
              f"{s['distance'][h]:9,.0f}  #{s['top_key'][h]:,} ({100 * s['top_mass'][h]:.1f}%)")
    for path in (npy, png, manifest_path(npy)):
        print(path)
    return 0


def cmd_decode(args: argparse.Namespace) -> int:
    from dataclasses import replace

    work, job, out = _work(args)
    job = replace(job, kind="decode")
    if job.model is not None and args.text is None and args.text_file is None:
        raise ValueError("give the prompt with --text (or --text-file).")
    last = [""]
    work.emit = lambda name, kind, payload: (_progress(payload, last) if args.json or args.csv else None,
                                             out.append(payload))
    index, shown = 0, 0
    more = True
    while more:
        more = work.step(job, index)
        index += 1
        for item in out[shown:]:  # every step and point as it comes, the last one's too
            if args.json or args.csv or not isinstance(item, LongProgress):
                continue
            if item.step is not None:
                s = item.step
                print(f"step {s.step:>3}: {s.n_cached:>6,} cached, KV {s.kv_bytes:>12,} B, {s.step_ms:8.2f} ms  "
                      f"{s.token!r}")
            elif item.point is not None:
                pt = item.point
                print(f"context {pt['context']:>6,} ({pt['cached']:>6,} read): {pt['median_ms']:.4f} ms "
                      f"(p25 {pt['p25_ms']:.4f}, p75 {pt['p75_ms']:.4f})")
        shown = len(out)
    done = next((d for d in out if isinstance(d, LongDone)), None)
    if done is None or done.message:
        raise ValueError(done.message if done is not None else "the decode run stopped without a result.")
    steps = [p.step for p in out if isinstance(p, LongProgress) and p.step is not None]
    if args.csv:
        from sandbox.tabs.long_export import curve_csv, steps_csv

        sys.stdout.write(steps_csv(steps) if steps else curve_csv(done.curve["points"]))
        return 0
    if args.json:
        body = {**done.decode_meta, "steps": [{"step": s.step, "cached_tokens": s.n_cached, "kv_bytes": s.kv_bytes,
                                               "step_ms": round(s.step_ms, 4), "token": s.token} for s in steps]}
        if done.curve is not None:
            body = {**done.decode_meta, "curve": done.curve}
        print(json.dumps(body, indent=1))
        return 0
    if done.curve is not None:
        c = done.curve
        from core.long.decode_words import curve_sentence

        cached = np.array([p["cached"] for p in c["points"]], dtype=float)
        print(curve_sentence(c, done.decode_meta, cached))
    elif steps:
        later = [s.step_ms for s in steps[1:]]
        print(f"{len(steps)} tokens generated: cache {steps[-1].kv_bytes:,} B at {steps[-1].n_cached:,} tokens; "
              f"median step {np.median(later) if later else float('nan'):.2f} ms")
    return 0
