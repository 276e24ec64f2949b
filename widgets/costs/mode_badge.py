"""The attention mode's badge beside the biases (MHA, GQA-4 (group 3), MQA, MLA (latent 512 + rope 64))."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter
from PySide6.QtWidgets import QLabel, QWidget

from core.arch.config import AttentionConfig
from core.kinds.registry import kind_of
from widgets.common.style import set_style, set_tip

COLOURS = {"MHA": "#2563eb", "GQA": "#059669", "MQA": "#c026d3"}  # a kind of its own brings its colour
# One style sheet for every mode; the mode's colour is painted (paintEvent): a new style sheet re-polishes the label,
# 0.4 ms at each MHA/GQA switch of a drag, in the same event-loop turn as the drag's step. The selector keeps the
# white text off the badge's tooltip, which Qt styles with the sheet of the widget that shows it.
STYLE = "QLabel#modeBadge { color:white; font-weight:bold; padding:2px 6px; }"


class ModeBadge(QLabel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("modeBadge")
        # Room for the usual badges, so MHA/GQA/MQA switches move nothing; a longer one (MLA's) widens the row
        # while it is shown and gives the room back (a 1024-wide window must still fit).
        self.room_text = " GQA-16 (group 16) "  # its advance + 12 px: the width the badge keeps at least
        self._around: tuple[int, int] | None = None  # (width the label adds to its text's advance, height)
        self.colour = QColor(COLOURS["MHA"])
        set_style(self, STYLE)

    def show_config(self, cfg: AttentionConfig) -> None:
        spec = cfg.layer_spec()
        kind = kind_of(spec)
        colour = QColor(kind.colour or COLOURS.get(kind.mode(spec), COLOURS["MHA"]))
        if colour != self.colour:
            self.colour = colour
            self.update()
        self.setText(f" {kind.label(spec)} ")
        self._fit()
        set_tip(self, kind.badge_tip(spec))

    def _fit(self) -> None:
        """A fixed size, so a new text that fits asks no layout to run (a relayout of the side panel at every
        slider step otherwise): the usual badges' room, or the text's own when it needs more (MLA's), given
        back when it no longer does."""
        self.ensurePolished()  # the style sheet's bold font and padding
        fm = QFontMetrics(self.font())
        if self._around is None:  # learnt before the size is fixed: a style sheet's label hints at least its minimum
            hint = self.sizeHint()
            self._around = (hint.width() - fm.horizontalAdvance(self.text()), hint.height())
        size = (max(fm.horizontalAdvance(self.room_text) + 12, fm.horizontalAdvance(self.text()) + self._around[0]),
                self._around[1])
        if (self.minimumWidth(), self.minimumHeight(), self.maximumWidth(), self.maximumHeight()) != size * 2:
            self.setFixedSize(*size)

    def paintEvent(self, event: Any) -> None:  # noqa: N802 (Qt's name)
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(self.colour)
        p.drawRoundedRect(self.rect(), 4, 4)
        p.end()
        super().paintEvent(event)  # the text, white, over it

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt's name)
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange) and self.text():
            self._fit()  # a new font
