"""What the Sizing page shows of a GPU answer, free of Streamlit: the labels, the tables, the
headline figure and the ``memplan size gpu`` command that reproduces it.

The words are `presentation.gpu_sizing_text`'s, so the page says what ``memplan size gpu``
and the report say; this module only lays them out for a page (a metric, two tables)
and writes the command line that asks the same question (`command`).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pandas as pd

from application.gpu_models import DEFAULT_ALLOC_CONF, EXPANDABLE
from application.gpu_sizing import (
    LARGEST_BATCH,
    LARGEST_CUBE,
    WHICH_GPUS,
    GpuAnswer,
    GpuCheck,
    GpuQuestion,
)
from core import workloads
from core.dbnames import DB_FLAG
from core.units import format_bytes
from presentation.gpu_sizing_text import shape_words

# The allocator settings as a page offers them: (PYTORCH_CUDA_ALLOC_CONF, label).
ALLOC_LABELS = {
    DEFAULT_ALLOC_CONF: "the allocator's default",
    EXPANDABLE: "expandable_segments:True",
}


def ask_label(kind: str, workload: str) -> str:
    """The question ``kind`` in words, a cube's or a square's as the network has."""
    square = "cube" if workloads.get(workload).DIMS == 3 else "square image"
    return {
        LARGEST_CUBE: f"Largest {square} at a batch size",
        LARGEST_BATCH: "Largest batch at an image size",
        WHICH_GPUS: "Which GPU sizes fit an image at a batch",
    }[kind]


def image_text(shape: tuple[int, ...]) -> str:
    """``128`` for a cube or a square, ``240x240x144`` otherwise: what ``--image-size`` takes."""
    return str(shape[0]) if len(set(shape)) == 1 else "x".join(map(str, shape))


def asked_words(said: GpuAnswer) -> str:
    """The network and the GPU the answer is for, as the page's subheader says them."""
    title = workloads.get(said.question.workload).TITLE
    return f"{title} on {said.card.label}"


def metric(said: GpuAnswer) -> tuple[str, str]:
    """The headline figure: (its label, its value), e.g. ("Largest cube at batch 2", "288^3")."""
    question = said.question
    if question.kind == WHICH_GPUS:
        assert said.check is not None and question.image_shape is not None
        label = f"{shape_words(question.image_shape)} at batch {question.batch_size}"
        return label, said.check.verdict.value
    if question.kind == LARGEST_CUBE:
        dims = workloads.get(question.workload).DIMS
        label = f"Largest {'cube' if dims == 3 else 'square'} at batch {question.batch_size}"
        value = "none known to fit" if said.found is None else f"{said.found}^{dims}"
    else:
        assert question.image_shape is not None
        label = f"Largest batch at {shape_words(question.image_shape)}"
        value = "none known to fit" if said.found is None else str(said.found)
    return label, value


def _gib(value: int | None) -> str:
    return "—" if value is None else format_bytes(value)


def table_frame(checks: tuple[GpuCheck, ...]) -> pd.DataFrame:
    """One row per GPU size: its usable memory, the floor and bound, the verdict and why."""
    return pd.DataFrame(
        [
            {
                "GPU": check.card.label,
                "Floor": _gib(check.floor_bytes),
                "Bound": _gib(check.bound_bytes),
                "Verdict": check.verdict.value,
                "Why": check.reason,
            }
            for check in checks
        ],
        columns=["GPU", "Floor", "Bound", "Verdict", "Why"],
    )


def _found_words(said: GpuAnswer, found: int | None) -> str:
    if found is None:
        return "none known"
    if said.question.kind == LARGEST_CUBE:
        return f"{found}^{workloads.get(said.question.workload).DIMS}"
    return str(found)


def largest_frame(answers: list[GpuAnswer]) -> pd.DataFrame:
    """One row per GPU size of a largest-cube or largest-batch question asked of each: the
    largest that fits and the largest that is at most "verify first"."""
    return pd.DataFrame(
        [
            {
                "GPU": said.card.label,
                "Largest that fits": _found_words(said, said.found),
                "Verify first up to": _found_words(said, said.found_verify),
            }
            for said in answers
        ],
        columns=["GPU", "Largest that fits", "Verify first up to"],
    )


def command(question: GpuQuestion, db: Path | None = None) -> str:
    """The ``memplan size gpu`` command that asks ``question`` (of the database ``db``; None:
    the default one), so its answer is the page's to the digit."""
    words = ["memplan", "size", "gpu", question.kind, "--workload", question.workload]
    if question.image_shape is not None and question.kind != LARGEST_CUBE:
        words += ["--image-size", image_text(question.image_shape)]
    if question.batch_size is not None and question.kind != LARGEST_BATCH:
        words += ["--batch-size", str(question.batch_size)]
    if question.gpu is not None:
        words += ["--gpu", question.gpu]
    if question.profile is not None:
        words += ["--gpu-profile", question.profile]
    words += ["--precision", question.precision]
    for knob, value in question.knobs:
        words += [workloads.KNOBS[knob].flag, str(value)]
    if question.alloc_conf != DEFAULT_ALLOC_CONF:
        words += ["--alloc-conf", question.alloc_conf]
    if db is not None:
        words += [DB_FLAG, str(db)]
    return shlex.join(words)
