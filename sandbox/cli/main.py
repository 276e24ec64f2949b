"""attention-sandbox: the app (no command), `report`, `sweep`, `inspect`, `heads`, `frontier`, `plan`, `longmap`,
`decode`, `snapshot`."""

from __future__ import annotations

import argparse
import json
import os
import sys

from core.files import finite_json
from core.files.atomic import ExportError
from core.kinds.registry import kind_of
from sandbox.cli.args import (
    PROG,
    OneLineParser,
    UsageError,
    add_config_args,
    config_from_args,
    fail,
)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog=PROG, description="Explore the design tradeoffs of attention layers.")
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser)
    sub.add_parser("app", help="launch the desktop app (the default)")

    rep = sub.add_parser("report", help="print every number of one configuration")
    add_config_args(rep)
    rep.add_argument("--time", action="store_true", help="also run and time the layer")
    rep.add_argument("--force", action="store_true", help="time it even when the estimate is over a minute")
    rep.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    rep.add_argument("--list-presets", action="store_true", help="list preset names and exit")

    from core.study.sweep import knob_help

    sw = sub.add_parser("sweep", help="one row per value of one knob, the other knobs as given")
    add_config_args(sw)
    sw.add_argument("--vary", required=True, metavar="KNOB=VALUES",
                    help=knob_help())
    sw.add_argument("--time", action="store_true", help="also time every point")
    sw.add_argument("--force", action="store_true", help="time points whose estimate is over a minute")
    fmt = sw.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="a JSON list of rows")
    fmt.add_argument("--csv", action="store_true", help="CSV with one column per report field")

    from sandbox.cli.inspect import add_heads_args, add_inspect_args

    ins = sub.add_parser("inspect", help="a real model's heads, and what changing them costs")
    add_inspect_args(ins)
    heads = sub.add_parser("heads", help="score what every head of a real model does")
    add_heads_args(heads)

    from sandbox.cli.frontier import add_frontier_args

    front = sub.add_parser("frontier", help="what each way of shrinking a real model's KV cache costs it")
    add_frontier_args(front)

    from sandbox.cli.plan import add_plan_args

    plan = sub.add_parser("plan", help="will a model fit on these GPUs, and how fast can it decode")
    add_config_args(plan)
    add_plan_args(plan)

    from sandbox.cli.long import add_decode_args, add_longmap_args

    longmap = sub.add_parser("longmap", help="one layer's attention over thousands of tokens, pooled to an overview")
    add_longmap_args(longmap)
    decode = sub.add_parser("decode", help="a decode run: the cache and the measured time of every step")
    add_decode_args(decode)

    sub.add_parser("prepare-models", help="dequantise and cache the shipped models now (make does this once)")

    snap = sub.add_parser("snapshot", help="render the main window offscreen to PNG files")
    add_config_args(snap)
    snap.add_argument("--text", help="the input text (default: the seeds' example sentence)")
    snap.add_argument("--out", required=True, help="folder for window.png, heatmaps.png, manifest.json")
    snap.add_argument("--no-time", action="store_true", help="skip timing (faster)")
    return parser


def preset_fields(fields: dict[str, object]) -> dict[str, object]:
    """A preset's fields as a file keeps them: a kind's widths under the kind's name, a hybrid stack as its pattern
    and mixers."""
    out = {k: v for k, v in fields.items() if k not in ("widths", "stack")}
    widths = fields.get("widths")
    if widths is not None:
        out[widths.kind] = widths.to_dict()  # type: ignore[attr-defined]
    stack = fields.get("stack")
    if stack is not None:
        out["stack"] = stack.to_dict()  # type: ignore[attr-defined]
    return out


def cmd_snapshot(args: argparse.Namespace) -> int:

    from core.device import default_dtype, resolve_device
    from core.files.atomic import ExportError, out_folder
    from sandbox.window.snapshot import take_snapshot

    cfg = config_from_args(args, default_dtype(resolve_device(args.device)))
    try:
        paths = take_snapshot(cfg, args.text, out_folder(args.out, make=False), args.device, timing=not args.no_time)
    except ExportError as exc:
        fail(str(exc))
    for p in paths:
        print(p)
    return 0


def cmd_prepare_models() -> int:
    """Make the shipped models' caches (SmolLM2's GGUF dequantised once, about 35 s here), so that the
    app's first open of a model is a cached load. A model that is not installed is skipped, with why."""
    import time

    from core.models.source import SHIPPED, load_model, shipped_unavailable_reason

    for key, name in SHIPPED.items():
        reason = shipped_unavailable_reason(key)
        if reason:
            print(f"{name}: skipped ({reason})")
            continue
        t0 = time.perf_counter()
        model = load_model(key)
        print(f"{name}: ready in {time.perf_counter() - t0:.1f} s (from {model.source})")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from core.arch.presets import load_presets

    if args.list_presets:
        if args.json:
            print(json.dumps([{"key": p.key, "name": p.name, "note": p.note, **preset_fields(p.fields)}
                              for p in load_presets()], indent=1))
            return 0
        for preset in load_presets():
            print(f"{preset.key:<20} {preset.name}: {preset.note}")
        return 0
    from core.device import default_dtype, resolve_device
    from core.report import build_report, format_report

    device = resolve_device(args.device)
    cfg = config_from_args(args, default_dtype(device))
    spec = cfg.layer_spec()
    for note in kind_of(spec).warnings(spec, cfg.d_model):
        print(f"{PROG}: warning: {note}", file=sys.stderr)
    timing = None
    if args.time:
        from core.timing.layer import run_timing
        from sandbox.cli.timing import check_estimate, interruptible, say, seconds_text

        seconds = check_estimate(cfg, device, args.force)
        say(f"about {seconds_text(seconds)} on {device.type.upper()}; Ctrl-C stops it")
        timing = interruptible(lambda stop: run_timing(cfg, device, should_stop=stop, progress=say)).to_report()
    report = build_report(cfg, timing)
    print(finite_json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    import csv

    from core.device import default_dtype, resolve_device
    from core.study.sweep import flatten, knob_value, parse_knob_values, plan_sweep, run_point

    knob, sep, values_text = args.vary.partition("=")
    if not sep:
        fail("--vary takes KNOB=VALUES, e.g. --vary n_kv_heads=32,16,8,4,2,1.")
    device = resolve_device(args.device)
    values = parse_knob_values(knob, values_text)
    if knob.strip() == "window" and args.window is None and isinstance(values[0], int) and values[0] >= 1:
        args.window = values[0]  # the base takes the first window, so a --layer-pattern has one to use
    base = config_from_args(args, default_dtype(device))
    points = plan_sweep(base, knob.strip(), values)
    timing_fn = None
    if args.time:
        from core.timing.layer import run_timing
        from sandbox.cli.timing import check_estimate, interruptible, say

        def timing_fn(cfg):
            check_estimate(cfg, device, args.force)  # a refusal stops the sweep at this point
            value = knob_value(cfg, knob.strip())
            say(f"{knob} = {value:,}" if isinstance(value, int) else f"{knob} = {value}")
            return interruptible(lambda stop: run_timing(cfg, device, should_stop=stop)).to_report()
    rows = []
    for point in points:
        row = run_point(point, timing_fn)
        rows.append(row)
        if row.status == "refused":
            break  # the memory guard or the time estimate stops the sweep at this point
    records = [{"value": r.value, "status": r.status, "reason": r.reason or None, **flatten(r.report or {})}
               for r in rows]
    if args.json:
        print(finite_json.dumps([{"value": r.value, "status": r.status, "reason": r.reason or None,
                                  "report": r.report} for r in rows], indent=1))
    elif args.csv:
        fields = list(dict.fromkeys(k for rec in records for k in rec))
        w = csv.DictWriter(sys.stdout, fieldnames=fields)
        w.writeheader()
        w.writerows(records)
    else:
        def num(value: object) -> str:
            return f"{value:,}" if isinstance(value, int) else "–"

        print(f"{knob:>12}  {'status':8} {'params':>16} {'FLOPs':>26} {'KV cache bytes':>22} {'median ms':>10}  note")
        for r in rows:
            rep = r.report or {}
            t = rep.get("timing") or {}
            shown = f"{r.value:,}" if isinstance(r.value, int) else str(r.value)
            print(f"{shown:>12}  {r.status:8} {num(rep.get('params', {}).get('total')):>16} "
                  f"{num(rep.get('flops', {}).get('total')):>26} {num(rep.get('kv_cache', {}).get('bytes_total')):>22} "
                  f"{(format(t['median_ms'], '.4g') if t else '–'):>10}  {r.reason}")
    if not any(r.status == "ok" for r in rows):
        why = "; ".join(f"{r.value}: {r.reason.rstrip('.')}" for r in rows[:4]) + ("; …" if len(rows) > 4 else "")
        print(f"{PROG}: error: no value of {knob} made a valid configuration ({why}).", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    from core.timing.torch_cache import keep_compiled_in_app_cache

    keep_compiled_in_app_cache()  # before any command imports torch (the worker processes inherit it)
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = build_parser().parse_args(argv)
        if args.command == "report":
            return cmd_report(args)
        if args.command == "heads":
            from sandbox.cli.inspect import cmd_heads

            return cmd_heads(args)
        if args.command == "inspect":
            from sandbox.cli.inspect import cmd_inspect

            return cmd_inspect(args)
        if args.command == "sweep":
            return cmd_sweep(args)
        if args.command == "frontier":
            from sandbox.cli.frontier import cmd_frontier

            return cmd_frontier(args)
        if args.command == "plan":
            from sandbox.cli.plan import cmd_plan

            return cmd_plan(args)
        if args.command in ("longmap", "decode"):
            from sandbox.cli.long import cmd_decode, cmd_longmap

            return cmd_longmap(args) if args.command == "longmap" else cmd_decode(args)
        if args.command == "snapshot":
            return cmd_snapshot(args)
        if args.command == "prepare-models":
            return cmd_prepare_models()
    except BrokenPipeError:  # `... | head`: the reader left; leave quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except UsageError as exc:
        fail(str(exc))
    except (ValueError, ExportError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted.", file=sys.stderr)
        return 130
    from sandbox.window.app import run_app

    return run_app()


if __name__ == "__main__":
    sys.exit(main())
