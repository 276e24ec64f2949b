"""The Compare tab's table of pins."""
