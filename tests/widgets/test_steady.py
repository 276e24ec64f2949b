"""The drag-time economies: tile titles planned once, layout requests stopped only when nothing moved."""

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPalette
from PySide6.QtWidgets import QApplication, QGridLayout, QLabel, QVBoxLayout, QWidget

from widgets.common.steady import SETTLE_MS, LayoutFirewall, SteadyLabel
from widgets.common.style import set_colour
from widgets.maps.mosaic import plan_layout
from widgets.maps.tile_titles import TileTitles


def test_tile_titles_fit_the_tile_and_follow_new_titles_and_badges(qtbot):
    titles = TileTitles()
    lay = plan_layout(4, 8, 2)
    titles.set_tiles(lay, ["h0 · kv0", "h1 · kv0", "h2 · kv1", "h3 · kv1"])
    font = QFont()
    font.setPointSize(8)
    fm = QFontMetrics(font)
    wide = titles._plan(fm, 400)
    assert [row[2].text() for row in wide] == ["h0 · kv0", "h1 · kv0", "h2 · kv1", "h3 · kv1"]
    assert [row[:2] for row in wide] == [lay.origin(h) for h in range(4)]
    narrow_px = fm.horizontalAdvance("h0") + 6  # room for "h0", not for "h0 · kv0"
    assert [row[2].text() for row in titles._plan(fm, narrow_px)] == ["h0", "h1", "h2", "h3"]
    titles.set_badges([("ind 0.91", "#f472b6"), None, None, ("prev 0.60", "#f59e0b")])
    badges = [row[4].text() if row[4] is not None else "" for row in titles._plan(fm, 400)]
    assert badges == ["ind 0.91", "", "", "prev 0.60"]  # the badges' change reached the plan
    titles.set_tiles(lay, ["a", "b", "c", "d"])
    assert [row[2].text() for row in titles._plan(fm, 400)] == ["a", "b", "c", "d"]


def test_the_firewall_passes_a_request_up_only_when_the_content_needs_other_room(qtbot):
    content = QWidget()
    label = QLabel("short")
    QVBoxLayout(content).addWidget(label)
    outer = QWidget()
    wall = LayoutFirewall(content)
    QVBoxLayout(outer).addWidget(wall)
    qtbot.addWidget(outer)
    asked = []
    original = wall.updateGeometry
    wall.updateGeometry = lambda: (asked.append(1), original())

    def request() -> None:  # what Qt posts to the wall after the content's layout ran
        content.layout().activate()
        wall.event(QEvent(QEvent.Type.LayoutRequest))

    label.setText("trods")  # the same letters: the same room, so nothing above needs to know
    request()
    assert asked == []
    label.setText("a much longer text that needs more room than before")
    request()
    assert asked == [1]  # passed up once
    request()
    assert asked == [1]  # and not again while nothing changes
    outer.layout().invalidate()
    assert outer.sizeHint().width() >= label.sizeHint().width()  # the layout above gives it the room


def test_wrapped_text_behind_a_firewall_in_a_scroll_area_scrolls_instead_of_being_squeezed(qtbot):
    from PySide6.QtWidgets import QApplication, QScrollArea

    content = QWidget()
    lay = QVBoxLayout(content)
    labels = [QLabel("a figure that wraps onto several lines at this width " * 3) for _ in range(6)]
    for label in labels:
        label.setWordWrap(True)
        lay.addWidget(label)
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setWidget(LayoutFirewall(content))
    qtbot.addWidget(area)
    area.resize(260, 120)
    area.show()
    qtbot.waitExposed(area)
    QApplication.processEvents()
    wall = area.widget()
    need = content.heightForWidth(wall.width())
    assert wall.height() >= need  # every line of every label has its room
    assert all(label.height() >= label.heightForWidth(label.width()) for label in labels)
    assert area.verticalScrollBar().maximum() > 0  # and the area scrolls to show them


def test_a_firewall_sized_by_its_host_passes_up_a_new_minimum_but_not_a_wrapped_line(qtbot):
    content = QWidget()
    label = QLabel("one line")
    label.setWordWrap(True)
    label.setMinimumSize(20, 20)  # its minimum is its own (the maps' legend sits in a splitter that sets one)
    QVBoxLayout(content).addWidget(label)
    outer = QWidget()
    wall = LayoutFirewall(content, sized_by_host=True)
    QVBoxLayout(outer).addWidget(wall)
    qtbot.addWidget(outer)
    outer.resize(200, 300)
    asked = []
    original = wall.updateGeometry
    wall.updateGeometry = lambda: (asked.append(1), original())

    def request() -> None:
        content.layout().activate()
        wall.event(QEvent(QEvent.Type.LayoutRequest))

    before = content.heightForWidth(200)
    label.setText("a legend that now wraps onto two or three lines at this width, as the maps' legend does")
    assert content.heightForWidth(200) != before  # another line: the preferred height changed
    request()
    assert asked == []  # the host gives the page its size: nothing above needs to know
    content.setMinimumHeight(500)
    request()
    assert asked == [1]  # a new minimum does


def _layout_requests(widget: QWidget) -> list[int]:
    """Counts the LayoutRequest events the widget receives from now on."""
    seen: list[int] = []

    class Watch(QObject):
        def eventFilter(self, obj, event):  # noqa: N802 (Qt's name)
            if event.type() == QEvent.Type.LayoutRequest:
                seen.append(1)
            return False

    watch = Watch(widget)
    widget.installEventFilter(watch)
    return seen


def test_a_steady_label_relays_nothing_for_a_text_that_fits_and_widens_for_one_that_does_not(qtbot):
    box = QWidget()
    grid = QGridLayout(box)
    label = SteadyLabel("123,456 B")
    grid.addWidget(QLabel("KV cache"), 0, 0)
    grid.addWidget(label, 0, 1)
    qtbot.addWidget(box)
    box.show()
    QApplication.processEvents()
    requests = _layout_requests(box)
    label.setText("654,321 B")  # as wide: the grid does not run again
    QApplication.processEvents()
    assert requests == [] and label.text() == "654,321 B"
    longer = "123,456,789,012,345 B"
    label.setText(longer)  # wider: the label grows, once, and shows all of it
    QApplication.processEvents()
    assert len(requests) >= 1
    assert label.width() >= QFontMetrics(label.font()).horizontalAdvance(longer)
    assert label.width() >= QLabel(longer).sizeHint().width() - 1  # what a plain label would ask for
    requests.clear()
    wide = label.width()
    label.setText("1 B")  # shorter: the room stays, nothing moves
    QApplication.processEvents()
    assert requests == [] and label.width() == wide
    # Once the texts have settled the room is given back, once: rooms that only grew kept every row of the costs
    # at its widest over a session, and the window's minimum width passed a 1024 px screen.
    qtbot.waitUntil(lambda: label.width() < wide, timeout=20 * SETTLE_MS)
    assert label.width() == QLabel("1 B").sizeHint().width()
    QApplication.processEvents()
    assert 1 <= len(requests) <= 2


def test_a_steady_label_keeps_its_tip_and_colour_without_a_style_sheet(qtbot):
    label = SteadyLabel("-66.7%")
    qtbot.addWidget(label)
    label.setToolTip("2 x K x h x bytes")
    set_colour(label, "#059669")
    assert label.toolTip() == "2 x K x h x bytes" and label.styleSheet() == ""
    assert label.palette().color(QPalette.ColorRole.WindowText) == QColor("#059669")
    set_colour(label, "")
    assert label.palette().color(QPalette.ColorRole.WindowText) == QApplication.palette().color(
        QPalette.ColorRole.WindowText)


def test_a_wrapping_firewall_passes_up_another_line_but_not_a_new_text_of_as_many_lines(qtbot):
    """wraps=True: a new summary of the same line count runs no layout above (a plain firewall passed up the preferred
    width each new text brings); a text that takes another line does, and the row grows to show it all."""
    label = QLabel("head_dim 64, q/k norm")
    label.setWordWrap(True)
    outer = QWidget()
    wall = LayoutFirewall(label, wraps=True)
    lay = QVBoxLayout(outer)
    lay.addWidget(wall)
    lay.addWidget(QLabel("the row below"))
    lay.addStretch(1)  # the rows take their own heights
    qtbot.addWidget(outer)
    outer.resize(300, 200)
    outer.show()
    qtbot.waitUntil(lambda: wall.width() > 200)
    asked = []
    original = wall.updateGeometry
    wall.updateGeometry = lambda: (asked.append(1), original())
    one_line = wall.height()
    for text in ("head_dim 128 (own), q/k norm", "MHA", "52 local W 1024 + 10 global"):  # one line each at 300 px
        label.setText(text)
        wall.event(QEvent(QEvent.Type.LayoutRequest))
    assert asked == []
    plain = LayoutFirewall(QLabel("MHA"))  # without wraps, a new text's preferred width goes up
    plain.content.setWordWrap(True)
    plain.resize(300, 40)
    plain_asked = []
    plain.updateGeometry = lambda: plain_asked.append(1)
    plain.content.setText("52 local W 1024 + 10 global")
    plain.event(QEvent(QEvent.Type.LayoutRequest))
    assert plain_asked == [1]
    label.setText("head_dim 128 (own), q/k norm, 52 local W 1024 + 10 global, sinks, KV q8_0 and a little more")
    wall.event(QEvent(QEvent.Type.LayoutRequest))
    assert asked == [1]
    qtbot.waitUntil(lambda: wall.height() >= label.heightForWidth(wall.width()) > one_line)  # nothing clipped


def test_a_wrapped_text_set_while_its_tab_is_hidden_has_its_lines_when_shown(qtbot):
    """A model opened from the Compare tab: the Heatmaps tab's header took a second line while hidden, and was one
    line high, clipped, when its tab came back to the front."""
    from PySide6.QtWidgets import QTabWidget

    tabs = QTabWidget()
    qtbot.addWidget(tabs)
    page = QWidget()
    label = QLabel("one short line")
    label.setWordWrap(True)
    lay = QVBoxLayout(page)
    lay.addWidget(LayoutFirewall(label, wraps=True))
    lay.addStretch(1)
    tabs.addTab(page, "Heatmaps")
    tabs.addTab(QWidget(), "Compare")
    tabs.resize(300, 300)
    tabs.show()
    QApplication.processEvents()
    tabs.setCurrentIndex(1)
    QApplication.processEvents()
    label.setText("a header long enough to take three or four lines at this width, as a real model's name, layer, "
                  "heads and tokens do")
    QApplication.processEvents()
    tabs.setCurrentIndex(0)
    qtbot.waitUntil(lambda: label.height() >= label.heightForWidth(label.width()) > 20, timeout=2000)
