"""Which measured profile is nearest a machine: by the facts that move the peak, in words.

`nearest_profile` ranks candidates by oneDNN state, then instruction-set tier (the
two facts that moved the bundled peaks most: oneDNN off against on on one AVX2
EPYC, a median 1.72x; AVX2 against AVX-512 EPYC, both on, 0.99-1.15x;
data/REFERENCE.md), then CPU vendor, CPU generation (family, model) and cores; a
fact is the same (0), unknown on either side (1) or different (2). Ties keep the
candidates' order (most runs first). It says in words why (`Nearest.reasons`).
`modeling.transfer` answers from such a profile and pairs profiles by it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from core.profiles import ISA_TITLES, UNKNOWN, MachineProfile

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
