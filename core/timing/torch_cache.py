"""Where torch keeps what it compiles: in the app's own cache folder, not /tmp. inspect and frontier left
/tmp/torchinductor_<user> behind (torch's default), shared by every user of the machine and never cleaned."""

from __future__ import annotations

import os

from core.models.catalog import cache_dir


def keep_compiled_in_app_cache() -> None:
    """Set before torch is imported (a user's own setting wins): inductor's and Triton's caches under
    <cache>/attention-sandbox/torch."""
    base = cache_dir() / "torch"
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:  # a blocked or read-only cache: torch's own default, rather than every model failing
        return
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(base / "inductor"))
    os.environ.setdefault("TRITON_CACHE_DIR", str(base / "triton"))
