"""The Sizing page in GPU memory: which GPU fits this configuration, and the largest cube or
batch that fits mine.

`chosen_memory` draws the page's memory selector (host RAM or GPU memory); in GPU memory
`render` asks the question (`dashboard.gpu_sizing_inputs`) beside its answer
(`dashboard.gpu_sizing_answers`), first screen, then the options that would make it fit,
what it rests on and the ``memplan size gpu`` command that gives the same answer. The
answer is `application.gpu_sizing.answer`'s, from the database's GPU profiles (the bundled
H200 runs in a new database), as for ``memplan size gpu`` and ``memplan report --gpu``.
The question lives in the URL (`dashboard.gpu_query_state`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from application import gpu_models, gpu_sizing
from application.gpu_sizing import GpuAnswer, GpuChoices, GpuQuestion
from core.errors import ConfigError
from dashboard import data, gpu_query_state, gpu_sizing_answers, query_state
from dashboard.gpu_query_state import GPU_MEMORY, GpuAsk
from dashboard.gpu_sizing_inputs import choose_memory, gpu_inputs
from dashboard.sizing_inputs import choose_workload
from presentation.text import plain

__all__ = ["GPU_MEMORY", "chosen_memory", "question_of", "render"]

CAPTION = (
    "How much GPU memory will training this network take: the largest cube or batch that "
    "fits a GPU, and which GPU sizes fit a configuration. Bounds from GPU runs measured "
    "with PyTorch, not point predictions; the usable memory is what the framework reports "
    "for a card, not its marketing size."
)


def chosen_memory() -> str:
    """The memory selector, started at the link's (host RAM without one)."""
    linked, problems = gpu_query_state.memory_from(query_state.current())
    memory = choose_memory(linked)
    for problem in problems:
        st.warning(plain(problem))
    return memory


def question_of(ask: GpuAsk, choices: GpuChoices) -> GpuQuestion:
    """The `GpuQuestion` the page's ``ask`` is: a GPU profile chosen answers for its own GPU."""
    profile = ask.gpu if ask.gpu in dict(choices.profiles) else None
    return GpuQuestion(
        kind=ask.kind,
        workload=ask.workload,
        precision=ask.precision,
        batch_size=ask.batch_size if ask.kind != gpu_sizing.LARGEST_BATCH else None,
        image_shape=ask.image_shape if ask.kind != gpu_sizing.LARGEST_CUBE else None,
        gpu=None if profile else ask.gpu,
        alloc_conf=ask.alloc_conf,
        profile=profile,
    )


@st.cache_data(show_spinner=False, max_entries=64)
def on_every_size(db: str, version: data.Version, question: GpuQuestion) -> list[GpuAnswer]:
    """A largest-cube or largest-batch ``question`` asked of each listed GPU size (none for
    which-GPUs, whose answer has its table): cached per database version and question."""
    if question.kind == gpu_sizing.WHICH_GPUS:
        return []
    models = gpu_models.load_gpu_models(Path(db))
    sizes = gpu_sizing.gpu_choices(models).sizes
    return [gpu_sizing.answer(replace(question, gpu=size), models) for size, _ in sizes]


def _asked(choices: GpuChoices, notes: DeltaGenerator) -> GpuAsk | None:
    """The workload and the GPU question, as widgets started at the link's."""
    params = query_state.current()
    linked, problems = query_state.workload_from(params)
    workload = choose_workload(linked)
    link = params if workload == linked else {}  # another workload's image does not apply
    keys = [key for key, _ in choices.profiles]
    start, more = gpu_query_state.gpu_from(link, keys, gpu_query_state.default_ask(workload))
    with notes:
        for problem in problems + more:
            st.warning(plain(problem))
    return gpu_inputs(start, choices)


def render() -> None:
    """The GPU memory question beside its answer, then what it rests on."""
    st.caption(CAPTION)
    notes = st.container()
    db = data.database()
    models = gpu_models.load_gpu_models(db)
    choices = gpu_sizing.gpu_choices(models)
    asking, answering = st.columns([1, 2], gap="large")
    with asking:
        ask = _asked(choices, notes)
    if ask is None:
        with answering:
            st.info("The answer waits for a valid question: see what is wrong on the left.")
        return
    try:
        said: GpuAnswer = gpu_sizing.answer(question_of(ask, choices), models)
    except ConfigError as error:  # a shape the network cannot take, no GPU profile
        with answering:
            st.error(plain(str(error)))
        return
    gpu_query_state.write(ask)  # a link carries only a question the page answers
    with answering:
        gpu_sizing_answers.headline(said)
        gpu_sizing_answers.table(said)
        every = on_every_size(str(db), data.version(db), said.question)
        gpu_sizing_answers.every_size(said, every)
    gpu_sizing_answers.options(said)
    gpu_sizing_answers.evidence(said)
    gpu_sizing_answers.command(said, db)
