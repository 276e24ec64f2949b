"""Per head, where a long input's attention goes: the first token (the sink), the band of the last W
keys, what lies beyond it, a learned sink's share, the mean distance back and the key that takes the most."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

COLUMNS = ("head", "sink (token 0)", "band", "beyond", "learned sink", "mean distance", "most-attended key")
TIPS = (
    "Query head (and the KV head it reads)",
    "The attention the queries give the first token, averaged over every query after the first",
    "The attention on the keys within the band: the last W keys, the query's own included (W: the layer's window, "
    "else the band set above)",
    "The attention on the keys further back than the band (the first token not counted: it is the sink)",
    "A learned sink logit's share of each row (gpt-oss); 0 without one",
    "How far back, in tokens, the attention reaches on average: sum over keys of p x (query - key)",
    "The key position that takes the most attention, averaged over the queries, and how much",
)


def percent(x: float) -> str:
    """One decimal everywhere; a share too small for it reads "<0.1%", none at all "0"."""
    return f"{100 * x:.1f}%" if x >= 0.0005 else ("0" if x <= 0 else "<0.1%")


class LongStatsTable(QTableWidget):
    head_clicked = Signal(int)

    def __init__(self, parent: Any = None) -> None:
        super().__init__(0, len(COLUMNS), parent)
        self.setHorizontalHeaderLabels(list(COLUMNS))
        for c, tip in enumerate(TIPS):
            self.horizontalHeaderItem(c).setToolTip(tip)
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.horizontalHeader().setStretchLastSection(True)
        self.cellClicked.connect(lambda row, _col: self.head_clicked.emit(row))
        self.rows_shown: list[list[str]] = []

    def show_stats(self, stats: dict | None, labels: list[str] | None, n_kv_heads: int) -> None:
        """stats: core/long/map.py's HeadStats.to_json(); labels: the input's tokens (for the top key's name)."""
        self.setRowCount(0)
        self.rows_shown = []
        if not stats:
            return
        n = len(stats["sink"])
        g = max(1, n // max(1, n_kv_heads))
        self.horizontalHeaderItem(2).setText(f"band (last {stats['band_width']:,})")
        self.horizontalHeaderItem(3).setText(f"beyond {stats['band_width']:,}")
        self.setRowCount(n)
        learned = any(x > 0 for x in stats["learned_sink"])
        self.setColumnHidden(4, not learned)
        for h in range(n):
            key = stats["top_key"][h]
            name = f" '{labels[key][:12]}'" if labels and 0 <= key < len(labels) and not labels[key].startswith("#") else ""
            row = [f"h{h}" + (f" · kv{h // g}" if g > 1 else ""), percent(stats["sink"][h]), percent(stats["band"][h]),
                   percent(stats["beyond"][h]), percent(stats["learned_sink"][h]), f"{stats['distance'][h]:,.0f}",
                   f"#{key:,}{name}: {percent(stats['top_mass'][h])}"]
            self.rows_shown.append(row)
            for c, text in enumerate(row):
                item = QTableWidgetItem(text)
                if c:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.setItem(h, c, item)
