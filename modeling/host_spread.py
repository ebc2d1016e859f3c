"""Host-to-host spread within a machine profile: how far its bound must grow on another host.

A profile's conformal bound (`modeling.evaluation.conformal`) is calibrated on the
residuals of its own runs: run-to-run noise on the hosts that measured it. Another
host of the same kind (the development VM changes from session to session) peaks
differently again; the runs kept in ``data/hosts/`` (one ``*_runs.parquet`` per host,
data/hosts/README.md) repeat configurations a profile measured, on another host,
so that spread is measured, not assumed.

* `kept_runs` — the kept runs, read with the project's own checked reader
  (`core.datafiles.read_runs`: nothing in a file runs code), each with its host
  (the file it was kept in) and its profile key.
* `spread_of` — for one profile, every kept run of a configuration the profile
  measured too (`HostSpread`): on a host whose profile is this one, or this one
  but for the CPU generation its runs did not record
  (`core.profiles.MachineProfile.same_but_generation`).
* `HostSpread.factor` — the factor a model's bound is multiplied by so that it
  covers every such run: max(1, max over the runs of peak / bound), where the
  bound is the one the answer gives for that configuration (the model's upper bound,
  raised to the closed-form floor where below it: `replace_below_floor`). This, and
  not the ratio of a host's peak to the profile's measured peak, is what makes "the
  bound covers a peak measured on another host of this profile" true: the bound
  already holds the profile's run-to-run noise and its model's error, so a host
  that lies within it needs no widening (1.0), and one that does not is covered by
  exactly as much as it needs; a factor from the peaks alone would widen a bound
  that covers them already (the development VM's peaks lay 0.954-1.145x the knob
  profile's, all under its default model's bound: docs/host_spread.md). Never below 1:
  kept runs never narrow a bound. The ratio to the profile's own median peak
  (`HostSpread.measured_ratios`) is the spread itself, for the docs and the
  benchmark (`benchmarks/host_spread.py`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from core import datafiles, profiles, workloads
from core.database import DATA_DIR
from core.profiles import KEY_COLUMN, MachineProfile
from core.workloads.base import WorkloadConfig
from modeling.closed_form_floor import SizingModel, replace_below_floor
from modeling.transfer import configuration_peaks, measured_runs

KEPT_HOSTS_DIR = DATA_DIR / "hosts"
RUNS_SUFFIX = "_runs.parquet"
HOST_COLUMN = "host"
# What an answer says of a profile no kept run repeats.
UNMEASURED = "host-to-host spread unmeasured for this profile"


@functools.lru_cache(maxsize=4)
def _read_kept(files: tuple[tuple[Path, float, int], ...]) -> pd.DataFrame:
    """The ok runs of ``files`` (path, mtime, size: a changed file is read again)."""
    frames = []
    for path, _mtime, _size in files:
        runs = datafiles.read_runs(path).to_pandas()
        frames.append(runs.assign(**{HOST_COLUMN: path.name.removesuffix(RUNS_SUFFIX)}))
    if not frames:
        return pd.DataFrame(columns=[HOST_COLUMN, KEY_COLUMN, "point"])
    return profiles.with_keys(measured_runs(pd.concat(frames, ignore_index=True)))


def kept_runs(folder: Path | None = None) -> pd.DataFrame:
    """Every ok kept run with a kernel high-water mark in ``folder`` (None: KEPT_HOSTS_DIR):
    the runs columns, its host (the file's name less ``_runs.parquet``: one file per host),
    its profile key and its configuration (``point``, `modeling.transfer.point_texts`).
    Empty without files."""
    folder = KEPT_HOSTS_DIR if folder is None else folder
    files = sorted(folder.glob(f"*{RUNS_SUFFIX}")) if folder.is_dir() else []
    stamps = tuple((path, path.stat().st_mtime, path.stat().st_size) for path in files)
    return _read_kept(stamps).copy()


def _of_profile(kept: pd.DataFrame, key: str, profile: MachineProfile | None) -> pd.DataFrame:
    """The kept runs of hosts of profile ``key``: the same key, or ``profile`` but for a CPU
    generation its runs did not record."""
    if kept.empty:
        return kept
    alike = {
        found
        for found, host in profiles.profiles_in(kept).items()
        if found == key or (profile is not None and host.same_but_generation(profile))
    }
    return kept[kept[KEY_COLUMN].isin(alike)]


@dataclass(frozen=True)
class KeptPeak:
    """One kept run of a configuration its profile measured too."""

    host: str
    config: WorkloadConfig
    peak_bytes: float  # the kept run's kernel high-water mark
    profile_peak_bytes: float  # the median of the profile's own runs of the configuration


@dataclass(frozen=True)
class HostSpread:
    """The kept runs of one profile's configurations on other hosts, and how far they lie."""

    profile: str
    peaks: tuple[KeptPeak, ...]

    @property
    def configurations(self) -> int:
        return len({peak.config for peak in self.peaks})

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(sorted({peak.host for peak in self.peaks}))

    @property
    def measured_ratios(self) -> np.ndarray:
        """Each kept run's peak over the profile's median peak of its configuration."""
        return np.array([p.peak_bytes / p.profile_peak_bytes for p in self.peaks], dtype=float)

    def bound_ratios(self, model: SizingModel) -> np.ndarray:
        """Each kept run's peak over the bound ``model`` gives its configuration."""
        configs = [peak.config for peak in self.peaks]
        upper = np.asarray(model.upper_bytes(configs), dtype=float)
        bounds, _raised = replace_below_floor(model, configs, upper)
        return np.array([p.peak_bytes for p in self.peaks], dtype=float) / bounds

    def factor(self, model: SizingModel) -> float:
        """How much ``model``'s bound must grow to cover every kept run (>= 1)."""
        return max(1.0, float(self.bound_ratios(model).max()))

    def sentence(self, factor: float) -> str:
        """In words: "includes host-to-host spread measured on 6 configurations of 1 other
        host (x1.041)", "(x1.000: already covered)" where the bound needed no widening."""
        configurations, hosts = self.configurations, len(self.hosts)
        covered = ": already covered" if factor <= 1 else ""
        return (
            f"includes host-to-host spread measured on {configurations} "
            f"configuration{'s' * (configurations != 1)} of {hosts} other "
            f"host{'s' * (hosts != 1)} (x{factor:.3f}{covered})"
        )


def spread_of(
    runs: pd.DataFrame,
    key: str | None,
    profile: MachineProfile | None,
    workload: str,
    kept: pd.DataFrame | None = None,
) -> HostSpread | None:
    """The host-to-host spread of profile ``key`` (``profile`` its facts, None if unknown):
    the kept runs (``kept``; None: `kept_runs`) of ``workload`` configurations that its own
    ok runs in ``runs`` measured too. A kept run that is also in ``runs`` (imported) is not
    its own evidence. None where no kept run repeats one of its configurations."""
    if key is None:
        return None
    kept = kept_runs() if kept is None else kept
    kept = _of_profile(kept, key, profile)
    kept = kept[kept["workload"] == workload] if len(kept) else kept
    if kept.empty:
        return None
    own = profiles.runs_of(runs, key)
    own = own[(own["workload"] == workload) & ~own["run_id"].isin(kept["run_id"])]
    medians = configuration_peaks(own)
    shared = kept[kept["point"].isin(medians.index)]
    found = tuple(_kept_peaks(shared, medians))
    return HostSpread(key, found) if found else None


def _kept_peaks(shared: pd.DataFrame, medians: pd.Series) -> Iterable[KeptPeak]:
    for row in shared.to_dict("records"):
        yield KeptPeak(
            str(row[HOST_COLUMN]),
            workloads.config_from_row(row),
            float(row["peak_hwm_bytes"]),
            float(medians[row["point"]]),
        )
