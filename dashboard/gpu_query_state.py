"""The Sizing page's memory (host RAM or GPU memory) and its GPU question in the URL.

``...?memory=gpu&ask=largest-cube&gpu=80GB&batch=2`` opens the Sizing page on the GPU
question "the largest cube at batch 2 on an 80 GB GPU". Parameters (beside
`dashboard.query_state`'s ``workload``, whose meaning they share):

=========  ==================================================  ===========================
name       value                                               example
=========  ==================================================  ===========================
memory     ``host`` (host RAM, the default) or ``gpu``         gpu
ask        the GPU question (`application.gpu_sizing.KINDS`)   largest-cube, which-gpus
gpu        a listed size, a GPU profile's key, or the usable   80GB, 96f6d73453, 75GiB
           memory a framework reports, with a unit
precision  one of `core.workloads.base.PRECISIONS`             mixed_bfloat16
alloc      the allocator setting: ``default`` or               expandable_segments
           ``expandable_segments``
image      one side (a cube or a square), or every side        128, 240x240x144
batch      batch size                                          2
=========  ==================================================  ===========================

A value the page cannot take takes the default, and the page says which, in words (the
sentences quote the link: show them with `dashboard.query_state.plain`). Switching the
memory clears the other memory's question from the URL (`clear_for`), so a host-RAM
question never reads a GPU question's image or batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import streamlit as st

from application.gpu_models import DEFAULT_ALLOC_CONF, EXPANDABLE
from application.gpu_sizing import KINDS, LARGEST_CUBE
from core import workloads
from core.errors import ConfigError
from core.gpu_cards import card_for
from core.workloads.base import MAX_BATCH_SIZE, PRECISIONS

MEMORY, ASK, GPU, PRECISION, ALLOC, IMAGE, BATCH = (
    "memory", "ask", "gpu", "precision", "alloc", "image", "batch",
)  # fmt: skip
HOST, GPU_MEMORY = "host", "gpu"
MEMORIES = (HOST, GPU_MEMORY)
# The allocator setting's URL words and the PYTORCH_CUDA_ALLOC_CONF each stands for.
ALLOCS = {"default": DEFAULT_ALLOC_CONF, "expandable_segments": EXPANDABLE}
# What a GPU question writes (and a switch to host RAM clears): the workload is shared.
GPU_PARAMETERS = (MEMORY, ASK, GPU, PRECISION, ALLOC, IMAGE, BATCH)
# A host-RAM question's parameters a GPU question would misread (`dashboard.query_state`).
HOST_PARAMETERS = (ASK, IMAGE, BATCH, PRECISION, "filters", "classes", "model")
# The sides a new GPU question starts at, per number of image dimensions.
DEFAULT_SIDE = {3: 128, 2: 224}
DEFAULT_BATCH = {3: 2, 2: 128}
DEFAULT_GPU = "80GB"

Params = Mapping[str, str | list[str]]


@dataclass(frozen=True)
class GpuAsk:
    """A GPU question as the page holds it: ``gpu`` is a listed size ("80GB"), a GPU
    profile's key, or a typed size ("75GiB")."""

    workload: str
    kind: str = LARGEST_CUBE
    gpu: str = DEFAULT_GPU
    precision: str = "float32"
    alloc_conf: str = DEFAULT_ALLOC_CONF
    image_shape: tuple[int, ...] = (128, 128, 128)
    batch_size: int = 2


def default_ask(workload: str) -> GpuAsk:
    """The question a GPU page without a link starts on, for ``workload``."""
    dims = workloads.get(workload).DIMS
    return GpuAsk(
        workload, image_shape=(DEFAULT_SIDE[dims],) * dims, batch_size=DEFAULT_BATCH[dims]
    )


def _one(value: str | list[str]) -> str:
    return value[-1] if isinstance(value, list) else value


def _ignored(name: str, text: str, reason: str, instead: str) -> str:
    return f"The link's {name}={text!r} was ignored: {reason}. Showing {name}={instead} instead."


def memory_from(params: Params) -> tuple[str, list[str]]:
    """Which memory a link sizes (host RAM without one), and a sentence if unknown."""
    if MEMORY not in params:
        return HOST, []
    text = _one(params[MEMORY])
    if text in MEMORIES:
        return text, []
    return HOST, [_ignored(MEMORY, text, "it is host or gpu", HOST)]


def _gpu(text: str, profiles: Sequence[str]) -> str:
    if text in profiles:
        return text
    try:
        card_for(text)
    except ConfigError as error:
        raise ValueError(f"{error}, or a GPU profile's key") from None
    return text


def _image(text: str, workload: str) -> tuple[int, ...]:
    try:
        return tuple(workloads.get(workload).parse_image_shape(text))
    except ConfigError as error:
        raise ValueError(str(error)) from None


def _batch(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError("the batch size must be a whole number") from None
    if not 1 <= value <= MAX_BATCH_SIZE:
        raise ValueError(f"the batch size must be between 1 and {MAX_BATCH_SIZE}")
    return value


def _pick(text: str, offered: Sequence[str], what: str) -> str:
    if text not in offered:
        raise ValueError(f"{what} is one of {', '.join(offered)}")
    return text


def gpu_from(params: Params, profiles: Sequence[str], default: GpuAsk) -> tuple[GpuAsk, list[str]]:
    """The GPU question a link asks (``default``'s workload), one sentence per value it could
    not take; ``profiles``: the GPU profiles' keys the page offers."""
    readers: dict[str, Any] = {
        ASK: lambda text: {"kind": _pick(text, KINDS, "the GPU question")},
        GPU: lambda text: {"gpu": _gpu(text, profiles)},
        PRECISION: lambda text: {"precision": _pick(text, PRECISIONS, "the precision")},
        ALLOC: lambda text: {
            "alloc_conf": ALLOCS[_pick(text, tuple(ALLOCS), "the allocator setting")]
        },
        IMAGE: lambda text: {"image_shape": _image(text, default.workload)},
        BATCH: lambda text: {"batch_size": _batch(text)},
    }
    ask, problems = default, []
    for name, read_value in readers.items():
        if name not in params:
            continue
        text = _one(params[name])
        try:
            ask = replace(ask, **read_value(text))
        except ValueError as reason:
            instead = to_params(default)[name]
            problems.append(_ignored(name, text, str(reason), instead))
    return ask, problems


def to_params(ask: GpuAsk) -> dict[str, str]:
    """The query parameters that reproduce ``ask`` (the workload's is `query_state`'s)."""
    shape = ask.image_shape
    alloc = next(word for word, conf in ALLOCS.items() if conf == ask.alloc_conf)
    return {
        MEMORY: GPU_MEMORY,
        "workload": ask.workload,
        ASK: ask.kind,
        GPU: ask.gpu,
        PRECISION: ask.precision,
        ALLOC: alloc,
        IMAGE: str(shape[0]) if len(set(shape)) == 1 else "x".join(map(str, shape)),
        BATCH: str(ask.batch_size),
    }


def write(ask: GpuAsk) -> None:
    """Put ``ask`` in this session's URL (others stay), where it changed."""
    wanted = to_params(ask)
    current = st.query_params.to_dict()
    if any(current.get(name) != value for name, value in wanted.items()):
        st.query_params.from_dict(current | wanted)


def clear_for(memory: str) -> None:
    """Leave only what ``memory``'s page reads of the other memory's question in the URL."""
    current = st.query_params.to_dict()
    owned = GPU_PARAMETERS if memory == HOST else HOST_PARAMETERS
    kept = {name: value for name, value in current.items() if name not in owned}
    st.query_params.from_dict(kept | ({MEMORY: GPU_MEMORY} if memory == GPU_MEMORY else {}))
