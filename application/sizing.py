"""One sizing question in, one answer out: what the Sizing page, ``memplan size`` and
``memplan report`` all answer through.

* `SizingQuestion` — the whole question: what is asked (``image``: the largest image
  at a batch; ``batch``: the largest batch at an image; ``buy``: the memory to buy for both),
  the workload, the machine profile, the knobs, the steps, the budget, its headroom, the model;
* `Models` — one profile's stored models (`Loaded`), widened where it answers for another
  machine and to its kept runs of other hosts (`models_of`, one answer on every path);
* `answer` — the `SizingAnswer`: the figures, the model and its bound (the memory to
  buy's widened for a server's more cores: `application.widening.more_cores`), the
  machine's facts, the verdict of the runs where there are any, the warnings;
* `decide` — whether the image and batch fit the budget, with its evidence
  (`modeling.decision.Decision`), which the page and the report word.

Headroom is memory kept free on top of the bound (`modeling.sizing.memory_to_buy`:
bound x (1 + headroom) <= memory): the largest image and batch fit what the budget
leaves once it is kept free (`usable_budget_bytes`), on every path. A question that
cannot be answered raises `SizingError` with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from application import machines as answered_for
from application import stored, verify, widening
from application.verify import Claim, Verification
from core import frameworks, workloads
from core.errors import MemplanError
from core.snapshot import Snapshot
from core.workloads.base import WorkloadConfig
from modeling import decision, host_spread, machines, sizing, trainable
from modeling.decision import Decision
from modeling.errors import ModelingError
from modeling.machines import MachineFacts
from modeling.sizing import BatchAnswer, ImageSizeAnswer, MemoryAnswer
from modeling.stored import bundle
from modeling.stored import tables as results
from modeling.stored.predictor import Predictor
from modeling.transfer import Transfer

IMAGE, BATCH, BUY = "image", "batch", "buy"
KINDS = (IMAGE, BATCH, BUY)
# The page's default and the CLI's: 20% of the bound kept free for the OS, the data
# pipeline and other processes.
DEFAULT_HEADROOM_PCT = sizing.DEFAULT_HEADROOM * 100
MAX_HEADROOM_PCT = sizing.MAX_HEADROOM * 100


class SizingError(MemplanError):
    """A sizing question that cannot be answered, with the reason in words."""


def usable_budget_bytes(budget_bytes: float, headroom: float) -> int:
    """What training may use of ``budget_bytes`` when ``headroom`` (0.2 = 20%) stays free.

    The inverse of `modeling.sizing.memory_to_buy`'s rule (bound x (1 + headroom)
    <= memory), so a configuration "fits" a budget exactly when that memory
    would be enough to buy.
    """
    if headroom < 0:
        raise ValueError(f"headroom must be >= 0, got {headroom}")
    return int(budget_bytes / (1 + headroom))


@dataclass(frozen=True)
class SizingQuestion:
    """One sizing question, whole: nothing else decides its answer.

    budget_bytes : int, bytes; the memory to fit (``image`` and ``batch``), before
    the headroom is kept free of it. headroom_pct : percent of the bound kept
    free on top of it. steps : the training steps asked about; None: what the
    models were fitted on.
    """

    kind: str  # IMAGE, BATCH or BUY
    workload: str
    machine: str | None = None  # the machine profile key; None: several machines' runs
    knobs: tuple[tuple[str, Any], ...] = ()  # (knob, value) set; others keep the defaults
    budget_bytes: int | None = None
    headroom_pct: float = DEFAULT_HEADROOM_PCT
    model: str | None = None  # None: the profile's default model
    image_shape: tuple[int, ...] | None = None  # ``batch`` and ``buy``
    batch_size: int | None = None  # ``image`` and ``buy``
    steps: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise SizingError(f"unknown question {self.kind!r}; known: {', '.join(KINDS)}")
        if not 0 <= self.headroom_pct <= MAX_HEADROOM_PCT:
            raise SizingError(
                f"headroom must be between 0 and {MAX_HEADROOM_PCT:g}% (20 = 20%), "
                f"got {self.headroom_pct:g}"
            )
        needs = {IMAGE: ("budget_bytes", "batch_size"), BATCH: ("budget_bytes", "image_shape")}
        needs[BUY] = ("image_shape", "batch_size")
        missing = [name for name in needs[self.kind] if getattr(self, name) is None]
        if missing:
            raise SizingError(f"a {self.kind} question needs {' and '.join(missing)}")
        if self.budget_bytes is not None and self.budget_bytes <= 0:
            raise SizingError(f"memory budget must be positive, got {self.budget_bytes} bytes")

    @property
    def config(self) -> WorkloadConfig:
        """The image and batch asked about; knobs not set keep the network's defaults."""
        assert self.image_shape is not None and self.batch_size is not None
        return workloads.get(self.workload).Config(
            self.image_shape, self.batch_size, **dict(self.knobs)
        )

    @property
    def headroom(self) -> float:
        """The headroom as a fraction: 0.2 for 20%."""
        return self.headroom_pct / 100

    @property
    def usable_bytes(self) -> int | None:
        """What training may use of the budget once the headroom is kept free."""
        if self.budget_bytes is None:
            return None
        return usable_budget_bytes(self.budget_bytes, self.headroom)


@dataclass(frozen=True)
class Models:
    """The stored models of one machine profile that sizing questions are put to."""

    workload: str
    machine: str | None  # the profile key
    predictors: tuple[Predictor, ...]
    default_model: str | None  # the profile's own default (`tables.best_model_name`)
    facts: MachineFacts
    source: str = "the stored models"  # where they were read, for an error: the database
    # Where the profile answers for another machine (`modeling.transfer`): which, why, how
    # widened, for the answer to say; None when it answers for its own machine.
    transfer: Transfer | None = None
    # The training steps every run its evaluation fit had (None: an older one did not say):
    # the steps a verifying sweep trains and the runs that verify an answer were run at.
    fit_steps: int | None = None
    # The framework of the profile's runs (`core.profile_frameworks`): what the answer is
    # for, and what a verifying sweep trains.
    framework: str = frameworks.DEFAULT_FRAMEWORK

    @property
    def more_cores(self) -> widening.MoreCores | None:
        """The profile's core count and what memplan ships about more (`core.cores`)."""
        return widening.more_cores(self.framework, self.facts.cores)

    def pick(self, name: str | None) -> Predictor:
        """The model ``name`` (None: the default) of this profile; `SizingError` if absent."""
        if not self.predictors:
            raise SizingError(
                f"no fitted {self.workload} models for machine profile {self.machine}: "
                f"fit some with `memplan evaluate --workload {self.workload}`"
            )
        wanted = name if name not in (None, results.BEST) else self.default_model
        wanted = wanted or self.predictors[0].name
        for predictor in self.predictors:
            if predictor.name == wanted:
                return predictor
        known = ", ".join([results.BEST, *(p.name for p in self.predictors)])
        raise SizingError(f"no stored model {wanted!r} in {self.source}; known: {known}")


@dataclass(frozen=True)
class Loaded:
    """What the page's cached loaders and `load_models` each read of one profile's models."""

    predictors: Sequence[Predictor]
    scores: pd.DataFrame  # their evaluation's scores (for the default)
    source: Path | str = "the stored models"  # where they were read, for an error
    fit_steps: int | None = None  # the steps of the runs the evaluation fit
    # The runs by whose other hosts every bound widens (`widening.with_host_spread`); None: not.
    runs: pd.DataFrame | None = None


def models_of(workload: str, choice: machines.MachineChoice, loaded: Loaded) -> Models:
    """`Models` of the profile ``choice`` names, from what was ``loaded`` of it.

    Where ``choice`` answers for another machine (`MachineChoice.transfer`), every bound
    widens by its factor and lies beyond this machine's range (`widening.with_transfer`); where
    it has no bound (`Transfer.bounded`), `SizingError` says why and what to run. A profile
    asked for by name answers for itself. Knob values never measured widen only where the
    predictors carry the stored knob splits.
    """
    predictors, scores = loaded.predictors, loaded.scores
    if choice.transfer is not None and not choice.transfer.bounded:
        raise SizingError(" ".join(filter(None, [f"{choice.transfer.refusal()}.", choice.note])))
    default = results.best_model_name(scores) if not scores.empty else None
    if loaded.runs is not None:
        spread = host_spread.spread_of(loaded.runs, choice.key, choice.profile, workload)
        predictors = widening.with_host_spread(predictors, spread)
    widened = tuple(widening.with_transfer(predictors, choice.transfer))
    framework = choice.profile.framework if choice.profile else frameworks.DEFAULT_FRAMEWORK
    return Models(
        workload,
        choice.key,
        widened,
        default,
        choice.facts,
        str(loaded.source),
        choice.transfer,
        loaded.fit_steps,
        framework,
    )


def load_models(
    read: Snapshot,
    machine: str | None,
    knobs: Mapping[str, Any],
    only: str | None = None,
    framework: str = frameworks.DEFAULT_FRAMEWORK,
) -> tuple[Models, machines.MachineChoice]:
    """The models of the profile a CLI question is for, and how that profile was chosen,
    from the question's one read of the database (`core.snapshot.read`).

    machine : a key, a unique prefix, or None (`application.machines.choose_machine`), of
    ``framework`` (another framework's is refused). A precision or knob value that never
    trained on the profile is refused (`modeling.trainable.refuse`). only : decode just this
    model (a name, or ``"best"``: the default); None: every model (the report's table).
    """
    workload = read.workload
    precision = knobs.get("precision") or workloads.get(workload).Config.precision
    choice = answered_for.choose_machine(read, machine, precision, framework)
    trainable.refuse(read, choice.key, dict(knobs))
    scores = bundle.load_scores(read, choice.key)
    if only is None:
        predictors = bundle.load_predictors(read, choice.key)
    else:
        predictors = [bundle.load_predictor(read, only, choice.key)]
    # The knob-split evidence costs ~2 s (loaded VM): only a question with a knob value some
    # model never measured has a use for it.
    if widening.asks_unmeasured(predictors, workload, knobs):
        predictors = widening.with_stored_knob_evidence(predictors, read)
    steps, runs = stored.fit_steps(read, choice.key), read.ok_runs()
    loaded = Loaded(predictors, scores, read.source, steps, runs)
    return models_of(workload, choice, loaded), choice


Found = ImageSizeAnswer | BatchAnswer | MemoryAnswer


@dataclass(frozen=True)
class SizingAnswer:
    """The answer to one `SizingQuestion`: the figures and everything they rest on."""

    question: SizingQuestion
    found: Found  # the `modeling.sizing` answer: the figure, its bound, the next size up
    model: str
    model_title: str
    machine: MachineFacts
    verification: Verification | None = None  # what the runs say (image, batch); None: not asked
    claim: Claim | None = None  # what a verifying sweep would measure (image, batch)
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def bound(self) -> str:
        """The bound the answer uses, in words: coverage and the evidence behind it."""
        return self.found.basis.bound

    @property
    def coverage(self) -> float:
        return self.found.basis.coverage

    @property
    def figures(self) -> dict[str, Any]:
        """The answer's numbers, as every path must agree on them."""
        question, found = self.question, self.found
        shown: dict[str, Any] = {
            "kind": question.kind,
            "model": self.model,
            "headroom_pct": question.headroom_pct,
            "budget_bytes": question.budget_bytes,
            "usable_budget_bytes": question.usable_bytes,
            "bound_bytes": found.bound_bytes,
        }
        if isinstance(found, ImageSizeAnswer):
            shown.update(side=found.side, batch_size=found.batch_size)
        elif isinstance(found, BatchAnswer):
            shown.update(batch_size=found.batch_size, image_shape=list(found.image_shape))
        else:
            shown.update(
                memory_gb=found.memory_gb,
                required_bytes=found.required_bytes,
                batch_size=found.batch_size,
                image_shape=list(found.image_shape),
            )
        return shown


def _check_models(question: SizingQuestion, models: Models) -> None:
    """Refuse ``models`` of another workload or machine profile than ``question``'s."""
    if question.workload != models.workload or question.machine != models.machine:
        raise SizingError(
            f"the question is about {question.workload} on profile {question.machine}, the "
            f"models are {models.workload}'s on profile {models.machine}"
        )


def answer(
    question: SizingQuestion,
    models: Models,
    runs: pd.DataFrame | None = None,
    db_path: Path | None = None,
) -> SizingAnswer:
    """The answer to ``question`` from ``models`` (its machine profile's).

    runs : the runs to verify an image or batch answer against (any machines; None:
    not verified). db_path : the database a verifying command names.
    Raises `SizingError` when the question cannot be answered.
    """
    _check_models(question, models)
    model = models.pick(question.model)
    if question.kind == BUY:  # a server to buy has more cores than the profile measured
        model = widening.with_more_cores(model, models.more_cores)
    knobs = dict(question.knobs)
    try:
        found = _found(question, model, knobs)
    except ModelingError as error:
        raise SizingError(str(error)) from error
    warnings = [found.basis.warning] if found.basis.warning else []
    if question.steps is not None:
        warnings.append(
            f"asked at {question.steps} steps; the models answer for the steps they were fitted on"
        )
    claim = None if isinstance(found, MemoryAnswer) else _claim(question, models, found, knobs)
    said = None if claim is None or runs is None else verify.verify(claim, runs, db_path)
    return SizingAnswer(
        question=question,
        found=found,
        model=model.name,
        model_title=model.title,
        machine=models.facts,
        verification=said,
        claim=claim,
        warnings=tuple(warnings),
    )


def _found(question: SizingQuestion, model: Predictor, knobs: dict[str, Any]) -> Found:
    workload = question.workload
    if question.kind == IMAGE:
        assert question.usable_bytes is not None and question.batch_size is not None
        return sizing.largest_image_side(
            model, question.usable_bytes, question.batch_size, knobs, workload=workload
        )
    if question.kind == BATCH:
        assert question.usable_bytes is not None and question.image_shape is not None
        return sizing.largest_batch(
            model, question.usable_bytes, question.image_shape, knobs, workload=workload
        )
    assert question.image_shape is not None and question.batch_size is not None
    return sizing.memory_to_buy(
        model, question.image_shape, question.batch_size, question.headroom, knobs, workload
    )


def _claim(
    question: SizingQuestion,
    models: Models,
    found: ImageSizeAnswer | BatchAnswer,
    knobs: dict[str, Any],
) -> Claim:
    """What a sweep verifying ``found`` measures, naming the question as it was asked."""
    asked = (question.budget_bytes, question.headroom_pct)
    machine = (models.machine, models.facts.label)
    claim = verify.claim_for(found, question.workload, knobs, *machine, asked)
    for_machine = models.transfer.asked.key if models.transfer else None
    steps = claim.steps if models.fit_steps is None else models.fit_steps
    return replace(claim, framework=models.framework, for_machine=for_machine, steps=steps)


def decide(question: SizingQuestion, models: Models, runs: pd.DataFrame) -> Decision:
    """Whether ``question``'s image and batch fit its budget: every model's estimate, the
    credible ones, what ``runs`` (its machine profile's, any status) measured of it
    (`modeling.decision.decide`). The asked model answers where it is credible."""
    if question.budget_bytes is None or question.image_shape is None or question.batch_size is None:
        raise SizingError("a decision needs a budget, an image and a batch")
    _check_models(question, models)
    config = question.config
    return decision.decide(
        decision.estimates_at(models.predictors, config),
        models.pick(question.model).name,
        config,
        decision.evidence_for(config, runs),
        question.budget_bytes,
        question.headroom,
    )


def credible_at(models: Models, config: WorkloadConfig) -> list[Predictor]:
    """The ``models`` credible for ``config`` (`modeling.decision.credible_models`), in order."""
    found = decision.credible_models(decision.estimates_at(models.predictors, config))
    return [model for model in models.predictors if found.is_credible(model.name)]
