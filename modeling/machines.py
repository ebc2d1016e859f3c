"""Which machine profile an answer is for: the one asked for, else this machine's, else the bundled.

Models are fitted per workload and machine profile (`core.profiles`), since the
same configuration can peak 2.7x higher on another kind of CPU. A sizing answer
therefore needs a profile, and says which: `choose_machine` resolves a
``--machine`` value (a key or a unique prefix) or picks the default — the
profile of the machine asking, when it has fitted models, else a fitted profile
with all of its facts but the CPU generation, which those runs did not record
(runs measured before schema 7), else the first bundled profile of the workload,
else the profile evaluated last.

Every choice is among the profiles of the framework asked about (``--framework``,
TensorFlow by default; `core.profile_frameworks`): a torch question is never answered
from TensorFlow's runs or models, nor the other way round, and no other framework's
profile answers for this machine. Such a transfer is refused rather than widened: the
same network peaked 2.5x apart between two frameworks on one GPU (issue 29), more than
any machine-to-machine spread the widening has measured, and pairs of one framework's
profiles say nothing of how far another framework's peak lies.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from core import frameworks, profiles
from core.database import CALIBRATION_FILE
from core.dbnames import DB_FLAG
from core.machine import this_profile
from core.profile_frameworks import check_framework, keys_of_framework, of_framework
from core.profiles import MachineProfile
from core.snapshot import Snapshot
from modeling.errors import NoModelsError
from modeling.evaluation.protocol import MIN_POINTS
from modeling.evaluation.splits import point_ids
from modeling.features import measured_frame
from modeling.stored import bundle, tables
from modeling.transfer import Transfer, transfer_for

# Why a profile was chosen, in the words an answer shows.
ASKED = "as asked"
THIS_MACHINE = "this machine"
SAME_BUT_GENERATION = (
    "this machine as far as its runs recorded: they did not record the CPU family and model"
)
BUNDLED = "the bundled reference"
LATEST = "the latest evaluation"


@dataclass(frozen=True)
class MachineChoice:
    """The profile an answer is for and why it was chosen."""

    key: str | None  # None: an evaluation from before profiles that mixed machines
    profile: MachineProfile | None  # None when no run of it is in the database
    reason: str
    note: str = ""  # e.g. why this machine's own profile was not used
    # Where another machine's profile answers for this one: which, why, how far its bounds
    # widen (`modeling.transfer`); None when the profile is the one asked for or this machine's.
    transfer: Transfer | None = None

    @property
    def label(self) -> str:
        if self.profile is not None:
            return self.profile.label
        return f"machine profile {self.key}" if self.key else "runs of several machines"

    @property
    def facts(self) -> MachineFacts:
        """The chosen profile by its facts (`MachineFacts`)."""
        return MachineFacts.of(self.key, self.profile, self.label)

    def sentence(self) -> str:
        """The answer's machine: "for Intel Xeon, AVX-512, 2 cores, TensorFlow 2.21 (profile …)"."""
        key = f"profile {self.key}; " if self.key else ""
        return f"for {self.label} ({key}{self.reason})"


@dataclass(frozen=True)
class MachineFacts:
    """The machine an answer is for, by its facts (never "this machine")."""

    profile: str | None  # the profile key
    label: str  # "AMD EPYC 7B13, AVX2, 2 cores, TensorFlow 2.21"
    cpu: str | None
    isa: str | None
    cores: int | None
    framework: str | None  # "TensorFlow 2.21.0, oneDNN on"

    @property
    def sentence(self) -> str:
        """``for AMD EPYC (AVX2, 2 cores; TensorFlow 2.21.0, oneDNN off; profile 259d139078)``."""
        if self.cpu is None:
            key = f" (profile {self.profile})" if self.profile else ""
            return f"for {self.label}{key}"
        isa = (self.isa or "ISA unknown").upper()
        cores = f"{self.cores} cores" if self.cores is not None else "cores unknown"
        parts = [f"{isa}, {cores}", self.framework or "framework unknown"]
        if self.profile:
            parts.append(f"profile {self.profile}")
        return f"for {self.cpu} ({'; '.join(parts)})"

    @classmethod
    def of(cls, key: str | None, profile: MachineProfile | None, label: str) -> MachineFacts:
        if profile is None:
            return cls(key, label, None, None, None, None)
        cpu = profile.cpu_model
        if cpu and profile.cpu_vendor and not cpu.lower().startswith(profile.cpu_vendor.lower()):
            cpu = f"{profile.cpu_vendor} {cpu}"
        framework = None
        if profile.framework != frameworks.TENSORFLOW:
            framework = frameworks.title(profile.framework, profile.framework_version)
        elif profile.tensorflow_version:
            framework = f"TensorFlow {profile.tensorflow_version}"
            if profile.onednn_enabled is not None:
                framework += f", oneDNN {'on' if profile.onednn_enabled else 'off'}"
        return cls(key, label, cpu, profile.cpu_isa, profile.cores, framework)


def run_profiles(snapshot: Snapshot) -> dict[str, MachineProfile]:
    """The profiles with ok runs of the snapshot's workload, most runs first."""
    # Once per snapshot: one answer asks for them several times (choosing the machine, its
    # transfer, the notes), and each time keyed every run again.
    found = snapshot.remembered(
        "run profiles", lambda: profiles.profiles_in(snapshot.keyed_ok_runs())
    )
    return dict(found)


def run_counts(snapshot: Snapshot) -> dict[str, int]:
    """Distinct measured configurations of the snapshot's workload per profile key (what
    evaluate counts)."""
    return dict(snapshot.remembered("run counts", lambda: _run_counts(snapshot)))


def _run_counts(snapshot: Snapshot) -> dict[str, int]:
    runs = snapshot.keyed_ok_runs()
    if runs.empty:
        return {}
    frame = measured_frame(runs)
    keys = dict(zip(runs["run_id"], runs[profiles.KEY_COLUMN], strict=True))
    frame = frame.assign(machine=[keys[run_id] for run_id in frame.index])
    # What the evaluation counts (`protocol.evaluate`'s n_points).
    return {str(key): int(point_ids(group).nunique()) for key, group in frame.groupby("machine")}


def fitted_machines(snapshot: Snapshot) -> list[str | None]:
    """Profiles with models for the snapshot's workload: stored evaluations, newest first,
    then bundles."""
    workload = snapshot.workload
    stored = tables.load_evaluations(snapshot)
    keys: list[str | None] = []
    for key in stored["machine_profile"]:
        key = None if key is None or key != key else str(key)
        if key not in keys:
            keys.append(key)
    for bundled in bundle.bundled_evaluations(workload):
        if bundled.machine not in keys and bundle.applies(snapshot, bundled.directory):
            keys.append(bundled.machine)
    return keys


def choose_machine(
    snapshot: Snapshot,
    requested: str | None = None,
    precision: str = "float32",
    framework: str = frameworks.DEFAULT_FRAMEWORK,
) -> MachineChoice:
    """The profile of ``framework`` to answer for (see the module docstring).

    ``requested`` is a key or a unique prefix of one among the profiles with runs of
    the snapshot's workload; anything else is refused with every known profile listed, and so is a
    profile of another framework (naming the flag that asks for it). ``precision`` is
    the question's: this machine's profile can depend on it (`core.machine.this_profile`).
    """
    every = run_profiles(snapshot)
    known = of_framework(every, framework)
    fitted = keys_of_framework(fitted_machines(snapshot), every, framework)
    if requested is not None:
        chosen = profiles.resolve(requested, every)
        check_framework(chosen, framework)
        return MachineChoice(chosen.key, chosen, ASKED)
    here = this_profile(precision, framework)
    return default_for(snapshot, here, known, fitted, framework)


def default_for(
    snapshot: Snapshot,
    here: MachineProfile,
    known: dict[str, MachineProfile],
    fitted: list[str | None],
    framework: str = frameworks.DEFAULT_FRAMEWORK,
) -> MachineChoice:
    """The profile that answers for the machine ``here`` when none is asked for: its own where
    it is ``fitted``, else the first that applies of those the module docstring lists, another
    machine's answering with its `Transfer`. known : the profiles of ``framework`` with runs of
    the snapshot's workload; fitted : those with models, newest first (`fitted_machines`).
    `benchmarks/transfer.py` asks it for each bundled profile, its models left out of
    ``fitted``: the answer `memplan size` gives a machine of that profile without models."""
    workload = snapshot.workload
    if here.key in fitted:
        return MachineChoice(here.key, known.get(here.key, here), THIS_MACHINE)
    note = _why_not_here(here, known, snapshot)
    alike = [key for key in fitted if key in known and here.same_but_generation(known[key])]
    if alike:
        return MachineChoice(alike[0], known[alike[0]], SAME_BUT_GENERATION, note)
    bundled = [b.machine for b in bundle.bundled_evaluations(workload) if b.machine in fitted]
    if bundled:
        key = str(bundled[0])
        moved = _transfer(snapshot, here, (key, BUNDLED), known)
        return MachineChoice(key, known.get(key), BUNDLED, note, moved)
    if fitted:
        key = fitted[0]
        moved = _transfer(snapshot, here, (key, LATEST), known) if key else None
        return MachineChoice(key, known.get(key) if key else None, LATEST, note, moved)
    if framework == frameworks.DEFAULT_FRAMEWORK:
        raise tables.no_models_error(snapshot.source, workload)
    raise _no_framework_models(snapshot, framework, here, bool(known))


def _no_framework_models(
    snapshot: Snapshot, framework: str, here: MachineProfile, has_runs: bool
) -> NoModelsError:
    """The error for a question about ``framework``, which no fitted profile of ``workload``
    trained with: what to measure and fit (never another framework's answer)."""
    title, workload, source = frameworks.TITLES[framework], snapshot.workload, snapshot.source
    fit = f"`memplan evaluate --workload {workload} --framework {framework} {DB_FLAG} {source}`"
    measure = (
        f"its runs have too few configurations or no fit yet: {fit} fits them"
        if has_runs
        else f"measure some with `memplan sweep --workload {workload} --framework {framework} "
        f"...` (or `memplan calibrate --workload {workload} --framework {framework}` for this "
        f"machine, profile {here.key}), then {fit}"
    )
    return NoModelsError(
        f"no fitted {title} models of {workload} in {source}, and an answer is never taken "
        f"from another framework's runs ({title} and TensorFlow peaks differ 2x and more): "
        f"{measure}"
    )


def _transfer(
    snapshot: Snapshot,
    here: MachineProfile,
    chosen: tuple[str, str],
    known: dict[str, MachineProfile],
) -> Transfer | None:
    """How profile ``chosen`` (its key, and why it was chosen) answers for this machine
    (``here``); None without its runs."""
    key, reason = chosen
    if key not in known:
        return None
    return transfer_for(snapshot.runs, known, here, key, reason)


def _has_calibration(workload: str) -> bool:
    """Whether `memplan calibrate` has a grid for ``workload`` (`CALIBRATION_FILE`)."""
    try:
        return workload in json.loads(CALIBRATION_FILE.read_text())
    except (OSError, ValueError):
        return False


def _measure_more(workload: str, here: MachineProfile) -> str:
    """The command that gives profile ``here`` (this machine's) enough runs of ``workload``."""
    flag = " ".join(["", *frameworks.flag(here.framework)])
    if _has_calibration(workload):
        return f"`memplan calibrate --workload {workload}{flag}` measures them and fits its models"
    return (
        f"measure at least {MIN_POINTS} configurations (`memplan sweep --workload "
        f"{workload}{flag} ...`), then `memplan evaluate --workload {workload}{flag} "
        f"--machine {here.key}` fits them"
    )


def _why_not_here(
    here: MachineProfile, known: dict[str, MachineProfile], snapshot: Snapshot
) -> str:
    workload = snapshot.workload
    machine = f"This machine ({here.label}, profile {here.key})"
    if here.key not in known:
        return f"{machine} has no {workload} runs: {_measure_more(workload, here)}."
    count = run_counts(snapshot).get(here.key, 0)
    if count < MIN_POINTS:
        return (
            f"{machine} has {count} measured configuration(s) of {workload}, fewer than the "
            f"{MIN_POINTS} a fit needs: {_measure_more(workload, here)}."
        )
    flag = " ".join(["", *frameworks.flag(here.framework)])
    return (
        f"{machine} has runs but no fitted models: "
        f"`memplan evaluate --workload {workload}{flag} --machine {here.key}` fits them."
    )
