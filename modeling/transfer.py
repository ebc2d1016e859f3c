"""Answering for a machine profile without models: the nearest measured profile, its bound widened.

A profile's models describe the machine its runs were measured on (`core.profiles`).
For a machine no run has measured, the honest answer is another profile's, chosen
by the facts that move the peak and widened by how far peaks differ *between*
profiles:

* `modeling.nearest.nearest_profile` ranks candidates by the facts that move the
  peak (oneDNN state and instruction-set tier first: the *first facts*), and says why.
* `pair_ratios` is that spread, measured: for each configuration measured on two
  profiles, the median peak on one over the median peak on the other;
  `measured_pairs` pairs each profile with its own nearest, as an answer for it would be.
* `widening_for` turns the ratios of *other* pairs of profiles into the factor an
  answer's bound is multiplied by: the conformal upper quantile of the ratios
  (the ceil((n + 1) * 0.9)-th smallest of n), never below 1, from the pairs that
  differ in the same first facts as the answer's pair. Where none does, each first
  fact the answer's pair differs in widens by the pairs that differ in it, and the
  factors multiply (`Compounded`); where no measured pair differs in one of them at
  all, there is no bound (`Unbounded`): nothing measured says how far a peak moves
  with that fact (the oneDNN-off EPYC's peaks lay 1.01-2.50x the oneDNN-on one's,
  where every other pair's spread, pooled, was x1.06: docs/transfer.md). Nor where
  only another framework measured pairs (PyTorch's one bundled profile: `transfer_for`).
  The profile
  asked about is never part of its own evidence: `benchmarks/transfer.py` checks the
  factor leave-one-profile-out.
* `transfer_for` — the `Transfer` of a profile answering for a machine without
  models (`modeling.machines.choose_machine`'s fallback): its factor and, in
  words, which profile answered, why, how the two differ and the evidence; without a
  bound, why not and what to run instead (`Transfer.refusal`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from core import frameworks, profiles, store
from core.profiles import MachineProfile
from core.store import POINT_COLUMNS
from modeling.errors import ModelingError
from modeling.nearest import FIRST_FACTS, Nearest, distance, nearest_profile

# The share of configurations a widened bound must cover.
TRANSFER_COVERAGE = 0.9


# --- the spread between profiles ----------------------------------------------------------


def point_texts(runs: pd.DataFrame) -> list[str]:
    """One text per run naming its configuration (`core.store.point_key`): NULL knob columns
    compare equal as text, as they do not as index values."""
    return [repr(store.point_key(row)) for row in runs[list(POINT_COLUMNS)].to_dict("records")]


def measured_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The ok runs with a kernel high-water mark, each with its `point_texts` in ``point``."""
    ok = runs[(runs["status"] == "ok") & runs["peak_hwm_bytes"].notna()]
    return ok if "point" in ok else ok.assign(point=point_texts(ok) if len(ok) else [])


def configuration_peaks(runs: pd.DataFrame) -> pd.Series:
    """The median kernel high-water mark, bytes, of each configuration's ok runs, by ``point``."""
    ok = measured_runs(runs)
    return ok["peak_hwm_bytes"].astype(float).groupby(ok["point"]).median()


def pair_ratios(runs: pd.DataFrame, measured_key: str, answering_key: str) -> pd.Series:
    """Peak on ``measured_key`` over peak on ``answering_key``, per configuration both measured."""
    runs = profiles.with_keys(runs)
    measured = configuration_peaks(runs[runs[profiles.KEY_COLUMN] == measured_key])
    answering = configuration_peaks(runs[runs[profiles.KEY_COLUMN] == answering_key])
    shared = measured.index.intersection(answering.index)
    return (measured[shared] / answering[shared]).sort_values()


def widening_factor(ratios: pd.Series, coverage: float = TRANSFER_COVERAGE) -> float:
    """The factor that covers ``coverage`` of configurations like these: the
    ceil((n + 1) * coverage)-th smallest ratio (the largest where n is too small), never below 1.
    """
    if ratios.empty:
        raise ValueError("a widening needs at least one configuration measured on two profiles")
    ordered = sorted(float(ratio) for ratio in ratios)
    rank = min(math.ceil((len(ordered) + 1) * coverage), len(ordered))
    return max(1.0, ordered[rank - 1])


@dataclass(frozen=True)
class MeasuredPair:
    """One profile paired with its own nearest among the others, as an answer for it would be,
    and the peak ratios of the configurations both measured (at least one)."""

    measured: str
    answering: str
    differences: tuple[str, ...]  # `Nearest.first_differences` of the answering profile
    ratios: pd.Series  # `pair_ratios`


def _pool(
    known: Mapping[str, MachineProfile], excluded: Collection[str]
) -> dict[str, MachineProfile]:
    return {key: profile for key, profile in known.items() if key not in excluded}


def _paired(runs: pd.DataFrame, key: str, nearest: Nearest | None) -> list[MeasuredPair]:
    """The pair of profile ``key`` and ``nearest``, if they share a measured configuration."""
    if nearest is None:
        return []
    ratios = pair_ratios(runs, key, nearest.key)
    if ratios.empty:
        return []
    return [MeasuredPair(key, nearest.key, nearest.first_differences, ratios)]


def measured_pairs(
    runs: pd.DataFrame, known: Mapping[str, MachineProfile], excluded: Collection[str] = ()
) -> list[MeasuredPair]:
    """Each profile of ``known`` but ``excluded`` paired with its nearest among the remaining
    (`nearest_profile`); only the pairs that share a measured configuration."""
    pool = _pool(known, excluded)
    return [
        pair
        for key, profile in pool.items()
        for pair in _paired(runs, key, nearest_profile(profile, _others(pool, key)))
    ]


def _others(pool: Mapping[str, MachineProfile], key: str) -> dict[str, MachineProfile]:
    return {k: p for k, p in pool.items() if k != key}


def pairs_across(
    runs: pd.DataFrame, known: Mapping[str, MachineProfile], fact: str, excluded: Collection[str]
) -> list[MeasuredPair]:
    """Each profile of ``known`` but ``excluded`` paired with its nearest among those that
    differ from it in ``fact`` alone of the first facts; only pairs that share a measured
    configuration. The evidence for ``fact`` where no profile's own nearest differs in it:
    with two oneDNN-off profiles bundled, each one's nearest is the other, and the pairs
    that measured oneDNN on and off on one machine were no profile's nearest."""
    pool = _pool(known, excluded)
    found = []
    for key, profile in pool.items():
        across = {
            other: candidate
            for other, candidate in _others(pool, key).items()
            if _first_differences(profile, other, candidate) == (fact,)
        }
        found += _paired(runs, key, nearest_profile(profile, across))
    return found


def _first_differences(profile: MachineProfile, key: str, other: MachineProfile) -> tuple[str, ...]:
    nearest = nearest_profile(profile, {key: other})
    return () if nearest is None else nearest.first_differences


def _named(pairs: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{a} over {b}" for a, b in pairs)


@dataclass(frozen=True)
class Widening:
    """How much an answer from another profile is widened, and from what evidence."""

    factor: float
    ratios: tuple[float, ...]  # every pair's per-configuration ratios pooled, sorted
    pairs: tuple[tuple[str, str], ...]  # (measured profile, the profile that would answer it)
    matched: bool  # whether the pairs differ in the same first facts as the answer's pair
    # In a `Compounded` widening: the one first fact these pairs are the evidence for.
    fact: str | None = None

    @classmethod
    def of(cls, pairs: Sequence[MeasuredPair], matched: bool, fact: str | None = None) -> Widening:
        """The conformal upper quantile of ``pairs``' ratios pooled (`widening_factor`)."""
        pooled = pd.concat([pair.ratios for pair in pairs]).sort_values()
        named = tuple((pair.measured, pair.answering) for pair in pairs)
        return cls(widening_factor(pooled), tuple(pooled), named, matched, fact)

    def sentence(self) -> str:
        """In words: "bound widened x1.094: the 90% upper quantile of 45 configurations' ..."."""
        quantile = (
            f"the {TRANSFER_COVERAGE:.0%} upper quantile of {len(self.ratios)} configurations' "
            "peak ratios between other profiles measured on both"
        )
        if self.fact is not None:
            named = _named(self.pairs)
            return f"{self.fact} x{self.factor:.3f}, {quantile} (pairs that differ in it: {named})"
        kind = (
            "pairs that differ as these two do"
            if self.matched
            else "every pair (none differs as these two do)"
        )
        return f"bound widened x{self.factor:.3f}: {quantile} ({kind}: {_named(self.pairs)})"


@dataclass(frozen=True)
class Compounded:
    """The widening of an answer whose pair differs in first facts that measured pairs each
    differ in, but no pair as these two do: each fact's own widening, multiplied (pooling
    every pair would let the pairs of one fact outvote another's)."""

    parts: tuple[Widening, ...]  # one per first fact, in FIRST_FACTS order

    @property
    def factor(self) -> float:
        return math.prod(part.factor for part in self.parts)

    def sentence(self) -> str:
        facts = " and ".join(str(part.fact) for part in self.parts)
        return (
            f"bound widened x{self.factor:.3f}: no measured pair of other profiles differs as "
            f"these two do ({facts}), so each fact's own widening multiplies: "
            + "; ".join(part.sentence() for part in self.parts)
        )


@dataclass(frozen=True)
class Unbounded:
    """No bound: the answer's pair differs in first facts no measured pair of other profiles
    differs in, so how far a peak moves with them is unmeasured, and no factor is evidence."""

    facts: tuple[str, ...]  # the first facts no measured pair spans (none: no pair at all)
    pairs: tuple[tuple[str, str], ...]  # the measured pairs there are

    @property
    def factor(self) -> float:
        return math.inf

    def why(self) -> str:
        """In words: "no measured pair of other profiles differs in oneDNN (the measured pairs:
        ...), so how far a peak moves with it is unmeasured"."""
        if not self.pairs:
            return (
                "no two other profiles of this framework measured a configuration in common "
                "(another framework's pairs are not its evidence), so how far a peak moves "
                "between machines is unmeasured"
            )
        facts = " or ".join(self.facts)
        return (
            f"no measured pair of other profiles differs in {facts} (the measured pairs: "
            f"{_named(self.pairs)}), so how far a peak moves with "
            f"{'it' if len(self.facts) == 1 else 'them'} is unmeasured"
        )

    def sentence(self) -> str:
        return f"no bound can be given: {self.why()}"


# How an answer from another profile is widened: by pairs that differ as its pair does (or by
# every pair where its pair differs in no first fact), by each fact's pairs, or not at all.
Spread = Widening | Compounded | Unbounded


def widening_for(
    runs: pd.DataFrame,
    known: Mapping[str, MachineProfile],
    answer: Nearest,
    excluded: Collection[str] = (),
) -> Spread | None:
    """The widening of ``answer`` from pairs of profiles in ``known`` other than ``excluded``
    (`measured_pairs`): those that differ in the same first facts as ``answer``. Where none
    does, each first fact ``answer`` differs in widens by the pairs that differ in it alone,
    else by each profile paired across that fact alone (`pairs_across`), else by the pairs
    that differ in it among others, multiplied (`Compounded`); where no measured pair
    differs in one of them, there is no bound (`Unbounded`); where ``answer`` differs in no
    first fact, every pair. None where no two other profiles measured a configuration in
    common: not widened, said so (`Transfer.sentence`), unless another framework's did.
    """
    pairs = measured_pairs(runs, known, excluded)
    if not pairs:
        return None
    wanted = answer.first_differences
    matched = [pair for pair in pairs if pair.differences == wanted]
    if matched:
        return Widening.of(matched, True)
    if not wanted:
        return Widening.of(pairs, False)
    evidence = {}
    for fact in wanted:
        alone = [pair for pair in pairs if pair.differences == (fact,)]
        among = [pair for pair in pairs if fact in pair.differences]
        evidence[fact] = alone or pairs_across(runs, known, fact, excluded) or among
    missing = tuple(fact for fact in wanted if not evidence[fact])
    if missing:
        return Unbounded(missing, tuple((pair.measured, pair.answering) for pair in pairs))
    return Compounded(tuple(Widening.of(evidence[fact], False, fact) for fact in wanted))


@dataclass(frozen=True)
class Transfer:
    """An answer for a machine without models from another profile's: which, why, how widened."""

    asked: MachineProfile  # the machine the question is about
    nearest: Nearest  # the profile that answers, with the facts that set them apart
    widening: Spread | None  # None: no configuration measured on two other profiles
    chosen_as: str  # why that profile answers, e.g. "the bundled reference"

    @property
    def bounded(self) -> bool:
        """Whether the answer has a bound at all (not where no measured pair spans a first
        fact the two profiles differ in: `Unbounded`)."""
        return not isinstance(self.widening, Unbounded)

    @property
    def factor(self) -> float:
        """How far every bound widens (math.inf where there is none: see `bounded`)."""
        return self.widening.factor if self.widening is not None else 1.0

    def sentence(self) -> str:
        """In words: who answered, that it is another machine, why, and how widened."""
        widened = (
            self.widening.sentence()
            if self.widening is not None
            else "bound not widened: no configuration was measured on two other profiles"
        )
        if not self.bounded:
            widened += f"; {_calibrate(self.nearest.key, self.asked.framework)}"
        answering = self.nearest
        return (
            f"answered by another machine: profile {answering.key} ({answering.profile.label}), "
            f"{self.chosen_as}, for this machine ({self.asked.label}, profile {self.asked.key}), "
            f"which has no models; against it: {'; '.join(answering.reasons)}; {widened}"
        )

    def refusal(self) -> str:
        """Why an answer without a bound is no answer, in words naming what to run instead;
        "" where it has a bound."""
        if self.bounded:
            return ""
        assert isinstance(self.widening, Unbounded)
        answering, facts = self.nearest, self.widening.facts
        differ = [
            reason
            for name, reason in zip(FIRST_FACTS, answering.reasons, strict=False)
            if name in facts
        ] or list(answering.reasons)  # no pair at all: every way the two differ
        return (
            f"no bound can be given for this machine ({self.asked.label}, profile "
            f"{self.asked.key}), which has no models: the profile that would answer, "
            f"{answering.key} ({answering.profile.label}, {self.chosen_as}), differs from it "
            f"({'; '.join(differ)}), and {self.widening.why()}; "
            f"{_calibrate(answering.key, self.asked.framework)}"
        )

    def measured_elsewhere(self) -> str:
        """Why an answer from it lies beyond this machine's measured range, naming who answers:
        "the runs are another machine's: profile 9b59349f74 (Intel Xeon, ...), not this
        machine's (AMD EPYC, ..., profile fa41f7e95d)"."""
        answering = self.nearest
        return (
            f"the runs are another machine's: profile {answering.key} "
            f"({answering.profile.label}), not this machine's ({self.asked.label}, "
            f"profile {self.asked.key})"
        )


def _calibrate(key: str, framework: str) -> str:
    command = " ".join(["memplan calibrate", *frameworks.flag(framework)])
    return (
        f"this machine needs runs of its own (`{command}` measures it and fits its "
        f"models); `--machine {key}` answers for that profile's own machine instead"
    )


def transfer_for(
    runs: pd.DataFrame,
    known: Mapping[str, MachineProfile],
    asked: MachineProfile,
    chosen: str,
    chosen_as: str,
) -> Transfer:
    """The `Transfer` of profile ``chosen`` (in ``known``, picked as ``chosen_as``) answering
    for ``asked``; the widening leaves ``asked`` out of its own evidence, and pairs only
    profiles of ``asked``'s framework.

    Refused (`ModelingError`) where ``chosen`` is another framework's: the distance above
    does not weigh the framework, and no widening measured between machines covers it
    (the same 3D U-Net peaked 2.5x apart on JAX and torch on one H100, issue 29), so an
    answer across frameworks would be silently wrong rather than merely wide. Nor does another
    framework's spread widen it: with pairs in that one only, no bound (`Unbounded`, no pair).
    """
    if known[chosen].framework != asked.framework:
        raise ModelingError(
            f"profile {chosen} ({known[chosen].label}) cannot answer for {asked.label}: "
            "an answer is never taken from another framework's runs"
        )
    same = {key: profile for key, profile in known.items() if profile.framework == asked.framework}
    scores, reasons = distance(asked, same[chosen])
    nearest = Nearest(chosen, same[chosen], scores, tuple(reasons))
    runs = profiles.with_keys(runs)  # keyed and named (``point``) once, not once per pair
    measured = measured_runs(runs)
    widening = widening_for(measured, same, nearest, excluded=(asked.key,))
    if widening is None:  # pairs measured in another framework only: no bound
        every = profiles.profiles_in(runs).items()
        other = {k: p for k, p in every if p.framework != asked.framework}
        widening = Unbounded((), ()) if measured_pairs(measured, other) else None
    return Transfer(asked, nearest, widening, chosen_as)
