import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QImage

from core.files.atomic import ExportError
from sandbox.tabs.export_render import ExportJob


def image_array(path) -> np.ndarray:
    img = QImage(str(path)).convertToFormat(QImage.Format.Format_RGB888)
    ptr = img.constBits()
    arr = np.frombuffer(ptr, dtype=np.uint8, count=img.sizeInBytes()).reshape(img.height(), img.bytesPerLine())
    return arr[:, : img.width() * 3].reshape(img.height(), img.width(), 3)


def test_png_of_the_mosaic_has_the_scaled_size_real_pixels_and_a_manifest(make_window, tmp_path):
    w = make_window()
    paths = w.export_to(ExportJob(tmp_path / "heads.png", "png", 2.0, decorations=False))  # the view alone
    assert paths == [tmp_path / "heads.png", tmp_path / "heads.json"]
    arr = image_array(paths[0])
    size = w.mosaic.glw.size()
    assert arr.shape[:2] == (size.height() * 2, size.width() * 2)
    assert arr.std() > 10 and len(np.unique(arr.reshape(-1, 3), axis=0)) > 20  # not blank
    m = json.loads(paths[1].read_text())
    assert m["report"]["config"]["n_heads"] == w.config().n_heads and m["tokens"] == w.last_heatmaps.tokens
    assert m["report"]["params"]["total"] == int(w.metrics.values["params"].text().replace(",", ""))
    assert m["report"]["timing"]["median_ms"] == w.last_timing.result.layer.median_ms
    assert m["pixels"] == [arr.shape[1], arr.shape[0]] and m["seed"] == w.seed
    assert {"torch", "qt"} <= set(m["versions"]) and m["text"] == w.text.text()
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".part"]


def test_png_of_one_head(make_window, tmp_path):
    w = make_window()
    (png, manifest) = w.export_to(ExportJob(tmp_path / "h2.png", "png", 1.0, head=2))
    assert image_array(png).std() > 10
    assert json.loads(manifest.read_text())["heads"] == [2]


def test_svg_is_a_vector_file(make_window, tmp_path):
    w = make_window()
    (svg, _) = w.export_to(ExportJob(tmp_path / "m.svg", "svg"))
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text and "<image" in text and "<text" in text


def test_npy_and_csv_hold_the_probabilities(make_window, tmp_path):
    w = make_window()
    probs = w.last_heatmaps.probs
    (npy, _) = w.export_to(ExportJob(tmp_path / "p.npy", "npy"))
    np.testing.assert_array_equal(np.load(npy), probs)
    (one, _) = w.export_to(ExportJob(tmp_path / "h1.npy", "npy", head=1))
    np.testing.assert_array_equal(np.load(one)[0], probs[1])
    (c, _) = w.export_to(ExportJob(tmp_path / "p.csv", "csv"))
    rows = list(csv.DictReader(c.open()))
    H, T, _ = probs.shape
    assert len(rows) == H * T * T
    r = rows[T * T + 2 * T + 1]  # head 1, query 2, key 1
    assert (r["head"], r["query_index"], r["key_index"]) == ("1", "2", "1")
    assert float(r["weight"]) == pytest.approx(probs[1, 2, 1], rel=1e-6)
    assert r["query_token"] == w.last_heatmaps.tokens[2]


def test_unwritable_folder_gives_a_message_and_leaves_nothing(make_window, tmp_path, monkeypatch):
    import tempfile

    w = make_window()

    def denied(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    with pytest.raises(ExportError, match="Permission denied"):
        w.export_to(ExportJob(tmp_path / "x.png", "png"))
    assert list(tmp_path.iterdir()) == []


def test_read_only_folder_for_real(make_window):
    """/sys refuses new files even to root (these machines run everything as root)."""
    w = make_window()
    before = sorted(os.listdir("/sys"))
    with pytest.raises(ExportError, match="Permission denied|Read-only"):
        w.export_to(ExportJob(Path("/sys/attention.png"), "png"))
    assert sorted(os.listdir("/sys")) == before


def test_missing_parent_and_failure_between_write_and_rename(make_window, tmp_path, monkeypatch):
    w = make_window()
    with pytest.raises(ExportError, match="does not exist"):
        w.export_to(ExportJob(tmp_path / "nope" / "x.npy", "npy"))
    assert not (tmp_path / "nope").exists()
    (tmp_path / "x.npy").write_bytes(b"old")

    def full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(ExportError, match="No space left"):
        w.export_to(ExportJob(tmp_path / "x.npy", "npy"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy"]
    assert (tmp_path / "x.npy").read_bytes() == b"old"


def test_export_menu_action_has_the_shortcut(make_window):
    w = make_window()
    assert w.export_action.shortcut().toString() == "Ctrl+E"


def test_the_export_folder_falls_back_to_one_that_exists_and_is_remembered(make_window, tmp_path, settings):
    from widgets.export.dialog import default_export_folder

    missing = tmp_path / "Pictures"
    assert default_export_folder(None, str(missing), str(tmp_path)) == tmp_path
    assert default_export_folder(str(missing), None, None) == Path.home()
    w = make_window()
    dialog = w.make_export_dialog()
    assert Path(dialog.path.text()).parent.is_dir()  # wherever it starts, the first export can succeed
    dialog.close()


def test_a_missing_folder_is_created_when_the_user_agrees_and_kept_otherwise(make_window, tmp_path, settings):
    w = make_window()
    asked = []
    dialog = w.make_export_dialog()
    dialog._confirm_create = lambda _parent, folder: asked.append(folder) or False
    target = tmp_path / "new" / "maps.npy"
    dialog.fmt.setCurrentIndex(2)
    dialog.path.setText(str(target))
    dialog.accept()
    assert asked == [tmp_path / "new"] and not (tmp_path / "new").exists()
    assert dialog.result() != dialog.DialogCode.Accepted and dialog.path.text() == str(target)  # nothing lost
    assert "not a folder" in dialog.error.text()
    dialog._confirm_create = lambda _parent, _folder: True
    dialog.accept()
    assert (tmp_path / "new").is_dir() and dialog.result() == dialog.DialogCode.Accepted
    written = w.export_chosen(dialog)
    assert written == [target, target.with_suffix(".json")] and target.is_file()
    np.testing.assert_array_equal(np.load(target), w.last_heatmaps.probs)
    assert settings.value("export/folder") == str(tmp_path / "new")
    again = w.make_export_dialog()
    assert Path(again.path.text()).parent == tmp_path / "new"  # the next export starts where this one went
