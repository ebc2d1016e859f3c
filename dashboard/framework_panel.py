"""Which framework? The selector of the Sizing, Models and Sweeps pages (issue 29).

A machine profile is one framework's (`core.profiles`), and the same network peaked
2x and more apart between frameworks: a page shows one framework's runs, models and
answers at a time, never a mix, and an answer is never taken from another
framework's runs (`modeling.machines.choose_machine`). The selector is offered only
where the database has runs of more than one framework; otherwise the page is the one
framework's (TensorFlow in a database without runs), which every machine's label names
("..., TensorFlow 2.21"). The choice is kept in the URL (``framework``:
`dashboard.query_state.framework_from`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from core import frameworks
from core.profile_frameworks import frameworks_in
from dashboard import data, query_state

FRAMEWORK_HELP = (
    "Whose runs and models answer: TensorFlow (the workload's Keras model) or PyTorch (its "
    "native torch.nn model). Their peaks differ 2x and more, so an answer is never taken "
    "from the other framework's runs."
)


@dataclass(frozen=True)
class Chosen:
    """The framework a page shows, and what the link said of it."""

    framework: str
    problems: list[str] = field(default_factory=list)  # the link's value it could not take
    as_linked: bool = True  # False once switched: the link's other values are another's

    @property
    def title(self) -> str:
        return frameworks.TITLES[self.framework]


def choose(db: Path, version: data.Version, params: query_state.Params, key: str) -> Chosen:
    """The framework selector, where the database has runs of more than one framework
    (started from the link's ``framework``, else TensorFlow); else the one framework."""
    offered = frameworks_in(data.runs(db, version))
    if len(offered) <= 1:
        return Chosen(offered[0] if offered else frameworks.DEFAULT_FRAMEWORK)
    default = (
        frameworks.DEFAULT_FRAMEWORK if frameworks.DEFAULT_FRAMEWORK in offered else offered[0]
    )
    linked, problems = query_state.framework_from(params, offered, default)
    if key not in st.session_state or st.session_state[key] not in offered:
        st.session_state[key] = linked
    chosen = st.selectbox(
        "Framework",
        offered,
        key=key,
        format_func=frameworks.TITLES.__getitem__,
        help=FRAMEWORK_HELP,
    )
    query_state.write_framework(chosen)
    return Chosen(chosen, problems, chosen == linked)
