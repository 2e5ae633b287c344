"""The suite's cache folders (``suite/paths.py``): the environment chooses them, the home folder otherwise."""

from __future__ import annotations

from pathlib import Path

from suite import paths


def test_the_environment_chooses_the_cache_and_data_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("SUITE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SUITE_DATA", str(tmp_path / "data"))
    assert paths.cache_dir() == tmp_path / "cache"
    assert paths.tokens_dir() == tmp_path / "cache" / "tokens"
    assert paths.inductor_dir() == tmp_path / "cache" / "inductor"
    assert paths.data_dir() == tmp_path / "data"


def test_without_the_environment_the_folders_lie_under_the_home_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("SUITE_CACHE", raising=False)
    monkeypatch.delenv("SUITE_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert paths.cache_dir() == Path(tmp_path) / ".cache" / "infonoise-suite"
    assert paths.data_dir() == Path(tmp_path) / ".cache" / "infonoise-suite" / "data"
