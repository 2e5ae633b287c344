"""In-process tests: no subprocess that imports torch; the default of a bare ``pytest``."""
