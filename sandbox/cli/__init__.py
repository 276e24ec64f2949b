"""The command line: `attention-sandbox` and its commands (report, sweep, inspect, frontier, plan, longmap, decode)."""
