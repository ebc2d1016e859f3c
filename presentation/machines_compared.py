"""The Sweeps page's machines: one row per profile, and the configurations two or more measured.

* `profiles_table` — each machine profile's facts, hosts, workloads and runs;
* `compared` and `side_by_side` — every configuration measured on two or more
  profiles, each profile's median peak and its ratio to the reference's
  (`memplan machines --compare` prints the same table);
* `ok_runs`, `per_profile` and `described` — the pieces of `compared` that
  `presentation.frameworks_compared` shares: the runs compared, each configuration's
  median peak per profile, and each configuration in words, in one order.

Nothing here needs Streamlit. Machine labels come from data files: a page shows
them in a table (text as text) or escaped (`presentation.text.plain`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from core import profiles
from core.store import POINT_COLUMNS
from core.units import GIB
from modeling.features import MEASURED_PEAK_COLUMN
from presentation import browse, workload_labels
from presentation.machines import PROFILE_COLUMN, names

OK = browse.OK
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


def per_profile(ok: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration x profile of the ok runs: median peak, runs, ``config_id``.

    Only the configurations two profiles or more measured.
    """
    point = list(POINT_COLUMNS)
    per = (
        ok.groupby([*point, PROFILE_COLUMN], dropna=False, sort=False)
        .agg(
            peak=(MEASURED_PEAK_COLUMN, "median"),
            runs=("run_id", "size"),
            image=(browse.IMAGE, "first"),
            voxels=("voxels", "first"),
        )
        .reset_index()
    )
    per["config_id"] = per.groupby(point, dropna=False, sort=False).ngroup()
    spread = per.groupby("config_id")[PROFILE_COLUMN].transform("nunique")
    return per[spread >= 2]


def _profile_labels(ok: pd.DataFrame, per: pd.DataFrame, reference: str | None) -> dict[str, str]:
    """Each compared profile's label, most runs first, ``reference`` (when compared) first."""
    keys = set(per[PROFILE_COLUMN])
    found = profiles.profiles_in(ok[ok[PROFILE_COLUMN].isin(keys)])
    order = [key for key in found if key in keys]
    reference = reference if reference in order else order[0]
    order.remove(reference)
    return names({key: found[key] for key in [reference, *order]})


def _with_configurations(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each row's ``configuration`` in words, told apart from every other."""
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
    return frame


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
    ok = ok_runs(runs)
    per = per_profile(ok) if len(ok) else ok
    if per.empty:
        return pd.DataFrame(columns=COMPARED_COLUMNS)
    labels = _profile_labels(ok, per, reference)
    order = list(labels)
    reference_peaks = per[per[PROFILE_COLUMN] == order[0]].set_index("config_id")["peak"]
    frame = per.assign(
        machine=per[PROFILE_COLUMN].map(labels),
        reference=per[PROFILE_COLUMN] == order[0],
        peak_gib=per["peak"].astype(float) / GIB,
        ratio=per["peak"].astype(float) / per["config_id"].map(reference_peaks).astype(float),
        _profile=per[PROFILE_COLUMN].map({key: index for index, key in enumerate(order)}),
    )
    return described(frame, ["_profile"])[COMPARED_COLUMNS].reset_index(drop=True)


def ok_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs a comparison reads: ok, with a measured peak, their image and profile key."""
    ok = runs[(runs["status"] == OK) & runs[MEASURED_PEAK_COLUMN].notna()] if len(runs) else runs
    return profiles.with_keys(browse.with_image(ok)) if len(ok) else ok


def described(frame: pd.DataFrame, then: list[str]) -> pd.DataFrame:
    """``frame`` (rows of `per_profile`) with each configuration's ``network``, ``side`` and
    ``configuration`` (in words), ordered by workload, image size, batch, network and steps,
    then by the columns ``then``."""
    dims = np.where(frame["depth"].isna(), 2, 3) if "depth" in frame else 3
    workload_order = {name: index for index, name in enumerate(workload_labels.names())}
    frame = frame.assign(
        network=[workload_labels.short_network(row) for row in frame.to_dict("records")],
        side=np.power(frame["voxels"].astype(float), 1 / dims).round(1),
        _workload=frame[browse.WORKLOAD].map(workload_order).fillna(len(workload_order)),
    )
    return _with_configurations(frame).sort_values(
        ["_workload", browse.WORKLOAD, "voxels", browse.IMAGE, "batch_size", "network", "steps"]
        + then,
        kind="stable",
    )


BY_MACHINE_HEADINGS = {
    "configuration": "configuration",
    "machine": "machine",
    "runs": "runs",
    "peak_gib": "peak (GiB)",
    "ratio": "x reference",
}


def by_machine(frame: pd.DataFrame) -> pd.DataFrame:
    """`compared` as the Sweeps page shows it: one row per configuration and machine, the
    machine by name, its median peak and its ratio to the reference's. (A column per
    machine, `side_by_side`, is headed by ~60 characters a machine, past 1024 px.)"""
    return frame[list(BY_MACHINE_HEADINGS)].rename(columns=BY_MACHINE_HEADINGS)


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
