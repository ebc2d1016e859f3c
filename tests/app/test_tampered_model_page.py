"""Issue 27, finding 2, on the dashboard: a tampered stored tree does not take the server down.

Before, a random forest whose tree child indexes 10^7 loaded and then killed the
Streamlit server with SIGSEGV on ``/sizing_page?machine=9b59``, for every user of
the dashboard. Now the row is refused when it is read, and the page says so.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from modeling.stored import codec
from tests.app.helpers import open_page

REFERENCE_MACHINE = "9b59349f74"


def tamper_random_forest(db: Path) -> None:
    """Point one tree's first child at node 10^7 in the stored random forest, as an attacker
    with write access to the database file could."""
    with duckdb.connect(str(db)) as con:
        model_id, blob = con.execute(
            "SELECT model_id, estimator FROM models WHERE name = 'random_forest' LIMIT 1"
        ).fetchone()
        fitted = codec.decode(blob)
        tree = fitted.regressor_.estimators_[0].tree_
        state = tree.__getstate__()
        state["nodes"]["left_child"][0] = 10**7
        tree.__setstate__(state)
        con.execute(
            "UPDATE models SET estimator = ? WHERE model_id = ?", [codec.encode(fitted), model_id]
        )


def test_the_sizing_page_survives_a_tampered_tree_and_says_what_to_do(reference_db: Path) -> None:
    tamper_random_forest(reference_db)

    at = open_page("dashboard/sizing_page.py", machine=REFERENCE_MACHINE)

    assert not at.exception
    shown = " ".join(block.value for block in [*at.error, *at.warning, *at.info])
    assert "malformed" in shown, shown
    assert "memplan evaluate" in shown, shown
