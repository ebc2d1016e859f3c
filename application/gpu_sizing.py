"""GPU sizing questions and their answers: the one door the CLI, the Sizing page and the report use.

Three questions (`GpuQuestion.kind`), each for a workload, a precision and an allocator
setting (``alloc_conf``: PYTORCH_CUDA_ALLOC_CONF):

* LARGEST_CUBE: the largest cube (square for a 2-D network) that fits a GPU at a batch;
* LARGEST_BATCH: the largest batch that fits a GPU at a patch (image shape);
* WHICH_GPUS: which GPU sizes (`core.gpu_cards.GPU_CARDS`, and the GPU asked about)
  fit a patch at a batch, each with its verdict.

The GPU is a listed size ("80GB": the usable memory the framework reports for it, not
the marketing size), a usable size given alone ("75GiB"), or None: the answering
profile's own device. A configuration's verdict on a GPU (`check`) reads the fitted
floor and bound of `modeling.gpu_memory`: does not fit below the floor, fits at or above
the bound (inside the measured range, on the measured architecture), verify first in
between or beyond. Where it does not fit, `GpuAnswer.options` says what would
(`application.gpu_options`), each with its figures. Every answer says which profile
answered and how (`application.gpu_models.Transfer`), its range and coverage, and that
host RAM while training on a GPU is another figure (HOST_RAM_NOTE).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from application import gpu_models, gpu_options
from application.gpu_checks import (
    KINDS,
    LARGEST_BATCH,
    LARGEST_CUBE,
    WHICH_GPUS,
    GpuCheck,
    GpuOption,
    GpuQuestion,
    Verdict,
    check,
    check_question,
    config_of,
    largest,
    smallest,
)
from application.gpu_models import GpuProfileModel, Transfer
from core.gpu_cards import GPU_CARDS, GpuCard, card_for

__all__ = [
    "HOST_RAM_NOTE",
    "KINDS",
    "LARGEST_BATCH",
    "LARGEST_CUBE",
    "WHICH_GPUS",
    "GpuAnswer",
    "GpuCheck",
    "GpuChoices",
    "GpuEvidence",
    "GpuOption",
    "GpuQuestion",
    "Verdict",
    "answer",
    "ask",
    "check",
    "gpu_choices",
    "check_question",
    "config_of",
]

HOST_RAM_NOTE = (
    "GPU memory only: the host RAM a GPU training job needs (data loading, the framework, "
    "pinned buffers) is another figure, which this answer does not give"
)


@dataclass(frozen=True)
class GpuEvidence:
    """Which profile answered, how, and how its bound scored on runs it was not fitted to."""

    profile: str
    profile_label: str
    run_count: int
    transfer: Transfer | None
    random_split_coverage: float | None  # inside the measured range, where "fits" is said
    beyond_coverage: float | None  # beyond the measured sides
    median_error_pct: float | None  # the allocated line's, random split


@dataclass(frozen=True)
class GpuAnswer:
    """The answer to a `GpuQuestion`."""

    question: GpuQuestion
    card: GpuCard  # the GPU the answer is for
    found: int | None  # LARGEST_*: the largest side / batch that fits (None: none)
    found_verify: int | None  # the largest that is at most "verify first" (None: none)
    check: GpuCheck | None  # the found configuration's, or the asked one's
    table: tuple[GpuCheck, ...]  # WHICH_GPUS: one per GPU size
    options: tuple[GpuOption, ...]  # where the asked configuration does not fit
    evidence: GpuEvidence
    notes: tuple[str, ...]


@dataclass(frozen=True)
class GpuChoices:
    """What a GPU selector offers: the GPU sizes and the GPU profiles, each (value, label).

    A size's value is what `GpuQuestion.gpu` takes ("80GB"); a profile's is its key,
    what `GpuQuestion.profile` takes.
    """

    sizes: tuple[tuple[str, str], ...]
    profiles: tuple[tuple[str, str], ...]


def gpu_choices(models: dict[str, GpuProfileModel]) -> GpuChoices:
    """The GPU sizes (`core.gpu_cards.GPU_CARDS`) and the GPU profiles of ``models``."""
    return GpuChoices(
        sizes=tuple((f"{card.size_gb}GB", card.label) for card in GPU_CARDS),
        profiles=tuple((key, model.label) for key, model in models.items()),
    )


def card_of(question: GpuQuestion, models: dict[str, GpuProfileModel]) -> GpuCard:
    """The GPU ``question`` asks about: the text's card, or the profile's own device."""
    if question.gpu is not None:
        return card_for(question.gpu)
    if question.profile is not None and question.profile in models:
        model = models[question.profile]
    elif models:
        model = max(models.values(), key=lambda m: m.run_count)
    else:
        gpu_models.nearest(models, GPU_CARDS[-1], question.alloc_conf)  # raises: none
        raise AssertionError
    device = model.profile.gpu
    assert device is not None
    for card in GPU_CARDS:
        if card.usable_bytes == device.total_bytes:
            return card
    return GpuCard(0, device.name, device.total_bytes, device.compute_capability, "measured")


def ask(question: GpuQuestion, db_path: Path) -> GpuAnswer:
    """`answer` from the GPU profiles of the database at ``db_path``."""
    return answer(question, gpu_models.load_gpu_models(db_path))


def answer(question: GpuQuestion, models: dict[str, GpuProfileModel]) -> GpuAnswer:
    """The answer to ``question`` from the GPU profiles ``models`` (`gpu_models.gpu_models_of`)."""
    check_question(question)
    card = card_of(question, models)
    model, transfer = gpu_models.nearest(models, card, question.alloc_conf, question.profile)
    found = found_verify = asked = subject = None
    table: tuple[GpuCheck, ...] = ()
    if question.kind in (LARGEST_CUBE, LARGEST_BATCH):
        fits, verify = largest(question, model, card, transfer)
        asked = fits or verify
        subject = None if fits else smallest(question, model, card, transfer)
        pick = (lambda c: c.config.image_shape[0]) if question.kind == LARGEST_CUBE else (
            lambda c: c.config.batch_size
        )  # fmt: skip
        found = pick(fits) if fits else None
        found_verify = pick(verify) if verify else None
    else:
        assert question.image_shape is not None and question.batch_size is not None
        config = config_of(question, question.image_shape, question.batch_size)
        asked = subject = check(model, config, card, transfer)
        cards = [*GPU_CARDS, *([card] if card not in GPU_CARDS else [])]
        table = tuple(
            check(model, config, each, gpu_models.transfer_of(model, each, question.alloc_conf))
            for each in sorted(cards, key=lambda c: c.usable_bytes)
        )
    options = gpu_options.options_for(question, model, card, transfer, subject)
    return GpuAnswer(
        question=question,
        card=card,
        found=found,
        found_verify=found_verify,
        check=asked,
        table=table,
        options=options,
        evidence=evidence_of(model, transfer),
        notes=(HOST_RAM_NOTE,),
    )


def evidence_of(model: GpuProfileModel, transfer: Transfer | None) -> GpuEvidence:
    """What an answer by ``model`` rests on."""
    split, beyond = model.random_split, model.beyond_sides
    return GpuEvidence(
        profile=model.key,
        profile_label=model.label,
        run_count=model.run_count,
        transfer=transfer,
        random_split_coverage=split.inside_bound_coverage if split else None,
        beyond_coverage=beyond.bound_coverage if beyond else None,
        median_error_pct=split.median_error_pct if split else None,
    )
