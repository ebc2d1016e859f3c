"""`dashboard.chart_draw.altair_chart`: the Sizing page's charts drawn without Altair's
schema check on every rerun (a third of a rerun's CPU, issue 42), the same spec."""

from __future__ import annotations

import pandas as pd
import pytest
import streamlit as st
from altair.utils.schemapi import SchemaBase

from dashboard import chart_draw
from presentation import charts_sizing

BOUNDS = pd.DataFrame(
    {
        "model": ["a", "b"],
        "title": ["model a", "model b"],
        "predicted_gib": [10.0, 12.0],
        "upper_gib": [11.0, 15.0],
    }
)


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list:
    """What `st.altair_chart` was given, and how."""
    given: list = []
    monkeypatch.setattr(st, "altair_chart", lambda chart, **options: given.append((chart, options)))
    return given


def test_the_chart_drawn_gives_streamlit_the_same_spec(drawn: list):
    chart = charts_sizing.bounds(BOUNDS, budget_gib=240.0, usable_gib=200.0)
    chart_draw.altair_chart(chart, width="stretch")

    [(unchecked, options)] = drawn
    assert options == {"width": "stretch"}
    # What Streamlit calls: `to_dict()` with no arguments.
    assert unchecked.to_dict() == chart.to_dict()
    assert "to_dict" not in chart.__dict__  # the chart itself keeps its checked `to_dict`


def test_the_spec_is_not_checked_against_the_schema_again(drawn: list, monkeypatch):
    chart = charts_sizing.bounds(BOUNDS, budget_gib=240.0, usable_gib=200.0)
    chart_draw.altair_chart(chart)
    [(unchecked, _)] = drawn
    checks: list = []
    real = SchemaBase.validate.__func__
    monkeypatch.setattr(
        SchemaBase,
        "validate",
        classmethod(lambda cls, *a, **k: checks.append(cls) or real(cls, *a, **k)),
    )

    unchecked.to_dict()
    drawn_checks = list(checks)
    chart.to_dict()  # the chart as built: its whole spec checked, as its tests check it
    # Drawn, the spec is never checked against the schema (only the data sets Altair names
    # on the way, as small objects of their own).
    assert type(chart) in checks[len(drawn_checks) :]
    assert type(chart) not in drawn_checks
