"""The sidebar every page shares (placeholder until the launcher is written)."""

import streamlit as st


def render() -> None:
    """Draw the sidebar."""
    st.sidebar.caption("memplan")
