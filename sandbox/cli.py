"""attention-sandbox: the app (no command), `report`, `snapshot`."""

from __future__ import annotations

import argparse
import json
import sys

from sandbox.cli_args import (
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
    rep.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    rep.add_argument("--list-presets", action="store_true", help="list preset names and exit")

    snap = sub.add_parser("snapshot", help="render the main window offscreen to PNG files")
    add_config_args(snap)
    snap.add_argument("--text", help="the input text (default: the seeds' example sentence)")
    snap.add_argument("--out", required=True, help="folder for window.png, heatmaps.png, manifest.json")
    snap.add_argument("--no-time", action="store_true", help="skip timing (faster)")
    return parser


def cmd_snapshot(args: argparse.Namespace) -> int:
    from pathlib import Path

    from core.device import default_dtype, resolve_device
    from sandbox.atomic import ExportError
    from sandbox.snapshot import take_snapshot

    cfg = config_from_args(args, default_dtype(resolve_device(args.device)))
    try:
        paths = take_snapshot(cfg, args.text, Path(args.out), args.device, timing=not args.no_time)
    except ExportError as exc:
        fail(str(exc))
    for p in paths:
        print(p)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from core.presets import load_presets

    if args.list_presets:
        for preset in load_presets():
            print(f"{preset.key:<20} {preset.name}: {preset.note}")
        return 0
    from core.device import default_dtype, resolve_device
    from core.report import build_report, format_report

    device = resolve_device(args.device)
    cfg = config_from_args(args, default_dtype(device))
    timing = None
    if args.time:
        from core.layer_timing import run_timing

        timing = run_timing(cfg, device).to_report()
    report = build_report(cfg, timing)
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = build_parser().parse_args(argv)
        if args.command == "report":
            return cmd_report(args)
        if args.command == "snapshot":
            return cmd_snapshot(args)
    except UsageError as exc:
        fail(str(exc))
    except ValueError as exc:
        fail(str(exc))
    from sandbox.app import run_app

    return run_app()


if __name__ == "__main__":
    sys.exit(main())
