"""Machine profiles as the pages show them: which to offer, what one lacks, how they compare.

Models are fitted per workload and machine profile (`core.profiles`,
`modeling.machines`): the same configuration can peak 2.7x higher on another
kind of CPU. Nothing here needs Streamlit:

* `runs_on` — a runs frame's runs of one profile (`core.profiles.with_keys` keys them);
* `offered`, `default_choice`, `choice_for`, `option_label`, `answer_words` —
  the machine selector of the Models and Sizing pages, and the words every
  answer ends with ("for AMD EPYC, AVX-512 BF16, 2 cores, TensorFlow 2.21 —
  this machine");
* `shortfall` — what a profile without models lacks, and the smallest sweep
  that would give it some;
* `profiles_table` — the Sweeps page's machines, one row per profile;
* `compared` and `side_by_side` — every configuration measured on two or more
  profiles, each profile's median peak and its ratio to the reference's.

Labels and CPU names come from data files: a page shows them with
`presentation.text.plain` (`markdown` for a sentence with commands in
backticks), or in a table, which shows text as text.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core import profiles, workloads
from core.profiles import MachineProfile
from core.store import POINT_COLUMNS
from core.units import GIB
from modeling.evaluation.protocol import MIN_POINTS
from modeling.machines import ASKED, LATEST, THIS_MACHINE, MachineChoice
from presentation import browse, workload_labels
from presentation.text import code, plain

PROFILE_COLUMN = browse.MACHINE
OK = browse.OK
# The selector's option for an evaluation from before profiles, fitted on several machines'
# runs (its loaders take machine=None); a profile key is ten hex digits, so never this.
MIXED = "mixed"
# Why a default was picked when no profile of the workload has models yet.
MOST_RUNS = "the most runs"
# How an answer names why its profile was chosen (`MachineChoice.reason`), where the
# reason itself reads oddly after a dash.
REASON_WORDS = {ASKED: "as chosen"}
# Where the smallest sweep's points come from (`Sweep.source`).
FROM_CALIBRATION = "the calibration grid's missing points"
FROM_REFERENCE = "the smallest sides and batches measured on the reference machine"
FROM_DEFAULTS = "a small starting grid"
# Sides and batch sizes to start from when no other machine measured the workload: its
# ``LABELS.starting_grid`` (`core.workloads`).
STARTING_SIDES, STARTING_BATCHES = 5, (1, 2, 4)
PEAK_COLUMN = "peak_hwm_bytes"  # what the models predict: the kernel's high-water mark
COMPARED_COLUMNS = [
    "configuration",
    browse.WORKLOAD,
    browse.IMAGE,
    "side",
    "batch_size",
    "network",
    "steps",
    PROFILE_COLUMN,
    "machine",
    "reference",
    "runs",
    "peak_gib",
    "ratio",
]


def markdown(sentence: str) -> str:
    """``sentence`` for Streamlit's Markdown: text escaped, each ```command``` as a code span.

    Whatever the sentence holds (a CPU name from a data file with a backtick in
    it moves which parts are code), every part is shown literally.
    """
    parts = sentence.split("`")
    return "".join(code(part) if index % 2 else plain(part) for index, part in enumerate(parts))


# --- runs and their profiles ------------------------------------------------------------


def runs_on(runs: pd.DataFrame, key: str) -> pd.DataFrame:
    """The runs of profile ``key`` (`MIXED`: every run)."""
    if key == MIXED:
        return runs
    return profiles.runs_of(runs, key)


def names(found: Mapping[str, MachineProfile | None]) -> dict[str, str]:
    """Each profile's label; with its key where two profiles read the same.

    A label leaves out RAM, the Keras version and the threads, so two profiles
    can share one.
    """
    labels = {key: profile_label(key, profile) for key, profile in found.items()}
    repeated = Counter(labels.values())
    return {
        key: label if repeated[label] == 1 else f"{label} ({key})" for key, label in labels.items()
    }


def profile_label(key: str, profile: MachineProfile | None) -> str:
    if key == MIXED:
        return "runs of several machines"
    return profile.label if profile is not None else f"machine profile {key}"


# --- the machine selector ---------------------------------------------------------------


def option_key(choice: MachineChoice) -> str:
    """The selector's option for ``choice``: its profile key, or `MIXED`."""
    return MIXED if choice.key is None else choice.key


def default_choice(
    fitted_default: MachineChoice | None, known: Mapping[str, MachineProfile], here: MachineProfile
) -> MachineChoice:
    """The profile a page opens on.

    fitted_default : `modeling.machines.choose_machine`'s answer (this machine,
        else the bundled reference, else the latest evaluation), None when no
        profile has models of the workload;
    known : the profiles with runs of the workload, most runs first. Without
        models anywhere: this machine if it has runs, else the profile with the
        most runs, else this machine (whose panel says how to measure it).
    """
    if fitted_default is not None:
        return fitted_default
    if here.key in known or not known:
        return MachineChoice(here.key, known.get(here.key, here), THIS_MACHINE)
    key, profile = next(iter(known.items()))
    return MachineChoice(key, profile, MOST_RUNS)


def offered(
    known: Mapping[str, MachineProfile], here: MachineProfile, default: MachineChoice
) -> dict[str, MachineProfile | None]:
    """The selector's options: profiles with runs (most first), the default's, this machine's.

    This machine is always offered, runs or not: choosing it says how to give it models.
    """
    options: dict[str, MachineProfile | None] = dict(known)
    options.setdefault(option_key(default), default.profile)
    options.setdefault(here.key, here)
    return options


def option_label(key: str, options: Mapping[str, MachineProfile | None], here_key: str) -> str:
    """How the selector names an option: ``AMD EPYC, AVX2, 2 cores, TensorFlow 2.21 · 1a2b…``."""
    name = names(options)[key]
    shown = name if key == MIXED else f"{name} · {key}"
    return f"{shown} — this machine" if key == here_key else shown


def choice_for(
    key: str,
    default: MachineChoice,
    options: Mapping[str, MachineProfile | None],
    here: MachineProfile,
) -> MachineChoice:
    """The `MachineChoice` of the option ``key``: the default's own, this machine, or as chosen."""
    if key == option_key(default):
        return default
    profile = options.get(key)
    if key == here.key:
        return MachineChoice(key, profile or here, THIS_MACHINE)
    if key == MIXED:
        return MachineChoice(None, None, LATEST)
    return MachineChoice(key, profile, ASKED)


def answer_words(choice: MachineChoice) -> str:
    """``for AMD EPYC, AVX-512 BF16, 2 cores, TensorFlow 2.21 — this machine`` (not escaped)."""
    return f"for {choice.label} — {REASON_WORDS.get(choice.reason, choice.reason)}"


# --- what a profile without models lacks ------------------------------------------------


@dataclass(frozen=True)
class Sweep:
    """A grid to measure: every side x batch of the workload's default network."""

    workload: str
    image_sizes: tuple[int, ...]  # cube (or square) sides
    batch_sizes: tuple[int, ...]
    new_points: int  # points of the grid the profile has not measured yet
    source: str  # where the points come from, in words
    minutes: float | None = None  # what the grid took elsewhere, when known

    @property
    def points(self) -> int:
        return len(self.image_sizes) * len(self.batch_sizes)

    def command(self, db: object | None = None) -> str:
        """``memplan sweep --workload W --image-sizes ... --batch-sizes ...``.

        Points already measured on the machine running it are skipped (a sweep resumes).
        """
        sizes = " ".join(map(str, self.image_sizes))
        batches = " ".join(map(str, self.batch_sizes))
        where = f" --db {db}" if db is not None else ""
        return (
            f"memplan sweep --workload {self.workload} --image-sizes {sizes} "
            f"--batch-sizes {batches}{where}"
        )


@dataclass(frozen=True)
class Shortfall:
    """What profile ``key`` lacks before it has ``workload`` models, and what would fix it."""

    workload: str
    key: str
    label: str
    configurations: int  # distinct measured configurations (what a fit counts)
    needed: int  # what a fit needs (`modeling.evaluation.protocol.MIN_POINTS`)
    here: bool  # the machine running the dashboard: it can measure them
    sweep: Sweep | None  # None: enough runs, only the fit is missing

    @property
    def missing(self) -> int:
        return max(0, self.needed - self.configurations)

    def evaluate_command(self, db: object | None = None) -> str:
        where = f" --db {db}" if db is not None else ""
        return f"memplan evaluate --workload {self.workload} --machine {self.key}{where}"

    def message(self) -> str:
        """What the profile has and lacks, in words (not escaped: see `markdown`)."""
        title = workload_labels.title(self.workload)
        machine = f"{self.label} (profile {self.key})"
        if self.configurations == 0:
            has = (
                f"{machine} has no measured run of the {title}, so no models of its own: "
                f"a fit needs at least {self.needed} distinct measured configurations."
            )
        elif self.missing:
            has = (
                f"{machine} has {self.configurations} distinct measured configuration(s) of the "
                f"{title}; a fit needs at least {self.needed}, so {self.missing} more are "
                "missing."
            )
        else:
            return (
                f"{machine} has {self.configurations} distinct measured configurations of the "
                f"{title}, enough for a fit, but no fitted models yet: "
                f"`{self.evaluate_command()}` fits them."
            )
        if self.sweep is None:
            return has
        minutes = (
            f", about {self.sweep.minutes:.0f} min where it was measured"
            if self.sweep.minutes is not None
            else ""
        )
        sweep = (
            f" The smallest sweep that fixes it measures {self.sweep.new_points} new point(s) "
            f"({self.sweep.source}{minutes}), then `{self.evaluate_command()}` fits the models"
        )
        if self.sweep.source == FROM_CALIBRATION:
            sweep += (
                f" (`memplan calibrate --workload {self.workload}` does both on "
                "the machine it runs on)"
            )
        sweep += "."
        if self.here:
            return has + sweep
        return (
            has
            + sweep
            + (
                f" These runs must be measured on that machine ({self.label}), not this one: run "
                "the sweep there, then export its runs (`memplan export`) and import "
                "them here."
            )
        )


def default_network_points(runs: pd.DataFrame, workload: str) -> set[tuple[int, int]]:
    """(side, batch) of every ok cube (or square) run of the workload's default network."""
    if runs.empty:
        return set()
    ok = workload_labels.runs_of(runs, workload)
    ok = ok[(ok["status"] == OK) & ok[PEAK_COLUMN].notna()]
    found = set()
    for row in ok.to_dict("records"):
        config = workloads.config_from_row(row)
        shape = tuple(config.image_shape)
        if len(set(shape)) == 1 and config == type(config)(shape, config.batch_size):
            found.add((int(shape[0]), int(config.batch_size)))
    return found


def starting_grid(workload: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Sides and batch sizes to start from when no machine has measured ``workload``."""
    declared = workloads.labels(workload).starting_grid
    if declared is not None:
        return declared
    sides = workloads.get(workload).square_sides(1, 256)
    step = max(1, len(sides) // STARTING_SIDES)
    return tuple(sides[::step][:STARTING_SIDES]), STARTING_BATCHES


def smallest_grid(
    sides: Sequence[int], batches: Sequence[int], measured: set[tuple[int, int]], needed: int
) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """The fewest smallest sides x batches with ``needed`` points not in ``measured``.

    Fewer batch sizes first, then fewer sides: small points are quick and fit
    well. Returns (sides, batches, new points); the whole grid when even that
    has fewer.
    """
    sides, batches = sorted(set(sides)), sorted(set(batches))
    for n_batches, n_sides in itertools.product(
        range(1, len(batches) + 1), range(1, len(sides) + 1)
    ):
        grid = set(itertools.product(sides[:n_sides], batches[:n_batches]))
        if len(grid - measured) >= needed:
            return tuple(sides[:n_sides]), tuple(batches[:n_batches]), len(grid - measured)
    grid = set(itertools.product(sides, batches))
    return tuple(sides), tuple(batches), len(grid - measured)


def shortfall(
    workload: str,
    key: str,
    label: str,
    configurations: int,
    *,
    here: bool,
    measured: set[tuple[int, int]],
    calibration_missing: Iterable[tuple[str, int]] | None = None,
    calibration_minutes: float | None = None,
    reference: Iterable[tuple[int, int]] = (),
    needed: int = MIN_POINTS,
) -> Shortfall:
    """What profile ``key`` (without models) lacks, and the smallest sweep that fixes it.

    configurations : its distinct measured configurations (`modeling.machines.run_counts`);
    measured : (side, batch) of its default-network cube runs (`default_network_points`);
    calibration_missing : the calibration grid's points it lacks
        (`profiling.calibration.missing_points`), None without a calibration;
    reference : (side, batch) of the reference machine's default-network runs,
        the grid to take the smallest points of without a calibration (or when
        its missing points are too few to reach ``needed``).
    """
    to_add = needed - configurations
    if to_add <= 0:
        return Shortfall(workload, key, label, configurations, needed, here, None)
    # A calibration grid holds cubes (squares): one side each.
    missing = [
        (int(side), int(batch))
        for side, batch in (calibration_missing or [])
        if str(side).isdigit()
    ]
    if calibration_missing is not None and len(missing) >= to_add:
        sides = tuple(sorted({side for side, _ in missing}))
        batches = tuple(sorted({batch for _, batch in missing}))
        new = len(set(itertools.product(sides, batches)) - measured)
        sweep = Sweep(workload, sides, batches, new, FROM_CALIBRATION, calibration_minutes)
        return Shortfall(workload, key, label, configurations, needed, here, sweep)
    candidates = set(missing) | set(reference)
    source = FROM_REFERENCE if candidates else FROM_DEFAULTS
    if candidates:
        sides, batches = sorted({s for s, _ in candidates}), sorted({b for _, b in candidates})
    else:
        sides, batches = map(list, starting_grid(workload))
    chosen_sides, chosen_batches, new = smallest_grid(sides, batches, measured, to_add)
    sweep = Sweep(workload, chosen_sides, chosen_batches, new, source)
    return Shortfall(workload, key, label, configurations, needed, here, sweep)


# --- the Sweeps page: machines, and machines compared -----------------------------------


def _joined(values: pd.Series) -> str:
    return ", ".join(sorted(set(map(str, values.dropna()))))


def profiles_table(runs: pd.DataFrame, here_key: str | None = None) -> pd.DataFrame:
    """One row per machine profile, most runs first: its facts, hosts, workloads and runs.

    A fact its runs did not record reads "unknown" (`MachineProfile.facts`).
    """
    if runs.empty:
        return pd.DataFrame()
    runs = workload_labels.with_workload(profiles.with_keys(runs))
    rows = []
    for key, profile in profiles.profiles_in(runs).items():
        mine = runs[runs[PROFILE_COLUMN] == key]
        facts = profile.facts()
        rows.append(
            {
                "profile": facts.pop("profile"),
                "machine": facts.pop("machine"),
                **({"this machine": key == here_key} if here_key is not None else {}),
                **facts,
                "CPU stepping": _joined(mine["cpu_stepping"].astype("Int64")) or "unknown",
                "baseline (GiB)": (profiles.baseline_bytes(mine) or np.nan) / GIB,
                "hosts": _joined(mine["hostname"]),
                "workloads": _joined(mine[browse.WORKLOAD]),
                "runs": len(mine),
                "ok runs": int((mine["status"] == OK).sum()),
            }
        )
    return pd.DataFrame(rows)


def _whole_numbers(row: Mapping) -> dict:
    """A frame row with its whole floats (NULL-able integer columns) as ints."""
    return {
        name: int(value) if isinstance(value, float) and value.is_integer() else value
        for name, value in row.items()
    }


def _configuration_label(row: Mapping, several_workloads: bool) -> str:
    workload = f"{row[browse.WORKLOAD]} " if several_workloads else ""
    return (
        f"{workload}{row[browse.IMAGE]} batch {int(row['batch_size'])}, {row['network']}, "
        f"{int(row['steps'])} steps"
    )


def compared(runs: pd.DataFrame, reference: str | None = None) -> pd.DataFrame:
    """Every configuration measured ok on two or more machine profiles, one row per profile.

    A configuration is a workload, its image, batch and network, and the steps
    (`core.store.POINT_COLUMNS`). Columns: ``configuration`` (in words),
    workload, image, side (of the cube or square with as many voxels or
    pixels), batch_size, network, steps, ``machine_profile`` (key), ``machine``
    (its label), ``reference`` (whether it is the reference profile), ``runs``,
    ``peak_gib`` (the median kernel high-water mark of its runs there) and
    ``ratio`` (that peak over the reference profile's; empty where the reference
    did not measure it). Ordered by workload, image size, batch, network, steps,
    then profile (the reference first).

    reference : the profile the ratios are against; default (or when it has no
        configuration here) the profile with the most compared runs.
    """
    ok = runs[(runs["status"] == OK) & runs[PEAK_COLUMN].notna()] if len(runs) else runs
    if ok.empty:
        return pd.DataFrame(columns=COMPARED_COLUMNS)
    ok = profiles.with_keys(browse.with_image(ok))
    point = list(POINT_COLUMNS)
    per = (
        ok.groupby([*point, PROFILE_COLUMN], dropna=False, sort=False)
        .agg(
            peak=(PEAK_COLUMN, "median"),
            runs=("run_id", "size"),
            image=(browse.IMAGE, "first"),
            voxels=("voxels", "first"),
        )
        .reset_index()
    )
    per["config_id"] = per.groupby(point, dropna=False, sort=False).ngroup()
    spread = per.groupby("config_id")[PROFILE_COLUMN].transform("nunique")
    per = per[spread >= 2]
    if per.empty:
        return pd.DataFrame(columns=COMPARED_COLUMNS)
    compared_runs = ok[ok[PROFILE_COLUMN].isin(set(per[PROFILE_COLUMN]))]
    found = profiles.profiles_in(compared_runs)
    order = [key for key in found if key in set(per[PROFILE_COLUMN])]
    reference = reference if reference in order else order[0]
    order.remove(reference)
    order.insert(0, reference)
    labels = names({key: found[key] for key in order})
    reference_peaks = per[per[PROFILE_COLUMN] == reference].set_index("config_id")["peak"]
    dims = np.where(per["depth"].isna(), 2, 3) if "depth" in per else 3
    workload_order = {name: index for index, name in enumerate(workload_labels.names())}
    frame = per.assign(
        network=[workload_labels.short_network(row) for row in per.to_dict("records")],
        side=np.power(per["voxels"].astype(float), 1 / dims).round(1),
        machine=per[PROFILE_COLUMN].map(labels),
        reference=per[PROFILE_COLUMN] == reference,
        peak_gib=per["peak"].astype(float) / GIB,
        ratio=per["peak"].astype(float) / per["config_id"].map(reference_peaks).astype(float),
        _workload=per[browse.WORKLOAD].map(workload_order).fillna(len(workload_order)),
        _profile=per[PROFILE_COLUMN].map({key: index for index, key in enumerate(order)}),
    )
    several = frame[browse.WORKLOAD].nunique() > 1
    labels_of = [_configuration_label(row, several) for row in frame.to_dict("records")]
    if len(set(zip(labels_of, frame["config_id"], strict=True))) > len(set(labels_of)):
        # Networks that differ only in knobs the short name leaves out: every knob named.
        frame["network"] = [
            workload_labels.network_label(_whole_numbers(row), row[browse.WORKLOAD])
            for row in frame.to_dict("records")
        ]
        labels_of = [_configuration_label(row, several) for row in frame.to_dict("records")]
    frame["configuration"] = labels_of
    frame = frame.sort_values(
        ["_workload", browse.WORKLOAD, "voxels", browse.IMAGE, "batch_size", "network", "steps"]
        + ["_profile"],
        kind="stable",
    )
    return frame[COMPARED_COLUMNS].reset_index(drop=True)


def side_by_side(frame: pd.DataFrame) -> pd.DataFrame:
    """`compared` as a table: one row per configuration, each profile's peak and ratio beside.

    Columns: workload, image, batch, network, steps, then per profile (the
    reference first) ``<machine>: peak (GiB)`` and, for the others,
    ``<machine>: x reference``.
    """
    keys = ["configuration", browse.WORKLOAD, browse.IMAGE, "batch_size", "network", "steps"]
    if frame.empty:
        return pd.DataFrame(columns=["workload", "image", "batch", "network", "steps"])
    machines = list(dict.fromkeys(frame["machine"]))
    reference = frame.loc[frame["reference"], "machine"].iloc[0]
    peaks = frame.pivot(index=keys, columns="machine", values="peak_gib")
    ratios = frame.pivot(index=keys, columns="machine", values="ratio")
    order = list(dict.fromkeys(frame["configuration"]))
    table = pd.DataFrame(index=peaks.index)
    for machine in machines:
        table[f"{machine}: peak (GiB)"] = peaks[machine].round(3)
        if machine != reference:
            table[f"{machine}: x reference"] = ratios[machine].round(2)
    table = table.reset_index()
    table = table.set_index("configuration").loc[order].reset_index(drop=True)
    return table.rename(columns={browse.IMAGE: "image", "batch_size": "batch"})
