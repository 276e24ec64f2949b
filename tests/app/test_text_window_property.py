"""Generated text typed into the real window: a clear message or a correct view, never an exception."""

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.property.test_text_property import texts


@settings(max_examples=25)  # each example builds a real window; the text paths have their own 300+
@given(st.lists(texts, min_size=1, max_size=6))
def test_the_window_never_raises_on_text(make_window, batch):
    w = make_window()
    for text in batch:
        w.text.setText(text)
        assert w.last_error or w.view_is_current()
        if w.last_error:
            assert w.last_error.endswith(".") and "Error" not in w.last_error
    w.close()
