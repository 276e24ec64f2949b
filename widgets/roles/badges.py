"""Role badges for heatmap tiles and the legend that states what they mean (plain values in)."""

from __future__ import annotations

import numpy as np

from core.models.head_roles import BADGE_ROLES, BADGE_THRESHOLD, ROLE_TEXT, SHORT, badge

ROLE_COLOURS = {"previous": "#f59e0b", "duplicate": "#38bdf8", "induction": "#f472b6", "sink": "#d4d4d4",
                "self": "#34d399"}


def badges_for(scores: dict[str, np.ndarray], n_heads: int) -> list[tuple[str, str] | None]:
    """scores {role: (H,)} -> per head ('ind 0.92', colour) for its best role above the threshold."""
    out: list[tuple[str, str] | None] = []
    for h in range(n_heads):
        b = badge(scores, h)
        out.append(None if b is None else (f"{SHORT[b[0]]} {b[1]:.2f}", ROLE_COLOURS[b[0]]))
    return out


BRIEF = {"previous": "previous token", "duplicate": "earlier copies", "induction": "after an earlier copy",
         "sink": "first token", "self": "itself"}


def legend_html(probe: str) -> str:
    """One line: each badge and, in brief, where its head looks (legend_tooltip says it in full)."""
    parts = [f"<span style='background:{ROLE_COLOURS[r]};color:black'>&nbsp;{SHORT[r]}&nbsp;</span> {BRIEF[r]}"
             for r in BADGE_ROLES]
    where = "the induction probe" if probe == "induction" else "your text"
    return f"Badges on {where}, score ≥ {BADGE_THRESHOLD:.2f}: " + " · ".join(parts)


def legend_tooltip(probe: str) -> str:
    where = "the induction probe (seeded random tokens repeated twice)" if probe == "induction" else "your text"
    lines = [f"A head's strongest role on {where}, shown only at a score of {BADGE_THRESHOLD:.2f} or more "
             "(TransformerLens' head-detector definitions; random weights rarely reach it)."]
    return "\n".join(lines + [ROLE_TEXT[r] for r in BADGE_ROLES])
