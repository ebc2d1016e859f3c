"""The published study's figures are reconciled in words beside the answer (issue 42, point
6): "almost 1 TB" and "384 GB: only half-size images fit" beside "buy 256 GB" read as a
contradiction until the sentence says what differs between the two measurements."""

from __future__ import annotations

from core import published


def test_the_reconciliation_names_what_differs_and_the_figures_it_explains() -> None:
    said = published.WHY_OURS_DIFFER

    # The figures it explains, as the chart labels them.
    assert "almost 1 TB" in said and "384 GB" in said and "half-size images" in said
    # What differs: the framework and its build, the runs, the machine.
    assert "TensorFlow 1.11 with Intel's MKL-DNN build" in said
    assert "TensorFlow 2.21" in said
    assert "single runs" in said
    assert "80-core Xeon Gold 6248" in said and "2 cores" in said
    assert said.count(". ") <= 2  # two sentences, not a paragraph
