"""The hostile-input campaign behind ``tools/fuzz.py`` (see that file for how to run it)."""
