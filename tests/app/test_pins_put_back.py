"""Putting a pin back is one change of the View and one request, whatever has to change first (a model opened or
closed), and it always shows the pin; a pin waiting for its model is tied to that model's load."""

from sandbox.jobs.types import ComputeRequest

TEXT = "When Mary and John went to the store, John gave a drink to Mary"


def count_requests(w, monkeypatch) -> list[ComputeRequest]:
    sent: list[ComputeRequest] = []
    submit = w.runner.submit
    monkeypatch.setattr(w.runner, "submit", lambda req: (sent.append(req), submit(req))[1])
    return sent


def test_a_design_pin_over_an_open_model_is_one_request_of_the_pin(make_window, monkeypatch):
    w = make_window(text=TEXT)
    pin = w.pins.pin_current()
    w.models.load("minilm-l6")
    assert w.models.key == "minilm-l6"
    sent = count_requests(w, monkeypatch)
    w.pins.load_on_sliders(0)
    assert len(sent) == 1 and sent[0].model is None and sent[0].config == pin.config and sent[0].text == TEXT
    assert w.state.view.model is None and w.last_heatmaps.config == pin.config


def test_a_pin_that_is_what_the_view_holds_is_shown_again(make_window, monkeypatch):
    w = make_window(text=TEXT)
    w.pins.pin_current()
    sent = count_requests(w, monkeypatch)
    w.pins.load_on_sliders(0)  # nothing differs: after a failure or a worker's death it must still show
    assert len(sent) == 1 and sent[0] == ComputeRequest.of(w.state.view, **{k: getattr(sent[0], k) for k in (
        "seed", "want_timing", "timing_budget_s", "max_timing_s")})


def test_a_pins_text_longer_than_the_box_is_cut_in_the_view_and_the_box_alike(make_window):
    w = make_window(text=TEXT)
    pin = w.pins.pin_current()
    pin.text = "word " * 8000  # 40,000 characters, as a workspace may hold
    w.config_panel.n_kv_heads.slider.setValue(0)
    w.pins.load_on_sliders(0)
    assert w.text.text() == w.state.view.text == pin.text[:32767]
    assert w.last_heatmaps is not None and "cut" in w.statusBar().currentMessage()


def test_a_model_pin_put_back_while_its_model_loads_is_applied_once_and_kept(make_window, qtbot):
    w = make_window(text=TEXT)
    w.models.load("minilm-l6")
    w.models.set_view(4, True)
    w.config_panel.n_kv_heads.slider.setValue(1)  # MiniLM's 12 heads, 2 KV heads (its second choice)
    pin = w.pins.pin_current()
    assert pin.model is not None and pin.config.kv_heads == 2
    w.models.use_random()
    w2 = make_window(sync=False, text=TEXT)
    w2.pins.pins = [pin]
    w2.pins.refresh()
    w2.models.load("minilm-l6")  # loading, not done yet
    w2.pins.load_on_sliders(0)  # the same model: not asked for again, the pin waits for it
    qtbot.waitUntil(lambda: w2.models.key == "minilm-l6" and w2.runner.is_idle()
                    and w2.last_heatmaps is not None and w2.last_heatmaps.model is not None, timeout=120_000)
    v = w2.state.view
    assert (v.layer, v.all_layers, v.config.kv_heads) == (4, True, 2)
    assert w2.last_heatmaps.config == pin.config and w2.models.loading is None


def test_a_pin_waiting_for_a_model_that_cannot_load_is_dropped(make_window, tmp_path):
    w = make_window(text=TEXT)
    w.models.load("minilm-l6")
    pin = w.pins.pin_current()
    pin.model = {**pin.model, "key": str(tmp_path), "name": "nothing here"}  # a folder without config.json
    w.models.use_random()
    w.pins.load_on_sliders(0)
    assert w.pins._load_after_model is None and "was not put back" in w.statusBar().currentMessage()
    assert w.state.view.model is None


def test_back_to_random_weights_the_costs_compare_with_mha_again(make_window):
    w = make_window(text=TEXT)
    w.models.load("minilm-l6")
    w.config_panel.n_kv_heads.slider.setValue(1)
    w.costs.run_if_due()
    assert w.metrics.delta_header.text() == "vs trained"
    w.models.use_random()
    w.costs.run_if_due()
    assert w.metrics.delta_header.text() == "vs MHA" and w.metrics.deltas["kv_total"].text().startswith("-")


def test_picking_the_open_model_again_keeps_its_head_change(make_window, monkeypatch):
    w = make_window(text=TEXT)
    w.models.load("minilm-l6")
    w.config_panel.n_kv_heads.slider.setValue(1)
    changed = w.config()
    loads: list[str] = []
    monkeypatch.setattr(w.runner, "submit_load", lambda key, allow_pickle=False: loads.append(key))
    w.models.picker.model_requested.emit("minilm-l6")
    assert loads == [] and w.config() == changed
