"""The app starts on the bundled data and offers its three pages."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_the_app_starts_without_an_exception(shared_reference_db: Path) -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
