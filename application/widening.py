"""Stored models whose bounds widen for what their profile never measured.

Two things a profile's runs cannot speak for, each widening every bound after the
closed-form floor (`modeling.stored.predictor.TrainingRange.widening`), and each
said in the answer's words:

* a knob value no run of the profile measured: by the stored knob splits of the
  profiles that did (`with_knob_evidence`, `modeling.unmeasured`);
* another machine: the profile answers for one without models of its own, by the
  spread between other profiles (`with_transfer`, `modeling.transfer`), or not at all
  where no measured pair of other profiles differs in a first fact (oneDNN, instruction
  set) that the two differ in: no bound, refused in words (`Transfer.refusal`);
* another host of the profile: by as much as its kept runs need to be covered
  (`with_host_spread`, `modeling.host_spread`), or said to be unmeasured;
* more cores than the profile's, for the memory to buy only (a server bought has more
  than the 2 every bundled profile measured): by the most the peak rose on the machine of
  `core.cores` from that count to more (`more_cores`, `with_more_cores`; the other answers
  are for the profile's own machine and say the evidence without widening).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core import cores as core_counts
from core import workloads
from core.snapshot import Snapshot
from modeling import host_spread
from modeling.errors import ModelingError
from modeling.host_spread import HostSpread
from modeling.stored import knob_splits
from modeling.stored.predictor import Predictor
from modeling.transfer import Transfer
from modeling.unmeasured import KnobEvidence


def with_knob_evidence(predictors: Sequence[Predictor], evidence: KnobEvidence) -> list[Predictor]:
    """``predictors``, each carrying its own knob-split results (`TrainingRange.knob_evidence`):
    a calibrated model its prior's (`Predictor.knob_model`)."""
    return [
        replace(
            p,
            training_range=replace(p.training_range, knob_evidence=evidence.of_model(p.knob_model)),
        )
        for p in predictors
    ]


def with_transfer(predictors: Sequence[Predictor], transfer: Transfer | None) -> list[Predictor]:
    """``predictors`` answering for the machine of ``transfer`` (None: for their own profile):
    every bound widened by its factor (the answer says why: `Transfer.sentence`), and every
    answer beyond that machine's measured range, whose runs these are not
    (`Transfer.measured_elsewhere`). Refused (`ModelingError`, `Transfer.refusal`) where
    ``transfer`` has no bound: an infinite one would read as the model's failure."""
    if transfer is None:
        return list(predictors)
    if not transfer.bounded:
        raise ModelingError(transfer.refusal())
    moved = {"machine_widening": transfer.factor, "other_machine": transfer.measured_elsewhere()}
    return [replace(p, training_range=replace(p.training_range, **moved)) for p in predictors]


def with_host_spread(predictors: Sequence[Predictor], spread: HostSpread | None) -> list[Predictor]:
    """``predictors``, each bound widened by the factor that covers ``spread``'s kept runs of
    their profile on other hosts (`HostSpread.factor`, computed on the bound before it: never
    narrower), with that in words; None: their profile's host-to-host spread is unmeasured,
    said so, not widened."""
    widened = []
    for predictor in predictors:
        own = replace(predictor.training_range, host_widening=1.0)
        if spread is None:
            host = {"host_widening": 1.0, "host_spread": host_spread.UNMEASURED}
        else:
            factor = spread.factor(replace(predictor, training_range=own))
            host = {"host_widening": factor, "host_spread": spread.sentence(factor)}
        widened.append(replace(predictor, training_range=replace(own, **host)))
    return widened


def with_stored_knob_evidence(predictors: Sequence[Predictor], read: Snapshot) -> list[Predictor]:
    """``predictors`` carrying the knob splits stored in the snapshot ``read``
    (`with_knob_evidence`)."""
    return with_knob_evidence(predictors, knob_splits.load_knob_evidence(read))


def asks_unmeasured(
    predictors: Sequence[Predictor], workload: str, knobs: Mapping[str, Any]
) -> bool:
    """Whether a knob value asked (or its default) is one some model never measured."""
    declared = workloads.get(workload).KNOBS
    asked = {knob.name: knobs.get(knob.name) or knob.default for knob in declared}
    return any(
        value not in p.training_range.knobs.get(name, ())
        for p in predictors
        for name, value in asked.items()
    )


@dataclass(frozen=True)
class MoreCores:
    """The profile's core count and what is known of more (`core.cores`), for an answer."""

    cores: int | None  # the profile's; None: unknown
    factor: float  # the memory to buy is widened by this (1: not)
    evidence: str  # what the shipped measurements say, in words, naming the file

    @property
    def sentence(self) -> str:
        """``measured on 2 cores; on one machine (...), 2 to 16 cores changed the peak by
        +1.1%…+4.7% (...) (data/cores/...); the memory to buy is widened x1.051 for it``."""
        measured = f"measured on {self.cores} cores" if self.cores else "core count unknown"
        widened = (
            f"the memory to buy, for a server with more cores, is widened x{self.factor:.3f}"
            if self.factor > 1
            else "nothing is widened for it"
        )
        return f"{measured}; {self.evidence}; {widened}"


def more_cores(framework: str, cores: int | None) -> MoreCores | None:
    """What memplan ships about more cores than ``cores`` for ``framework``; None: nothing."""
    evidence = core_counts.evidence_for(framework)
    if evidence is None:
        return None
    return MoreCores(cores, evidence.widening_from(cores), evidence.sentence(cores))


def with_more_cores(predictor: Predictor, more: MoreCores | None) -> Predictor:
    """``predictor`` with every bound widened by ``more``'s factor (the memory to buy)."""
    if more is None or more.factor <= 1:
        return predictor
    moved = replace(predictor.training_range, cores_widening=more.factor)
    return replace(predictor, training_range=moved)
