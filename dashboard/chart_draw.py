"""Drawing an Altair chart on a page without validating it again on every rerun.

`st.altair_chart` turns the chart into its Vega-Lite spec with Altair's ``to_dict()``,
which checks the whole spec against the Vega-Lite JSON schema each time: a third of
the CPU of a Sizing-page rerun (issue 42: 0.1 s of an input change's 0.3 s on the
2-core Intel Xeon) for charts whose builders are the same code every time, and are
checked once, in their tests (`tests/unit/test_charts*.py` call ``to_dict()``). Here the
spec is made without that check; it is the same spec.
"""

from __future__ import annotations

import functools
from typing import Any

import altair as alt
import streamlit as st


def altair_chart(chart: alt.TopLevelMixin, **options: Any) -> None:
    """`st.altair_chart` of ``chart`` (``options`` as it takes them), unvalidated."""
    unchecked = chart.copy(deep=False)
    # An attribute of this copy alone: Altair's own ``__setattr__`` would store it as a
    # chart property, so it is set as Python's.
    object.__setattr__(
        unchecked, "to_dict", functools.partial(type(chart).to_dict, unchecked, validate=False)
    )
    st.altair_chart(unchecked, **options)
