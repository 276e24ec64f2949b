"""`attention-sandbox frontier --protocol compress`: kvpress's protocol on a real model, one row per point (the
method, its ratio, the tokens kept, the cache's bytes a sequence and the loss), then the sentence at the budget.
Progress goes to stderr."""

from __future__ import annotations

import argparse
import csv
import json
import sys

from core.arch.config import short_int
from core.models.evict.summary import CSV_KEYS as ROW_KEYS

FRACTIONS = ((1 / 2, "1/2"), (1 / 4, "1/4"), (1 / 8, "1/8"))


def cmd_compress(args: argparse.Namespace) -> int:
    from core.models.evict import cache as compress_cache
    from core.models.evict.budget import gpu_budget_mib
    from core.models.evict.protocol import CONTEXT, CONTINUATION
    from core.models.evict.run import RATIOS, CompressRun, parse_methods, parse_ratios, run_compress
    from core.models.evict.summary import CAVEAT, compress_sentence, point_name
    from core.models.source import cache_identity, load_model
    from core.plan.gpus import find_gpu
    from resources import CALIB_TEXT, EVAL_TEXT
    from sandbox.cli.text_file import read_text

    presses, families = parse_methods(args.methods if args.methods is not None else
                                      "streaming,snapkv,h2o,tova,knorm,expected")
    if args.samples is not None:
        raise ValueError("--samples is the window protocol's; the compress protocol reads one context and the text "
                         "that follows it (set its length with --context).")
    ratios = parse_ratios(args.ratios) if args.ratios is not None else RATIOS
    if args.sequences is not None and args.budget_gpu is None:
        raise ValueError("--sequences goes with --budget-gpu (the GPU they share).")
    if args.budget_gpu is not None and args.sequences is None:
        raise ValueError("--budget-gpu needs --sequences: how many sequences share the GPU.")
    if args.budget_gpu == "this-machine":
        raise ValueError("--budget-gpu takes a GPU of the catalogue (h100-sxm, h200, ...), not this-machine: its "
                         "memory is not a serving GPU's.")
    if args.context is not None and not 16 <= args.context <= 8192:
        raise ValueError(f"--context must be from 16 to 8,192 tokens, not {short_int(args.context)}.")
    context = args.context or CONTEXT
    limit = "the compress protocol reads the first 1,280 tokens"
    text = read_text(EVAL_TEXT if args.text_file is None else args.text_file, limit)
    calib = read_text(CALIB_TEXT, limit) if "latent" in families else ""

    def say(words: str, fraction: float) -> None:
        print(f"  {fraction * 100:3.0f}%  {words}", file=sys.stderr, flush=True)

    m = load_model(args.model, progress=say, allow_pickle=args.allow_pickle)
    budget = args.budget_mib
    budget_words = f"{budget:,.2f} MiB a sequence" if budget is not None else ""
    if args.budget_gpu is not None:
        gpu = find_gpu(args.budget_gpu)
        budget = gpu_budget_mib(gpu.memory_bytes, sum(p.numel() for p in m.model.parameters()), args.sequences)
        budget_words = f"{args.sequences:,} sequences on one {gpu.name} ({budget:,.2f} MiB of cache each)"
        say(budget_words, 0.0)
    if budget is not None:
        ratios = None
    key = compress_cache.cache_key(m.name, cache_identity(m), text, calib, presses, ratios, budget, families, context,
                                   CONTINUATION)
    run = CompressRun(m, text, presses, ratios, budget, families, calib, context)
    run.budget_words = budget_words
    for note in run.notes:
        print(f"  note: {note}.", file=sys.stderr)
    result = None if args.no_cache else compress_cache.load(key)
    if result is not None and not run.matches(result):
        result = None  # another run's, or a damaged file: computed again
    if result is None:
        result = run_compress(m, text, progress=say, run=run)
        compress_cache.save(key, result)
    else:
        say("from the cache (--no-cache computes it again)", 1.0)
    whole = result.baseline.kv_bytes
    rows = [{k: p.to_json()[k] for k in ROW_KEYS} for p in [result.baseline, *result.points]]
    names = [point_name(p.to_json()) for p in [result.baseline, *result.points]]
    points = [p.to_json() for p in result.points]
    if budget is not None:
        sentences = {"budget": compress_sentence(points, budget * 2**20, budget_words, show_bytes=False)}
    else:
        sentences = {name: compress_sentence(points, whole * f, f"{name} of {m.name}'s cache") for f, name in FRACTIONS}
    if args.json:
        out = {"protocol": "compress", "model": m.name, "context": result.context, "continuation": result.continuation,
               "bytes_per_token": result.bytes_per_token, "budget_mib": budget, "seconds": result.seconds,
               "rows": rows, "sentences": sentences, "notes": result.notes}
        print(json.dumps(out, indent=1, allow_nan=False))
        return 0
    if args.csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=ROW_KEYS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return 0
    print(f"{m.name}: {result.context:,} tokens of context, the next {result.continuation} read against each cache; "
          f"{result.seconds:.0f} s")
    print(f"{'point':40s} {'ratio':>6s} {'kept':>6s} {'KV MiB':>8s} {'loss':>8s} {'change':>8s}")
    for name, r in zip(names, rows, strict=True):
        print(f"{name[:40]:40s} {r['ratio']:6.3f} {r['kept_tokens']:6,d} {r['kv_bytes'] / 2**20:8.2f} {r['loss']:8.4f} "
              f"{r['loss_change']:+8.4f}")
    print()
    for sentence in sentences.values():
        print(sentence)
    print(CAVEAT)
    return 0
