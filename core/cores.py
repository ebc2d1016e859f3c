"""What more cores do to a peak: the measurements memplan ships in ``data/cores/``.

Every bundled profile was measured on 2 cores; a server bought for training has more.
``data/cores/`` holds one machine per framework whose same network was trained pinned to
1-16 cores (`taskset`), one fresh process per row (data/cores/README.md, provenance in
data/REFERENCE.md): `evidence_for` reads the file of a framework, `CoreEvidence.change_from`
says how far the peak moved from a core count to every larger one measured. Evidence for
answering a many-core server from 2-core profiles, not a model of it
(docs/predictions.md says how the answers use it).
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

from core import frameworks
from core.errors import DataFileError

CORES_DIR = Path(__file__).resolve().parents[1] / "data" / "cores"
# Each framework's file, and the machine it measured, in words.
FILES = {
    frameworks.TENSORFLOW: (
        "xeon16-cores-2026-11-23.csv",
        "a 16-core Intel Xeon (AVX-512, AMX), TensorFlow 2.21, oneDNN on",
    ),
    frameworks.TORCH: ("torch-cpu16-cores-2026-11-28.csv", "a 16-core x86-64 CPU, PyTorch 2.11"),
}


@dataclass(frozen=True)
class Change:
    """How far a configuration's peak moved from ``base_cores`` to more cores."""

    configuration: str  # "96x96x96 batch 4"
    base_cores: int
    cores: int  # the larger count
    ratio: float  # peak at ``cores`` over peak at ``base_cores``


@dataclass(frozen=True)
class CoreEvidence:
    """One machine's peaks of one network at several core counts."""

    path: str  # "data/cores/xeon16-cores-2026-11-23.csv"
    machine: str  # the machine, in words
    peaks: tuple[tuple[str, int, int], ...]  # (configuration, cores, peak bytes)

    @property
    def core_counts(self) -> tuple[int, ...]:
        return tuple(sorted({cores for _, cores, _ in self.peaks}))

    def changes_from(self, cores: int) -> list[Change]:
        """Every measured configuration's change from ``cores`` (its run at that count) to
        each larger count; empty where none was measured at ``cores``."""
        at = {config: peak for config, count, peak in self.peaks if count == cores}
        return [
            Change(config, cores, count, peak / at[config])
            for config, count, peak in self.peaks
            if config in at and count > cores
        ]

    def base_for(self, cores: int | None) -> int | None:
        """The measured core count an answer from ``cores`` compares with: the largest one
        measured at or below it; None where it is unknown or below every one measured."""
        below = [count for count in self.core_counts if cores is not None and count <= cores]
        return max(below) if below else None

    def widening_from(self, cores: int | None) -> float:
        """The most the peak rose from ``cores`` to more cores (>= 1; 1 where nothing is known
        of more cores than ``cores``, or the peak only fell)."""
        base = self.base_for(cores)
        changes = self.changes_from(base) if base is not None else []
        return max([1.0, *(change.ratio for change in changes)])

    def sentence(self, cores: int | None) -> str:
        """What is known of more cores than ``cores``, in words, naming the file."""
        base = self.base_for(cores)
        changes = self.changes_from(base) if base is not None else []
        if not changes:
            return (
                f"nothing is measured of more cores than {cores or 'its unknown count'} "
                f"({self.path} measured "
                f"{self.machine} at {', '.join(map(str, self.core_counts))} cores)"
            )
        most = max(self.core_counts)
        top = sorted({_pct(c.ratio): c.ratio for c in changes if c.cores == most}.items())
        span = "…".join(dict.fromkeys([min(top, key=_second)[0], max(top, key=_second)[0]]))
        worst = max(changes, key=lambda change: change.ratio)
        said = f"on one machine ({self.machine}), {base} to {most} cores changed the peak by {span}"
        if worst.ratio > max(top, key=_second)[1]:
            said += f" (at most {_pct(worst.ratio)}, {worst.configuration} at {worst.cores} cores)"
        return f"{said} ({self.path})"


def _second(pair: tuple[str, float]) -> float:
    return pair[1]


def _pct(ratio: float) -> str:
    """``+4.7%``, ``−1.4%``."""
    change = (ratio - 1) * 100
    return f"{'+' if change >= 0 else '−'}{abs(change):.1f}%"


@functools.cache
def evidence_for(framework: str, folder: Path = CORES_DIR) -> CoreEvidence | None:
    """The core-count evidence of ``framework`` (None where memplan ships none); a file
    that cannot be read raises `DataFileError` naming it."""
    if framework not in FILES:
        return None
    name, machine = FILES[framework]
    path = folder / name
    try:
        with path.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        peaks = tuple(
            (f"{row['shape']} batch {row['batch']}", int(row["cores"]), int(row["peak_bytes"]))
            for row in rows
        )
    except (OSError, KeyError, ValueError) as error:
        raise DataFileError(f"cannot read the core-count evidence {path}: {error}") from error
    return CoreEvidence(f"data/cores/{name}", machine, peaks)
