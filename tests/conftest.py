import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from hypothesis import HealthCheck, settings  # noqa: E402

# `make test` runs a few hundred examples per property; the full run is
# HYPOTHESIS_PROFILE=full .venv/bin/python -m pytest tests/property (10,000 configurations).
settings.register_profile("ci", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
settings.register_profile("full", max_examples=10_000, deadline=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
