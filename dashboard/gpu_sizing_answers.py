"""The Sizing page's GPU answer: the headline, the GPU sizes' verdicts, what would make it
fit, what it rests on, and the ``memplan size gpu`` command that gives the same answer.

Every sentence is `presentation.gpu_sizing_text`'s (the CLI's and the report's), laid out
by `presentation.gpu_sizing_view`; text is shown with `presentation.text.plain`, never
as Markdown.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from application.gpu_sizing import HOST_RAM_NOTE, GpuAnswer
from core import database
from presentation import gpu_sizing_text, gpu_sizing_view
from presentation.text import plain, text_cells


def range_words(said: GpuAnswer) -> str:
    """Whether the answer's configuration lies inside the measured range, in words."""
    assert said.check is not None
    if said.check.inside:
        return "inside the measured range"
    return f"{said.check.beyond_factor:.1f}x beyond the measured range"


def headline(said: GpuAnswer) -> None:
    """The answer first: the question in words, its figure, the sentence and the note that
    host RAM is another figure."""
    st.subheader(gpu_sizing_view.asked_words(said))
    label, value = gpu_sizing_view.metric(said)
    st.metric(plain(label), value)
    st.caption(plain(gpu_sizing_text.headline(said)))
    if said.check is not None:
        line = gpu_sizing_text.check_line(said.check)
        st.caption(plain(f"{line} ({range_words(said)})."))
    st.caption(plain(f"{HOST_RAM_NOTE}."))


def table(said: GpuAnswer) -> None:
    """Which GPU sizes fit (a which-GPUs answer), each with its verdict and why."""
    if not said.table:
        return
    st.markdown("**GPU sizes** (usable memory as the framework reports it)")
    # A static table: each size's reason is a sentence, whole on the page (a dataframe's
    # cells cut it at the column's width). Its cells are Markdown: every one escaped, as a
    # GPU's name may come from an imported file.
    frame = text_cells(gpu_sizing_view.table_frame(said.table), {})
    st.table(frame, hide_index=True, border="horizontal")


def every_size(said: GpuAnswer, answers: list[GpuAnswer]) -> None:
    """The same largest-cube or largest-batch question on every listed GPU size."""
    if not answers:
        return
    st.markdown("**Every GPU size** (the same question asked of each)")
    st.dataframe(gpu_sizing_view.largest_frame(answers), hide_index=True, width="stretch")


def options(said: GpuAnswer) -> None:
    """What would make a configuration that does not fit fit, each with its figures."""
    if not said.options:
        return
    st.subheader("What would make it fit")
    # One line each, in the command line's words: as a seven-column table it overflowed the
    # page at 1024 px (the expandable-segments setting is one long word).
    for option in said.options:
        check = gpu_sizing_text.check_line(option.check)
        st.markdown(f"- **{plain(option.change)}**: {plain(check)}")


def evidence(said: GpuAnswer) -> None:
    """Which profile answered, how its bound scored, how it transferred to this GPU."""
    st.subheader("What the answer rests on")
    for line in gpu_sizing_text.evidence_lines(said.evidence):
        st.caption(plain(line))
    if said.check is not None:
        st.caption(plain(f"The configuration answered is {range_words(said)}."))
    st.caption(plain(f"Usable memory of {said.card.label}: {said.card.source}."))


def command(said: GpuAnswer, db: Path) -> None:
    """The command that reproduces the answer, with a copy button (Streamlit's code block)."""
    st.subheader("The same answer on the command line")
    where = None if Path(db).resolve() == database.REPOSITORY_DB.resolve() else db
    st.code(gpu_sizing_view.command(said.question, where), language="bash", wrap_lines=True)
    st.caption("Copy this command (the button at its right): it prints this answer, figure for "
               "figure; add --json for the same as JSON.")  # fmt: skip
