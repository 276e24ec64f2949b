"""Where an export dialog opens: the folder of the last export (remembered in the settings), else Pictures,
Documents or home. Every tab's exports share it."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, QStandardPaths

from widgets.export.dialog import default_export_folder


class ExportFolder:
    def __init__(self, settings: QSettings | None) -> None:
        self.settings = settings  # None (tests, snapshot): nothing is remembered

    def start(self) -> Path:
        where = QStandardPaths.writableLocation
        last = self.settings.value("export/folder") if self.settings is not None else None
        return default_export_folder(str(last) if last else None,
                                     where(QStandardPaths.StandardLocation.PicturesLocation),
                                     where(QStandardPaths.StandardLocation.DocumentsLocation))

    def remember(self, folder: Path) -> None:
        if self.settings is not None:
            self.settings.setValue("export/folder", str(folder))  # the next export starts there
