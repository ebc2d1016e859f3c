"""Settings that do not train on a machine profile, and why, from the runs' stored errors.

A precision or network knob value whose every run on a profile ended in
``error`` (mixed_float16 on a CPU: TensorFlow registers no float16 MaxPool3D
kernel there) cannot be trained there at any size. A model asked about it still
predicts a peak, from the other settings' runs, but no such peak exists: the
answer is the reason instead (`Untrainable.reason`), the runs' error
summarised (`error_summary`).

One check for every answer: `modeling.decision.evidence_for` carries it into
the decision (the Sizing page's verdict and the report), the Sizing page offers
such a value marked as failing there (`failing_values`), and the CLI's ``size``
and ``report`` refuse the question up front (`refuse`).

Runs that tell nothing about the setting are not counted: ``skipped`` (never
started), ``interrupted`` (stopped by the user) and ``killed`` (a signal from
outside). A run that ended ``ok``, ``oom`` or ``timeout`` trained, so a value
with one of those trains.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import pandas as pd

from core import workloads
from core.snapshot import Snapshot
from modeling.errors import ModelingError

FAILED_STATUS = "error"
UNTELLING_STATUSES = ("skipped", "interrupted", "killed")
# A summary longer than this is cut: it is a reason in a sentence, not the traceback.
SUMMARY_CHARS = 160
_EXCEPTION = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?([A-Z]\w*(?:Error|Exception)):\s*(.+)$")
_NODE = re.compile(r"\s*used by \{\{node [^}]*\}\}")
_ATTRS = " with these attrs:"
_DTYPE = re.compile(r"\bT=(DT_\w+)")
_CPU_KERNEL = re.compile(r"device='CPU'; T in \[([^\]]*)\]")


class UntrainableError(ModelingError):
    """The question's setting never trained on the machine profile: no answer, the reason."""


@dataclass(frozen=True)
class Untrainable:
    """A knob value whose every telling run on a profile ended in error."""

    knob: str
    value: Any
    runs: int  # how many runs of it ended in error
    error: str  # their error, summarised (`error_summary`); the most frequent one

    @property
    def setting(self) -> str:
        """``precision mixed_float16``, ``base filters 64``."""
        return f"{self.knob.replace('_', ' ')} {self.value}"

    @property
    def reason(self) -> str:
        """Why there is no answer, in one sentence (not escaped)."""
        every = "its one run" if self.runs == 1 else f"all {self.runs} of its runs"
        return (
            f"{self.setting.capitalize()} does not train on this machine profile: {every} "
            f"there ended in error ({self.error}). No memory is predicted for it; choose a "
            "setting that trains here, or measure it on a machine where it does."
        )


def error_summary(message: str) -> str:
    """A run's stored error in a few words: the exception's last line, without the graph node
    and attribute list TensorFlow adds, with the dtype and the CPU kernels it has.

    ``InvalidArgumentError: No OpKernel was registered to support Op 'MaxPool3D' for
    DT_HALF (CPU kernels: DT_BFLOAT16, DT_FLOAT)``.
    """
    lines = [line for line in str(message or "").splitlines() if line.strip()]
    found = [match for line in lines if (match := _EXCEPTION.match(line))]
    if not found:
        text = lines[0].strip() if lines else "no message stored"
        return _cut(text.removesuffix(":"))
    name, detail = found[-1].groups()
    detail = _NODE.sub("", detail)
    attrs = detail.find(_ATTRS)
    if attrs >= 0:
        dtype = _DTYPE.search(detail[attrs:])
        detail = detail[:attrs] + (f" for {dtype.group(1)}" if dtype else "")
    kernels = [
        kernel for match in _CPU_KERNEL.finditer(message) for kernel in match.group(1).split(", ")
    ]
    if kernels:
        detail += f" (CPU kernels: {', '.join(dict.fromkeys(kernels))})"
    return _cut(f"{name}: {detail.strip()}")


def _cut(text: str) -> str:
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1].rstrip() + "…"


def _telling(runs: pd.DataFrame, workload: str) -> pd.DataFrame:
    if runs.empty or "status" not in runs or "workload" not in runs:
        return runs.iloc[0:0]
    return runs[(runs["workload"] == workload) & ~runs["status"].isin(UNTELLING_STATUSES)]


def _of_value(runs: pd.DataFrame, knob: str, value: Any) -> Untrainable | None:
    """The value's failure, if every one of its telling ``runs`` ended in error."""
    mine = runs[runs[knob] == value]
    if mine.empty or not (mine["status"] == FAILED_STATUS).all():
        return None
    summaries = mine["message"].map(error_summary) if "message" in mine else pd.Series([""])
    return Untrainable(knob, value, len(mine), str(summaries.value_counts().index[0]))


def failing_values(runs: pd.DataFrame, workload: str) -> dict[str, dict[Any, Untrainable]]:
    """Each network knob of ``workload`` -> its values that never trained on ``runs``' profile.

    runs : one machine profile's runs, any status (`core.store.load_runs` of a `RunFilter`
    naming the machine).
    """
    telling = _telling(runs, workload)
    found: dict[str, dict[Any, Untrainable]] = {}
    for knob in workloads.get(workload).NETWORK_KNOBS:
        if knob not in telling:
            continue
        for value in telling[knob].dropna().unique():
            failure = _of_value(telling, knob, value)
            if failure:
                plain = value.item() if hasattr(value, "item") else value
                found.setdefault(knob, {})[plain] = failure
    return found


def untrainable(runs: pd.DataFrame, workload: str, knobs: Mapping[str, Any]) -> Untrainable | None:
    """The first of ``knobs`` (the question's; the network's defaults for the others) whose
    every telling run in ``runs`` (one profile's) ended in error; None when all may train."""
    telling = _telling(runs, workload)
    for knob, value in _every_knob(workload, knobs).items():
        if knob in telling:
            failure = _of_value(telling, knob, value)
            if failure:
                return failure
    return None


def _every_knob(workload: str, knobs: Mapping[str, Any]) -> dict[str, Any]:
    """``knobs``, and the network's default for every knob they leave out."""
    module = workloads.get(workload)
    defaults = {
        field.name: field.default
        for field in fields(module.Config)
        if field.name in module.NETWORK_KNOBS
    }
    return defaults | dict(knobs)


def refuse(snapshot: Snapshot, machine: str | None, knobs: Mapping[str, Any]) -> None:
    """Raise `UntrainableError` with the reason when the question's setting never trained on
    profile ``machine`` (its runs in ``snapshot``); the CLI's ``size`` and ``report`` call it."""
    if machine is None:
        return
    failure = untrainable(snapshot.runs_of(machine), snapshot.workload, knobs)
    if failure:
        raise UntrainableError(failure.reason)
