"""What pyqtgraph actually draws of an axis: the tick labels it keeps (it drops crowded or out-of-bounds ones), read
from its own draw specs rather than from the ticks asked for."""

from PySide6.QtGui import QImage, QPainter


def drawn_labels(axis, in_scene: bool = False) -> list:
    """[(rect, text)] of the tick labels axis draws, in its own coordinates or (in_scene) the scene's."""
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    labels = [(rect, text) for rect, _flags, text in specs[2]] if specs else []
    return [(axis.mapRectToScene(rect), text) for rect, text in labels] if in_scene else labels
