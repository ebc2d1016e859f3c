"""Every page ends with the memplan version, the one `core.version` holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core import version
from tests.app.helpers import APP, open_page

PAGES = ("dashboard/models_page.py", "dashboard/sizing_page.py", "dashboard/sweeps_page.py")


def _last_in_main(at: AppTest):
    return list(at.main.children.values())[-1]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_ends_with_the_version(shared_reference_db: Path, page: str) -> None:
    at = open_page(page)

    footer = _last_in_main(at)
    assert footer.type == "caption"
    assert footer.value == f"memplan {version.__version__}"


def test_the_footer_reads_core_version(
    shared_reference_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(version, "__version__", "9.8.7")
    at = open_page("dashboard/sizing_page.py")

    assert _last_in_main(at).value == "memplan 9.8.7"


@pytest.mark.parametrize("page", PAGES)
def test_a_page_that_stops_early_still_has_the_footer(reference_db: Path, page: str) -> None:
    # A damaged database stops the sidebar and the page with one message.
    reference_db.write_bytes(reference_db.read_bytes()[: 3 * 4096 + 64 * 1024])
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page(page).run()

    assert not at.exception
    assert len(at.error) == 1
    assert _last_in_main(at).value == f"memplan {version.__version__}"
