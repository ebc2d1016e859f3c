"""The Sizing page's memory selector, and its GPU question as widgets.

`choose_memory`: host RAM (the machine's main memory, what the page always sized) or
GPU memory. In GPU memory, `gpu_inputs` asks which GPU (a GPU profile measured here, a
listed size, or the usable memory typed), the precision, the allocator setting, the
question and its image or batch. Each widget starts at the link's value
(`dashboard.gpu_query_state`) unless the user has set it, and keeps its value across a
page switch; a typed value that cannot be answered says why right under it, and the
answer waits for a valid one.
"""

from __future__ import annotations

import streamlit as st

from application.gpu_sizing import KINDS, LARGEST_BATCH, LARGEST_CUBE, GpuChoices
from core import workloads
from core.errors import ConfigError
from core.gpu_cards import card_for
from core.workloads.base import MAX_BATCH_SIZE, PRECISIONS
from dashboard import gpu_query_state
from dashboard.gpu_query_state import GPU_MEMORY, HOST, MEMORIES, GpuAsk
from dashboard.sizing_inputs import PERSIST, seed
from presentation import gpu_sizing_view
from presentation.text import plain

MEMORY_KEY = "sizing_memory"
MEMORY_LABELS = {
    HOST: "Host RAM (the machine's main memory)",
    GPU_MEMORY: "GPU memory (the graphics card's own)",
}
# The GPU selector's choice that opens a typed size.
TYPED = "typed"
TYPED_LABEL = "Another size: type the usable memory"


def key(workload: str, name: str) -> str:
    """The widget key of ``name`` for ``workload``'s GPU question."""
    return f"sizing_gpu_{workload}_{name}"


def _switched() -> None:
    gpu_query_state.clear_for(st.session_state[MEMORY_KEY])


def choose_memory(linked: str) -> str:
    """Which memory the page sizes, started at the link's: host RAM or GPU memory."""
    seed(MEMORY_KEY, linked, MEMORIES)
    return st.radio(
        "Memory to size",
        list(MEMORIES),
        key=MEMORY_KEY,
        persist_state=PERSIST,
        horizontal=True,
        format_func=MEMORY_LABELS.__getitem__,
        on_change=_switched,
        help="Host RAM: what a training process takes of the machine's main memory (CPU "
        "training, or the host side of any). GPU memory: what training takes on the GPU, "
        "and which GPU sizes it fits.",
    )


def _gpu_label(choices: GpuChoices, value: str) -> str:
    profiles, sizes = dict(choices.profiles), dict(choices.sizes)
    if value in profiles:
        return f"Measured here: {profiles[value]}"
    return sizes.get(value) or (TYPED_LABEL if value == TYPED else value)


def _gpu_input(start: GpuAsk, choices: GpuChoices) -> str | None:
    """The GPU: a profile's key, a listed size, or a typed size (None while it is wrong)."""
    offered = [value for value, _ in choices.profiles] + [value for value, _ in choices.sizes]
    typed_key = key(start.workload, "gpu_typed")
    if start.gpu not in offered:  # a typed size from the link
        seed(typed_key, start.gpu)
    seed(
        key(start.workload, "gpu"), start.gpu if start.gpu in offered else TYPED, (*offered, TYPED)
    )
    picked = st.selectbox(
        "GPU",
        [*offered, TYPED],
        key=key(start.workload, "gpu"),
        persist_state=PERSIST,
        format_func=lambda value: _gpu_label(choices, value),
        help="A listed size means the memory the framework reports as usable on that card "
        "(an '80 GB' H100 reports 79.18 GiB), not the marketing size.",
    )
    if picked != TYPED:
        return picked
    seed(typed_key, "")
    typed = st.text_input(
        "Usable GPU memory",
        key=typed_key,
        persist_state=PERSIST,
        placeholder="e.g. 75GiB",
        help="What your framework reports as the card's total memory, with a unit "
        "(torch.cuda.get_device_properties(0).total_memory).",
    )
    try:
        card_for(typed)
    except ConfigError as error:
        st.error(plain(str(error)))
        return None
    return typed


def _image_input(start: GpuAsk) -> tuple[int, ...] | None:
    module = workloads.get(start.workload)
    seed(key(start.workload, "image"), gpu_sizing_view.image_text(start.image_shape))
    text = st.text_input(
        "Image size",
        key=key(start.workload, "image"),
        persist_state=PERSIST,
        help=f"One side ({'a cube' if module.DIMS == 3 else 'a square'}), or every side: "
        f"{'D×H×W, e.g. 240x240x144' if module.DIMS == 3 else 'H×W, e.g. 224x192'}.",
    )
    try:
        return tuple(module.parse_image_shape(text))
    except ConfigError as error:
        st.error(plain(str(error)))
        return None


def _batch_input(start: GpuAsk) -> int | None:
    # No min_value / max_value: out of range, Streamlit would refuse silently (sizing_inputs).
    seed(key(start.workload, "batch"), start.batch_size)
    batch = st.number_input(
        "Batch size", step=1, key=key(start.workload, "batch"), persist_state=PERSIST
    )
    if not 1 <= batch <= MAX_BATCH_SIZE:
        st.error(plain(f"The batch size must be between 1 and {MAX_BATCH_SIZE}, not {batch}."))
        return None
    return int(batch)


def _select(start: GpuAsk, name: str, offered: tuple[str, ...], label: str, **more) -> str:
    value = getattr(start, name)
    seed(key(start.workload, name), value, offered)
    return st.selectbox(
        label, offered, key=key(start.workload, name), persist_state=PERSIST, **more
    )


def gpu_inputs(start: GpuAsk, choices: GpuChoices) -> GpuAsk | None:
    """The GPU question as widgets started from ``start``; None while a typed value is wrong."""
    seed(key(start.workload, "kind"), start.kind, KINDS)
    kind = st.radio(
        "Your question",
        KINDS,
        key=key(start.workload, "kind"),
        persist_state=PERSIST,
        format_func=lambda kind: gpu_sizing_view.ask_label(kind, start.workload),
    )
    gpu = _gpu_input(start, choices)
    image = _image_input(start) if kind != LARGEST_CUBE else start.image_shape
    batch = _batch_input(start) if kind != LARGEST_BATCH else start.batch_size
    precision = _select(
        start, "precision", PRECISIONS, "Precision",
        help="float32, or mixed precision (autocast); the bundled H200 runs measured "
        "float32 and mixed_bfloat16.",
    )  # fmt: skip
    alloc_conf = _select(
        start, "alloc_conf", tuple(gpu_sizing_view.ALLOC_LABELS), "Allocator setting",
        format_func=gpu_sizing_view.ALLOC_LABELS.__getitem__,
        help="PYTORCH_CUDA_ALLOC_CONF of the training: expandable segments let the allocator "
        "give back more of its cached blocks (not measured: the default's bound is kept).",
    )  # fmt: skip
    if gpu is None or image is None or batch is None:
        return None
    return GpuAsk(start.workload, kind, gpu, precision, alloc_conf, image, batch)
