"""`attention-sandbox frontier`: every way of shrinking a real model's KV cache, costed on a text.

One row per point (the unchanged model first); --json prints the whole result, --csv the rows, a
table otherwise, with the budget sentences under it. Progress goes to stderr."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from core.arch.config import short_int
from core.models.frontier.summary import BUDGETS, CAVEAT, CSV_KEYS, budget_sentence
from resources import CALIB_TEXT, EVAL_TEXT
from sandbox.cli.text_file import read_text as read_file


def add_frontier_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="smollm2-135m, minilm-l6, or a local Hugging Face folder")
    p.add_argument("--protocol", choices=("window", "compress"), default="window",
                   help="window: every method on every query of the samples (default); compress: kvpress's protocol, "
                        "the context's cache evicted after its prefill and the next 256 tokens read against it")
    p.add_argument("--methods", default=None,
                   help="comma-separated: heads, latent, window, quant (the window protocol's default: all four); "
                        "with --protocol compress also streaming, snapkv, h2o, tova, knorm, expected (its default: "
                        "those six)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--ratios", help="compress: fractions of the context to evict, e.g. 0.25,0.5,0.75 "
                                         "(default 0.25,0.5,0.75,0.875)")
    budget.add_argument("--budget-mib", type=float, help="compress: fit one sequence's cache in this many MiB")
    budget.add_argument("--budget-gpu", help="compress: fit --sequences sequences on this GPU (h100, h200, ...)")
    p.add_argument("--sequences", type=int, default=None, help="compress, with --budget-gpu: sequences sharing it")
    p.add_argument("--text-file", help="the evaluation text (default: the shipped Alice chapter)")
    p.add_argument("--samples", type=int, default=None,
                   help="evaluation samples of 1,024 tokens (512 for an encoder); default 2 (window protocol only)")
    p.add_argument("--context", type=int, help="tokens per sample (default: 1,024, or 512 for an encoder); compress: "
                                               "the context's tokens (default 1,024)")
    p.add_argument("--no-cache", action="store_true", help="compute again even when this frontier is cached")
    p.add_argument("--allow-pickle", action="store_true", help="load a folder that has only pickle weights")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object")
    fmt.add_argument("--csv", action="store_true", help="one CSV row per point")


def read_text(path: str | None, default: Path) -> str:
    """The file's text, or the default's (sandbox/cli/text_file.py: bounded, UTF-8)."""
    return read_file(default if path is None else path, "the frontier reads at most 64 samples of 1,024 tokens")


def cmd_frontier(args: argparse.Namespace) -> int:
    from core.models.frontier import cache as frontier_cache
    from core.models.frontier.run import run_frontier, shape_of
    from core.models.kv.methods import default_sweep, parse_families
    from core.models.source import cache_identity, load_model

    if args.protocol == "compress":
        from sandbox.cli.frontier_compress import cmd_compress

        return cmd_compress(args)
    if args.ratios is not None or args.budget_mib is not None or args.budget_gpu is not None:
        raise ValueError("--ratios and the budgets are the compress protocol's; add --protocol compress.")
    families = parse_families(args.methods if args.methods is not None else "heads,latent,window,quant")
    args.samples = 2 if args.samples is None else args.samples
    if not 1 <= args.samples <= 64:
        raise ValueError(f"--samples must be from 1 to 64, not {short_int(args.samples)}.")
    if args.context is not None and not 16 <= args.context <= 8192:
        raise ValueError(f"--context must be from 16 to 8,192 tokens, not {short_int(args.context)}.")
    eval_text = read_text(args.text_file, EVAL_TEXT)
    calib_text = read_text(None, CALIB_TEXT)

    def say(text: str, fraction: float) -> None:
        print(f"  {fraction * 100:3.0f}%  {text}", file=sys.stderr, flush=True)

    m = load_model(args.model, progress=say, allow_pickle=args.allow_pickle)
    from core.models.frontier.run import samples_of

    samples = samples_of(m, eval_text, args.samples, args.context)
    context = int(samples[0].shape[1])
    if args.context is not None and context < args.context:
        why = "the text is that long" if context < min(m.max_tokens, args.context) - 2 else f"{m.name} reads no more here"
        print(f"  note: the samples are {context} tokens, not {args.context}: {why}.", file=sys.stderr)
    if len(samples) < args.samples:
        print(f"  note: the text makes {len(samples)} sample(s) of {context} tokens, not {args.samples}; "
              "give a longer --text-file for more.", file=sys.stderr)
    methods = default_sweep(shape_of(m), context, families)
    key = frontier_cache.cache_key(m.name, cache_identity(m), eval_text, calib_text, methods, args.samples,
                                   context)
    result = None if args.no_cache else frontier_cache.load(key)
    cached = result is not None
    if result is None and not args.no_cache:  # the frontier of every method, run before: these methods' points
        everything = frontier_cache.load(frontier_cache.cache_key(m.name, cache_identity(m), eval_text, calib_text,
                                                                  default_sweep(shape_of(m), context), args.samples,
                                                                  context))
        if everything is not None:
            wanted = {x.method for x in methods}
            everything.points = [p for p in everything.points if p.method in wanted]
            result, cached = everything, True
    if result is None:
        result = run_frontier(m, eval_text, calib_text, methods, n_samples=args.samples, context=context,
                              progress=say)
        frontier_cache.save(key, result)
    else:
        say("from the cache (--no-cache computes it again)", 1.0)
    rows = [result.baseline.to_json()] + [p.to_json() for p in result.points]
    if args.json:
        out = result.to_json()
        out["budgets"] = {f"{b:.4f}": budget_sentence(rows, b, m.kind, m.name) for b in BUDGETS}
        print(json.dumps(out, indent=1, allow_nan=False))  # figures are finite or null (FrontierPoint.to_json)
        return 0
    if args.csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=CSV_KEYS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return 0
    cost_name = "loss change" if m.kind == "causal" else "1 - cosine"
    how = "read from the cache, computed" if cached else "computed"
    print(f"{m.name}: {result.samples} sample(s) of {result.context} tokens ({result.eval_tokens} in all), "
          f"{how} in {result.seconds:.0f} s")
    print(f"{'point':38s} {'KV B/token':>11s} {'of own':>7s} {cost_name:>12s} {'attn JS':>8s} {'out err':>8s}")
    def num(value: float | None, spec: str) -> str:
        if value is None:
            return "-"
        text = format(value, spec)
        return text.replace("-", " ") if text.strip("- 0.,") == "" else text  # never "-0.0000"

    for r in rows:
        print(f"{r['label'][:38]:38s} {num(r['kv_bytes_per_token'], '11,.0f')} {num(r['kv_fraction'], '7.3f')} "
              f"{num(r['cost'], '12.4f')} {num(r['js_mean'], '8.4f')} {num(r['output_rel_error'], '8.4f')}")
    print()
    for b in BUDGETS:
        print(budget_sentence(rows, b, m.kind, m.name))
    print(CAVEAT)
    return 0
