"""The window's menus as data: each item names its menu, its text, its shortcut and what it calls. The window
supplies the calls (docs/app.md: Shortcuts)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLineEdit, QMainWindow

from widgets.common.shortcut_pass import ShortcutPass

# The tabs' tooltips (by index; the View menu's Ctrl+1-9 shows each tab).
TAB_TIPS = {
    3: "A real model's every layer x every head; click a tile to open that head",
    5: "What each way of shrinking a real model's KV cache costs it, on its own weights",
    6: "Will the model fit on these GPUs, and how fast can it decode: memory plan and roofline",
    7: "One layer's attention over thousands of tokens, zoomable to single tokens, and a decode run that grows its cache",
    8: "One sequence's cache against context: KV that grows, a hybrid stack's state that stays flat, a baseline beside",
}
TAB_NAMES = ("Heatmaps", "Compare", "Sweep", "Layers", "Roles", "Frontier", "Plan", "Long", "Memory")


@dataclass(frozen=True)
class MenuItem:
    menu: str  # "&File", "&Compare", "&View"
    text: str
    shortcut: str
    call: Callable[[], object]
    tip: str = ""
    separator_before: bool = False


def build_menus(window: QMainWindow, items: list[MenuItem], text_field: QLineEdit) -> dict[str, QAction]:
    """The menus, in the order their items first name them; returns each action by its text (without '&')."""
    menus: dict[str, object] = {}
    actions: dict[str, QAction] = {}
    for item in items:
        if item.menu not in menus:
            menus[item.menu] = window.menuBar().addMenu(item.menu)
        menu = menus[item.menu]
        action = QAction(item.text, window, shortcut=QKeySequence(item.shortcut))
        if item.tip:
            action.setToolTip(item.tip)
        action.triggered.connect(lambda _checked=False, call=item.call: call())
        if item.separator_before:
            menu.addSeparator()
        menu.addAction(action)
        actions[item.text.replace("&", "")] = action
    # The window's shortcuts reach their actions from the Text field too (it would take Ctrl+E as "end of line").
    passing = ShortcutPass([a.shortcut() for a in actions.values()], text_field)
    text_field.installEventFilter(passing)
    return actions
