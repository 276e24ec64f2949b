"""Runners that carry the compute jobs: a thread (tests, the CLI) or worker processes (the app), the watchdog, shared arrays."""
