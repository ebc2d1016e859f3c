"""A damaged database file: every page shows one message saying which file and what to do.

Probe 6 of the hardening issue: a truncated or garbled database used to show
exception boxes (and a garbled first block a 60 s wait for a "lock").
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.helpers import APP

PAGES = ("dashboard/sweeps_page.py", "dashboard/sizing_page.py", "dashboard/models_page.py")
# DuckDB's file layout: three 4 KiB headers, then 256 KiB blocks; the first holds the catalog.
FIRST_BLOCK = 3 * 4096


def _truncate(path: Path) -> None:
    # As an interrupted copy leaves it: the headers and part of the first block.
    path.write_bytes(path.read_bytes()[: FIRST_BLOCK + 64 * 1024])


def _truncate_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garble_first_block(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[FIRST_BLOCK + 100 : FIRST_BLOCK + 4196] = b"\xab" * 4096
    path.write_bytes(bytes(data))


def _garble_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    third = len(data) // 3
    data[third : 2 * third] = b"\x5a" * third
    path.write_bytes(bytes(data))


DAMAGES = {"truncated": _truncate, "garbled_first_block": _garble_first_block}


def _errors(at: AppTest) -> list[str]:
    return [element.value.replace("\\", "") for element in at.error]


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_database_is_a_message_on_every_page(reference_db, page, damage):
    DAMAGES[damage](reference_db)
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page(page).run()

    assert not at.exception, [e.message for e in at.exception]
    [shown] = _errors(at)
    assert shown.startswith(f"{reference_db} is not a readable DuckDB database (")
    assert shown.endswith("); restore it from a backup or point MEMPLAN_DB/--db at another file")


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("damage", [_truncate_half, _garble_middle])
def test_damage_in_the_middle_raises_no_exception_box(reference_db, page, damage):
    # What a page reads may lie before the damage: then it shows what it could read.
    damage(reference_db)
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page(page).run()

    assert not at.exception, [e.message for e in at.exception]
    for shown in _errors(at):
        assert "is not a readable DuckDB database" in shown
