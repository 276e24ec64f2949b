"""What the window shows, as one value: a Qt-free View and the AppState that holds it and says when it changed."""
