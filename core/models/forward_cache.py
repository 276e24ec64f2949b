"""The unchanged forward of the tokens on screen, kept so that moving to another layer, or trying
another head change, reruns only what differs (the changed forward), not the whole model twice."""

from __future__ import annotations

from typing import Any


class ForwardCache:
    """One entry: the most recent (model, tokens) and its unchanged run, plus what callers derive
    from it (head-role scores), dropped together when the model or the tokens change."""

    def __init__(self) -> None:
        self._model: Any = None  # the model object itself (an id could be reused by another)
        self._ids: tuple[int, ...] = ()
        self._run: Any = None
        self.derived: dict[Any, Any] = {}

    def get(self, model: Any, ids: list[int]) -> Any:
        return self._run if self._model is model.model and self._ids == tuple(ids) else None

    def put(self, model: Any, ids: list[int], run: Any) -> Any:
        self._model, self._ids, self._run = model.model, tuple(ids), run
        self.derived = {}
        return run

    def clear(self) -> None:
        self._model, self._ids, self._run, self.derived = None, (), None, {}
