"""The Sizing page's first render on the bundled data, golden: opened with no question on
the reference database, on the machine its runs measured (pinned, so the figures do not
depend on the CPU running the test), it shows these headline figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import profiles, store
from tests.app.helpers import open_page, shown, this_machine_is, widget

REFERENCE_PROFILE = "9b59349f74"
HEADLINE = (
    "**Fits, verified by a run (measured 10.6 GiB).** 128^3 at batch 4 needs up to 11.1 GiB "
    "(least squares on analytical terms; its point prediction is 10.5 GiB), 13.3 GiB with "
    "20% headroom, of the 256 GiB host RAM budget; for Intel Xeon, instruction set unknown, "
    "2 cores, TensorFlow 2.21 — this machine."
)
METRICS = {
    "Memory to buy": "64 GB",
    "Upper bound": "11.1 GiB",
    "Largest cube at batch 4": "336^3",
    "Largest batch at 128^3": "82",
}
# The every-model table: (predicted GiB, bound GiB, margin, fits).
MODELS = [
    ("10.14", "70.84", "x6.99", "–"),
    ("10.32", "12.90", "x1.25", "yes"),
    ("10.50", "11.10", "x1.06", "yes"),
    ("10.47", "11.07", "x1.06", "yes"),
    ("10.42", "10.95", "x1.05", "yes"),
    ("10.47", "11.10", "x1.06", "yes"),
    ("10.60", "13.25", "x1.25", "yes"),
    ("10.36", "12.19", "x1.18", "yes"),
    ("10.60", "11.57", "x1.09", "yes"),
    ("10.63", "12.08", "x1.14", "yes"),
]


def test_the_first_render_shows_the_reference_answer(
    reference_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = store.load_runs(reference_db, store.RunFilter(status="ok", workload="unet3d"))
    this_machine_is(monkeypatch, profiles.profiles_in(runs)[REFERENCE_PROFILE])

    at = open_page("dashboard/sizing_page.py")

    assert {label: widget(at.metric, label).value for label in METRICS} == METRICS
    assert [shown(box.value) for box in at.success] == [HEADLINE]
    table = at.table[0].value
    columns = ["predicted GiB", "bound GiB", "margin", "fits"]
    rows = [tuple(shown(cell) for cell in row) for row in table[columns].itertuples(index=False)]
    assert rows == MODELS
    spread = [shown(m.value) for m in at.markdown if m.value.startswith("Credible models")]
    assert spread == ["Credible models' bounds: **11.0–13.2 GiB across 9 of 10 models**"]
