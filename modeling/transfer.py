"""Answering for a machine profile without models: the nearest measured profile, its bound widened.

A profile's models describe the machine its runs were measured on (`core.profiles`).
For a machine no run has measured, the honest answer is another profile's, chosen
by the facts that move the peak and widened by how far peaks differ *between*
profiles:

* `nearest_profile` ranks candidates by oneDNN state, then instruction-set tier
  (the two facts that moved the bundled peaks most: oneDNN off against on on one
  AVX2 EPYC, a median 1.72x; AVX2 against AVX-512 EPYC, both on, 0.99-1.15x;
  data/REFERENCE.md), then CPU vendor, CPU generation (family, model) and cores;
  a fact is the same (0), unknown on either side (1) or different (2). Ties keep
  the candidates' order (most runs first). It says in words why.
* `pair_ratios` is that spread, measured: for each configuration measured on two
  profiles, the median peak on one over the median peak on the other.
* `widening_for` turns the ratios of *other* pairs of profiles into the factor an
  answer's bound is multiplied by: the conformal upper quantile of the ratios
  (the ceil((n + 1) * 0.9)-th smallest of n), never below 1, from the pairs that
  differ in the same first facts (oneDNN, instruction set) as the answer's pair,
  or from every pair when none does (and it says so). The profile asked about is
  never part of its own evidence: `benchmarks/transfer.py` checks the factor
  leave-one-profile-out.
* `transfer_for` — the `Transfer` of a profile answering for a machine without
  models (`modeling.machines.choose_machine`'s fallback): its factor and, in
  words, which profile answered, why, how the two differ and the evidence.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

import pandas as pd

from core import profiles, store
from core.profiles import ISA_TITLES, UNKNOWN, MachineProfile
from core.store import POINT_COLUMNS
from modeling.errors import ModelingError

# The share of configurations a widened bound must cover.
TRANSFER_COVERAGE = 0.9
# Where a fact is the same, unknown on either side, or different (`nearest_profile`).
SAME, UNRECORDED, DIFFERENT = 0, 1, 2
# What the cores distance is where either side did not record them.
_UNKNOWN_CORES_DISTANCE = 10**6
# The facts whose difference a widening must have seen between two other profiles.
FIRST_FACTS = ("oneDNN", "instruction set")


def _onednn(profile: MachineProfile) -> str | None:
    return None if profile.onednn_enabled is None else ("on" if profile.onednn_enabled else "off")


def _isa(profile: MachineProfile) -> str | None:
    return ISA_TITLES.get(profile.cpu_isa) if profile.cpu_isa else None


# The categorical facts, in the order they rank candidates: the name an answer
# shows and how it reads a profile's value (None: not recorded).
_FACTS: tuple[tuple[str, Callable[[MachineProfile], str | None]], ...] = (
    ("oneDNN", _onednn),
    ("instruction set", _isa),
    ("CPU vendor", lambda profile: profile.cpu_vendor),
    ("CPU generation", lambda profile: profile.generation),
)


def _compared(name: str, asked: str | None, other: str | None) -> tuple[int, str]:
    """How far one fact is, and the words: "oneDNN on in both", "CPU vendor AMD, not Intel"."""
    if asked is None and other is None:
        return UNRECORDED, f"{name} unknown in both"
    if asked is None or other is None:
        return UNRECORDED, f"{name} {asked or UNKNOWN} asked, {other or UNKNOWN} there"
    if asked == other:
        return SAME, f"{name} {asked} in both"
    return DIFFERENT, f"{name} {other}, not {asked}"


def distance(asked: MachineProfile, candidate: MachineProfile) -> tuple[tuple[int, ...], list[str]]:
    """How far ``candidate`` is from ``asked``, fact by fact in rank order, and why in words."""
    scores, reasons = [], []
    for name, read in _FACTS:
        score, words = _compared(name, read(asked), read(candidate))
        scores.append(score)
        reasons.append(words)
    if asked.cores is None or candidate.cores is None:
        scores.append(_UNKNOWN_CORES_DISTANCE)
        reasons.append("cores unknown on one side")
    else:
        scores.append(abs(asked.cores - candidate.cores))
        same = asked.cores == candidate.cores
        reasons.append(
            f"{asked.cores} cores in both"
            if same
            else f"{candidate.cores} cores, not {asked.cores}"
        )
    return tuple(scores), reasons


@dataclass(frozen=True)
class Nearest:
    """The profile that answers for one it is not, and why it was chosen."""

    key: str
    profile: MachineProfile
    distance: tuple[int, ...]  # per fact in `_FACTS` order, then the cores apart
    reasons: tuple[str, ...]

    @property
    def first_differences(self) -> tuple[str, ...]:
        """Which of FIRST_FACTS are not the same (different or unrecorded)."""
        return tuple(name for name, score in zip(FIRST_FACTS, self.distance, strict=False) if score)

    def sentence(self) -> str:
        """In words: "the nearest measured profile b42ae893fe (AMD EPYC, ...): oneDNN on ..."."""
        return f"the nearest measured profile {self.key} ({self.profile.label}): " + "; ".join(
            self.reasons
        )


def nearest_profile(
    asked: MachineProfile, candidates: Mapping[str, MachineProfile]
) -> Nearest | None:
    """The candidate nearest ``asked`` (see the module docstring); None without candidates.

    candidates : profile key -> profile, most runs first (`core.profiles.profiles_in`);
        ``asked`` itself is never its own answer.
    """
    ranked = [
        (distance(asked, profile), index, key, profile)
        for index, (key, profile) in enumerate(candidates.items())
        if key != asked.key
    ]
    if not ranked:
        return None
    (scores, reasons), _, key, profile = min(ranked, key=lambda item: (item[0][0], item[1]))
    return Nearest(key, profile, scores, tuple(reasons))


# --- the spread between profiles ----------------------------------------------------------


def point_texts(runs: pd.DataFrame) -> list[str]:
    """One text per run naming its configuration (`core.store.point_key`): NULL knob columns
    compare equal as text, as they do not as index values."""
    return [repr(store.point_key(row)) for row in runs[list(POINT_COLUMNS)].to_dict("records")]


def measured_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The ok runs with a kernel high-water mark, each with its `point_texts` in ``point``."""
    ok = runs[(runs["status"] == "ok") & runs["peak_hwm_bytes"].notna()]
    return ok.assign(point=point_texts(ok) if len(ok) else [])


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
class Widening:
    """How much an answer from another profile is widened, and from what evidence."""

    factor: float
    ratios: tuple[float, ...]  # every pair's per-configuration ratios pooled, sorted
    pairs: tuple[tuple[str, str], ...]  # (measured profile, the profile that would answer it)
    matched: bool  # whether the pairs differ in the same first facts as the answer's pair

    def sentence(self) -> str:
        """In words: "bound widened x1.094: the 90% upper quantile of 45 configurations' ..."."""
        kind = (
            "pairs that differ as these two do"
            if self.matched
            else "every pair (none differs as these two do)"
        )
        named = ", ".join(f"{a} over {b}" for a, b in self.pairs)
        return (
            f"bound widened x{self.factor:.3f}: the {TRANSFER_COVERAGE:.0%} upper quantile of "
            f"{len(self.ratios)} configurations' peak ratios between other profiles measured on "
            f"both ({kind}: {named})"
        )


def widening_for(
    runs: pd.DataFrame,
    known: Mapping[str, MachineProfile],
    answer: Nearest,
    excluded: Collection[str] = (),
) -> Widening | None:
    """The widening of ``answer`` from pairs of profiles in ``known`` other than ``excluded``.

    Each remaining profile is paired with its own nearest among the remaining
    (`nearest_profile`), as an answer for it would be; its configurations measured on
    both give the ratios. None where no pair shares a configuration.
    """
    pool = {key: profile for key, profile in known.items() if key not in excluded}
    pairs: list[tuple[Nearest, str]] = []
    for key, profile in pool.items():
        found = nearest_profile(profile, {k: p for k, p in pool.items() if k != key})
        if found is not None:
            pairs.append((found, key))
    matched = [(n, key) for n, key in pairs if n.first_differences == answer.first_differences]
    for chosen, is_matched in ((matched, True), (pairs, False)):
        ratios = [pair_ratios(runs, key, n.key) for n, key in chosen]
        used = [(key, n.key) for (n, key), r in zip(chosen, ratios, strict=True) if not r.empty]
        if used:
            pooled = pd.concat([r for r in ratios if not r.empty]).sort_values()
            return Widening(widening_factor(pooled), tuple(pooled), tuple(used), is_matched)
    return None


@dataclass(frozen=True)
class Transfer:
    """An answer for a machine without models from another profile's: which, why, how widened."""

    asked: MachineProfile  # the machine the question is about
    nearest: Nearest  # the profile that answers, with the facts that set them apart
    widening: Widening | None  # None: no configuration measured on two other profiles
    chosen_as: str  # why that profile answers, e.g. "the bundled reference"

    @property
    def factor(self) -> float:
        return self.widening.factor if self.widening is not None else 1.0

    def sentence(self) -> str:
        """In words: who answered, that it is another machine, why, and how widened."""
        widened = (
            self.widening.sentence()
            if self.widening is not None
            else "bound not widened: no configuration was measured on two other profiles"
        )
        answering = self.nearest
        return (
            f"answered by another machine: profile {answering.key} ({answering.profile.label}), "
            f"{self.chosen_as}, for this machine ({self.asked.label}, profile {self.asked.key}), "
            f"which has no models; against it: {'; '.join(answering.reasons)}; {widened}"
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
    answer across frameworks would be silently wrong rather than merely wide.
    """
    if known[chosen].framework != asked.framework:
        raise ModelingError(
            f"profile {chosen} ({known[chosen].label}) cannot answer for {asked.label}: "
            "an answer is never taken from another framework's runs"
        )
    known = {key: profile for key, profile in known.items() if profile.framework == asked.framework}
    scores, reasons = distance(asked, known[chosen])
    nearest = Nearest(chosen, known[chosen], scores, tuple(reasons))
    widening = widening_for(runs, known, nearest, excluded=(asked.key,))
    return Transfer(asked, nearest, widening, chosen_as)
