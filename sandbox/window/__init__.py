"""The main window and what keeps it live: launch, menus, pacers, status, settings, snapshot and soak."""
