"""A slider and a spin box bound to one value that must be one of a list of allowed values.

The slider steps over the allowed values (an index), so a drag can never land on an invalid
one; the spin box accepts typing and snaps to the nearest allowed value (or, for free values
such as seq_len, keeps any number in range). Writing back blocks the echo signal (napari).

The owner may pace the value's changes to the screen's frames (pace(FRAME_MS): widgets/common/frame_gate.py): in a fast
drag the slider and the spin box show each step at once, and value_changed comes at most once a frame, with the
newest value; value() stays the last value emitted until then, so the owner never reads a step it has not handled.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import QAbstractSpinBox, QHBoxLayout, QWidget

from core.arch.config import nearest
from widgets.common.frame_gate import FrameGate
from widgets.common.wheel import FocusSlider, FocusSpin


class SliderSpin(QWidget):
    value_changed = Signal(int)
    snapped = Signal(int, int)  # a typed value that is not allowed, and the allowed one kept instead

    def __init__(
        self, choices: list[int], value: int, *, free: bool = False,
        minimum: int | None = None, maximum: int | None = None, tooltip: str = "",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._free = free
        self._choices: list[int] = []
        self._value = value
        self.slider = FocusSlider(Qt.Orientation.Horizontal)
        self.slider.setPageStep(1)
        self.spin = _StepSpin(self._step_spin)
        self.spin.setKeyboardTracking(False)  # typing "4096" is one change, not four
        self.spin.setRange(minimum or 1, maximum or 2**31 - 1)
        self.spin.setAccelerated(True)
        self.spin.setMinimumWidth(80)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.slider, 1)
        lay.addWidget(self.spin)
        if tooltip:
            for w in (self, self.slider, self.spin):
                w.setToolTip(tooltip)
        self.gate = FrameGate(self._emit_now, 0.0, self)  # off until the owner paces it
        self.set_choices(choices, value)
        self.slider.valueChanged.connect(self._on_slider_moved)
        self.spin.valueChanged.connect(self._on_spin_changed)

    def choices(self) -> list[int]:
        return list(self._choices)

    def value(self) -> int:
        """The last value emitted or written (a paced drag's newest step may still wait for its frame)."""
        return self._value

    def pace(self, frame_ms: float) -> None:
        """value_changed at most once per frame_ms (0: at every change)."""
        self.gate.frame_ms = frame_ms

    def holding(self) -> bool:
        """A step the slider shows waits for its frame to be emitted."""
        return self.gate.holding()

    def set_choices(self, choices: list[int], value: int | None = None) -> int:
        """Replace the allowed values; keep (or snap) the value without emitting. Returns it."""
        self._choices = sorted(set(choices))
        target = self._value if value is None else value
        if not self._free or not (self.spin.minimum() <= target <= self.spin.maximum()):
            target = nearest(target, self._choices)
        self._write(target)
        return target

    def set_value(self, value: int) -> int:
        """Set without emitting; snaps unless free. Returns the value kept."""
        if not self._free:
            value = nearest(value, self._choices)
        value = max(self.spin.minimum(), min(self.spin.maximum(), value))
        self._write(value)
        return value

    def _write(self, value: int) -> None:
        self.gate.drop()  # the owner's value (or the one just emitted) replaces a step that waits
        self._value = value
        self._show(value)

    def _show(self, value: int) -> None:
        with QSignalBlocker(self.slider), QSignalBlocker(self.spin):
            self.slider.setRange(0, max(0, len(self._choices) - 1))
            self.slider.setEnabled(len(self._choices) > 1)  # one choice: nothing to drag (the owner says why)
            self.slider.setValue(self._choices.index(nearest(value, self._choices)))
            self.spin.setValue(value)

    def _emit_if_changed(self, value: int) -> None:
        if value == self._value and not self.gate.holding():
            self._write(value)  # nothing to emit: the slider and the number show the owner's value again
            return
        self.gate.offer(value)
        if self.gate.holding():
            self._show(value)  # the slider and the number show the step that waits for its frame

    def _emit_now(self, value: int) -> bool:
        """The gate's call: False when the value is the owner's already (a drag that came back within a frame)."""
        changed = value != self._value
        self._write(value)
        if changed:
            self.value_changed.emit(value)
        return changed

    def _on_slider_moved(self, index: int) -> None:
        self._emit_if_changed(self._choices[index])

    def _on_spin_changed(self, value: int) -> None:
        """A typed value goes at once, held step or not: one change, whose snap the owner explains with it."""
        kept = value if self._free else nearest(value, self._choices)
        self.gate.now(kept)  # the gate says it was called: a window paints it in a turn of its own
        if kept != value:
            self.snapped.emit(value, kept)

    def _step_spin(self, steps: int) -> None:
        """Arrow keys and wheel on the spin box step over the allowed values, from the value shown."""
        shown = self.gate.held() if self.gate.holding() else self._value
        if steps > 0:
            above = [c for c in self._choices if c > shown]
            target = above[min(steps, len(above)) - 1] if above else shown
        else:
            below = [c for c in self._choices if c < shown]
            target = below[-min(-steps, len(below))] if below else shown
        self._emit_if_changed(target)


def paced_sliders(root: QWidget, frame_ms: float) -> list[SliderSpin]:
    """Every SliderSpin under root, paced to frame_ms (see the module's docstring)."""
    sliders = root.findChildren(SliderSpin)
    for s in sliders:
        s.pace(frame_ms)
    return sliders


class _StepSpin(FocusSpin):
    """A spin box whose steps are decided by its owner."""

    def __init__(self, step: Callable[[int], None]) -> None:
        super().__init__()
        self._step = step

    def stepBy(self, steps: int) -> None:  # noqa: N802 (Qt's name)
        self._step(steps)

    def stepEnabled(self) -> QAbstractSpinBox.StepEnabledFlag:  # noqa: N802
        return QAbstractSpinBox.StepEnabledFlag.StepUpEnabled | QAbstractSpinBox.StepEnabledFlag.StepDownEnabled
