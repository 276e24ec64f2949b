"""A combo box narrower than its longest item that shows "viridis (colour-bl…" instead of a name cut mid-letter.

Qt draws a combo's current text clipped at the box's edge; where a row must fit a 1024 px window the boxes are
narrower than their names, so this one elides the text it draws, and says it whole in its tooltip."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QStyle, QStyleOptionComboBox, QStylePainter

from widgets.common.wheel import FocusCombo


class ElidedCombo(FocusCombo):
    def __init__(self, *args: Any, chars: int = 10) -> None:
        super().__init__(*args)
        self.setSizeAdjustPolicy(FocusCombo.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(chars)

    def paintEvent(self, _event: object) -> None:  # noqa: N802 (Qt's name)
        painter = QStylePainter(self)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        field = self.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                            QStyle.SubControl.SC_ComboBoxEditField, self)
        option.currentText = self.fontMetrics().elidedText(option.currentText, Qt.TextElideMode.ElideRight,
                                                           field.width())
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)

    def elided_text(self) -> str:
        """The current text as drawn (for tests and the hover)."""
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        field = self.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                            QStyle.SubControl.SC_ComboBoxEditField, self)
        return self.fontMetrics().elidedText(self.currentText(), Qt.TextElideMode.ElideRight, field.width())
