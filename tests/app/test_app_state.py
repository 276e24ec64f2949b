"""The app's state without a window: one View, update() that says once what changed, held() that makes several
updates one change, and the request built from the View alone. Then the window bound to it: controls write it,
and what follows it (the text field, the probe) does not write it back."""

import pytest

from core.arch.config import AttentionConfig
from sandbox.jobs.types import ComputeRequest
from sandbox.state.app_state import AppState
from sandbox.state.view import View


def changes(state: AppState) -> list[tuple[View, View]]:
    seen: list[tuple[View, View]] = []
    state.changed.connect(lambda new, old: seen.append((new, old)))
    return seen


def test_update_says_once_what_changed_and_nothing_when_nothing_did(qapp):
    state = AppState(View(AttentionConfig()))
    seen = changes(state)
    first = state.view
    assert state.update(text="a b c", probe="induction") is True
    assert seen == [(state.view, first)] and state.view.text == "a b c" and state.view.probe == "induction"
    assert state.update(text="a b c") is False and len(seen) == 1
    with pytest.raises(TypeError, match="no field"):
        state.update(colour="red")


def test_held_updates_are_one_change_from_the_view_before_the_first(qapp):
    state = AppState(View(AttentionConfig()))
    seen = changes(state)
    before = state.view
    with state.held():
        state.update(model="smollm2-135m")
        with state.held():  # nested: still one change, at the outer end
            state.update(config=AttentionConfig(d_model=576, n_heads=9, n_kv_heads=3), layer=7)
        assert seen == []
    assert seen == [(state.view, before)] and state.view.layer == 7 and state.view.model == "smollm2-135m"
    with state.held():
        state.update(layer=3)
        state.update(layer=7)  # back where it was: no change at all
    assert len(seen) == 1


def test_the_request_is_built_from_the_view_alone():
    view = View(AttentionConfig(d_model=512, n_heads=8), text="x y", device="cpu", model="minilm-l6", layer=2,
                all_layers=True, probe="induction", kv_method=("quant", "q4_0", 0))
    req = ComputeRequest.of(view, seed=3, want_timing=False)
    assert (req.config, req.text, req.device, req.model, req.layer, req.all_layers, req.probe, req.kv_method) == (
        view.config, "x y", "cpu", "minilm-l6", 2, True, "induction", ("quant", "q4_0", 0))
    assert req.seed == 3 and req.want_timing is False


def test_the_window_follows_the_state_without_writing_it_back(make_window, monkeypatch):
    w = make_window()
    sent: list[ComputeRequest] = []
    submit = w.runner.submit
    monkeypatch.setattr(w.runner, "submit", lambda req: (sent.append(req), submit(req))[1])
    seen = changes(w.state)
    w.state.update(text="the cat sat", probe="induction")
    assert w.text.text() == "the cat sat" and w.roles.probe_combo.currentData() == "induction"
    assert len(seen) == 1 and len(sent) == 1  # the field and the combo followed without a second change
    assert (sent[0].text, sent[0].probe) == ("the cat sat", "induction")
    w.text.setText("the dog ran")  # a control writes the state, and the request follows it
    assert w.state.view.text == "the dog ran" and sent[-1].text == "the dog ran" and len(sent) == 2
