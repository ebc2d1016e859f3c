"""Machine profiles of one framework: what every answer and evaluation picks its profiles by.

A profile's framework is one of its facts (`core.profiles.MachineProfile.framework`), and
the same configuration peaked 2x and more apart between frameworks (15.2 GB on JAX and
37.5 GB on torch, one H100; issue 29): a question for one framework is answered only
from that framework's runs and models, never silently from another's. A profile key no
run in the database has (an evaluation from before profiles, or one whose runs are gone)
is read as TensorFlow's: every model stored before schema 8 was fitted on TensorFlow runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

import pandas as pd

from core import frameworks
from core.errors import StoreError
from core.profiles import MachineProfile

# A profile's facts that are its framework's, not its machine's, each as `machine_of` leaves
# it: the framework and its versions, TensorFlow's oneDNN setting, and the intra-op threads
# (each framework has its own default: TensorFlow one per usable core, torch one per
# physical core; `core.machine`).
FRAMEWORK_FACTS: dict[str, object] = {
    "framework": frameworks.TENSORFLOW,
    "framework_version": None,
    "tensorflow_version": None,
    "keras_version": None,
    "onednn_enabled": None,
    "intra_op_threads": None,
}


def framework_of(key: str | None, known: Mapping[str, MachineProfile]) -> str:
    """The framework of profile ``key``: its runs', else TensorFlow (see the module docstring)."""
    profile = known.get(key) if key is not None else None
    return profile.framework if profile is not None else frameworks.TENSORFLOW


def of_framework(known: Mapping[str, MachineProfile], framework: str) -> dict[str, MachineProfile]:
    """The profiles of ``known`` whose runs trained with ``framework``, in their order."""
    return {key: profile for key, profile in known.items() if profile.framework == framework}


def keys_of_framework(
    keys: Iterable[str | None], known: Mapping[str, MachineProfile], framework: str
) -> list[str | None]:
    """The ``keys`` (in order) of profiles of ``framework`` (`framework_of`)."""
    return [key for key in keys if framework_of(key, known) == framework]


def check_framework(profile: MachineProfile, framework: str) -> None:
    """`StoreError` when ``profile`` (asked for by name) is another framework's than
    ``framework``, saying which flag asks for it."""
    if profile.framework != framework:
        raise StoreError(
            f"machine profile {profile.key} ({profile.label}) is a "
            f"{frameworks.TITLES.get(profile.framework, profile.framework)} profile, and "
            f"{frameworks.TITLES[framework]} was asked for: add --framework "
            f"{profile.framework} to ask for it, or name a {frameworks.TITLES[framework]} "
            "profile (`memplan machines` lists them)"
        )


def other_frameworks_note(known: Mapping[str, MachineProfile], framework: str) -> str:
    """What an answer or evaluation of ``framework`` leaves out, in words (" PyTorch runs are
    on profile(s) ...: add --framework torch ..."); "" where ``known`` has no other framework's."""
    notes = []
    for other in frameworks.FRAMEWORKS:
        keys = list(of_framework(known, other)) if other != framework else []
        if keys:
            notes.append(
                f" {frameworks.TITLES[other]} runs are on profile(s) {', '.join(keys)}: "
                f"add --framework {other} to ask about them."
            )
    return "".join(notes)


def run_frameworks(runs: pd.DataFrame) -> pd.Series:
    """Each run's framework (a run stored before schema 8, NULL there, trained TensorFlow)."""
    if "framework" not in runs.columns:
        return pd.Series(frameworks.TENSORFLOW, index=runs.index, dtype=object)
    return runs["framework"].astype(object).where(runs["framework"].notna(), frameworks.TENSORFLOW)


def frameworks_in(runs: pd.DataFrame) -> list[str]:
    """The frameworks ``runs`` trained with, in `core.frameworks.FRAMEWORKS` order."""
    present = set(run_frameworks(runs)) if len(runs) else set()
    return [name for name in frameworks.FRAMEWORKS if name in present]


def runs_of_framework(runs: pd.DataFrame, framework: str) -> pd.DataFrame:
    """The rows of ``runs`` that trained with ``framework``."""
    return runs[run_frameworks(runs) == framework]


def machine_of(profile: MachineProfile) -> MachineProfile:
    """``profile``'s machine alone, its framework's facts cleared (`FRAMEWORK_FACTS`): a
    TensorFlow and a torch profile of one machine have the same (the CPU, its generation,
    cores and RAM), which is how `presentation.frameworks_compared` pairs them."""
    return replace(profile, **FRAMEWORK_FACTS)
