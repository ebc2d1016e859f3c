"""The line under every page: which memplan drew it.

The version is `core.version.__version__`, the one ``memplan --version`` prints and
the sizing report names, read when the page is drawn.
"""

from __future__ import annotations

import streamlit as st

from core import version


def text() -> str:
    """``memplan 0.2.0``: what the footer says."""
    return f"memplan {version.__version__}"


def render() -> None:
    st.divider()
    st.caption(text(), help="The changes in each release are listed in CHANGELOG.md.")
