"""Frameworks compared: every configuration measured in TensorFlow and in PyTorch on one machine.

Seed 004 (Torres, Barrios, Denneulin 2021) measured one CNN's training memory in both
frameworks over batch sizes; issue 29 redoes it on today's stacks. A TensorFlow
profile and a torch profile are *one machine* when they differ only in their
framework's facts (`core.profile_frameworks.machine_of`: the framework, its versions,
oneDNN and the intra-op threads); a configuration is a workload, its image, batch,
knobs, precision and steps (`core.store.POINT_COLUMNS`), as machines are compared
(`presentation.machines_compared`, whose pieces this shares).

* `compared` — one row per configuration x machine measured ok in both frameworks:
  each framework's median kernel high-water mark and the torch/TensorFlow ratio;
* `table` — those rows as the Sweeps page shows them;
* `by_batch` — AlexNet's rows per framework along the batch, for seed 004's figure;
* `summaries` — per machine, the ratios' median, lowest and highest, in words
  (`memplan machines --frameworks` prints them under the table).

Nothing here needs Streamlit. Labels come from data files: a page shows them in a
table (text as text) or escaped (`presentation.text.plain`).
"""

from __future__ import annotations

import pandas as pd

from core import frameworks, profiles
from core.profile_frameworks import machine_of
from core.profiles import MachineProfile
from core.units import GIB
from presentation import browse, machines_compared
from presentation.machines import PROFILE_COLUMN

TENSORFLOW, TORCH = frameworks.TENSORFLOW, frameworks.TORCH
# The AlexNet of seed 004's figure (`core.workloads.alexnet`).
FIGURE_WORKLOAD = "alexnet"
PAIR_COLUMNS = [
    "configuration",
    browse.WORKLOAD,
    browse.IMAGE,
    "side",
    "batch_size",
    "network",
    "steps",
    "machine",  # the machine alone, no framework (`MachineProfile.machine_label`)
    "tensorflow",  # "TensorFlow 2.21" (", oneDNN off" where it was)
    "torch",  # "PyTorch 2.13"
    "tensorflow_profile",
    "torch_profile",
    "tensorflow_runs",
    "torch_runs",
    "tensorflow_peak_gib",
    "torch_peak_gib",
    "ratio",  # torch's peak over TensorFlow's
]
# The Sweeps page's filters that name a configuration, which narrow the comparison; its
# machine, sweep and host filters offer the chosen framework's runs only.
CONFIGURATION_FILTERS = (
    browse.WORKLOAD,
    "status",
    browse.IMAGE,
    "batch_size",
    *browse.KNOB_FILTERS.values(),
)
# `table`'s headings: the peaks' unit in them, as every table on the Sweeps page.
TABLE_HEADINGS = {
    "configuration": "configuration",
    "machine": "machine",
    "tensorflow_peak_gib": "TensorFlow peak (GiB)",
    "torch_peak_gib": "PyTorch peak (GiB)",
    "ratio": "PyTorch / TensorFlow",
}


def framework_words(profile: MachineProfile) -> str:
    """A profile's framework as a comparison names it: "TensorFlow 2.21, oneDNN off"."""
    off = ", oneDNN off" if profile.onednn_enabled is False else ""
    return f"{profile.framework_title}{off}"


def _sides(per: pd.DataFrame, found: dict[str, MachineProfile], framework: str) -> pd.DataFrame:
    """``per``'s rows of ``framework``'s profiles, keyed by configuration and machine."""
    keys = [key for key, profile in found.items() if profile.framework == framework]
    side = per[per[PROFILE_COLUMN].isin(keys)]
    machines = {key: machine_of(found[key]).key for key in keys}
    return side.assign(_machine=side[PROFILE_COLUMN].map(machines))


def compared(runs: pd.DataFrame) -> pd.DataFrame:
    """Every configuration measured ok in TensorFlow and in torch on one machine (`PAIR_COLUMNS`).

    One row per configuration and pair of profiles (a machine whose TensorFlow runs had
    oneDNN on and off pairs its torch profile with each): each side's ``runs`` and
    median kernel high-water mark (GiB), and ``ratio`` = torch's over TensorFlow's.
    Profiles whose runs did not record the CPU pair with nothing. Ordered by workload,
    image size, batch, network and steps, then machine (the most runs first).
    """
    ok = machines_compared.ok_runs(runs)
    per = machines_compared.per_profile(ok) if len(ok) else ok
    if per.empty:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    found = {
        key: profile
        for key, profile in profiles.profiles_in(
            ok[ok[PROFILE_COLUMN].isin(per[PROFILE_COLUMN])]
        ).items()
        if profile.determined
    }
    on_torch = _sides(per, found, TORCH)[["config_id", "_machine", PROFILE_COLUMN, "runs", "peak"]]
    pairs = _sides(per, found, TENSORFLOW).merge(
        on_torch, on=["config_id", "_machine"], suffixes=("", "_torch")
    )
    if pairs.empty:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    order = {key: index for index, key in enumerate(found)}
    frame = pairs.assign(
        machine=[found[key].machine_label for key in pairs[PROFILE_COLUMN]],
        tensorflow=[framework_words(found[key]) for key in pairs[PROFILE_COLUMN]],
        torch=[framework_words(found[key]) for key in pairs[f"{PROFILE_COLUMN}_torch"]],
        tensorflow_profile=pairs[PROFILE_COLUMN],
        torch_profile=pairs[f"{PROFILE_COLUMN}_torch"],
        tensorflow_runs=pairs["runs"],
        torch_runs=pairs["runs_torch"],
        tensorflow_peak_gib=pairs["peak"].astype(float) / GIB,
        torch_peak_gib=pairs["peak_torch"].astype(float) / GIB,
        ratio=pairs["peak_torch"].astype(float) / pairs["peak"].astype(float),
        _pair=[order[key] for key in pairs[PROFILE_COLUMN]],
    )
    return machines_compared.described(frame, ["_pair"])[PAIR_COLUMNS].reset_index(drop=True)


def _pair_words(frame: pd.DataFrame) -> pd.Series:
    """Each row's machine and frameworks in words (`pairs_of`)."""
    return frame["machine"] + ": " + frame["tensorflow"] + " and " + frame["torch"]


def pairs_of(frame: pd.DataFrame) -> list[str]:
    """The machine pairs of `compared`'s ``frame`` in words, in order: "Intel Xeon, AVX-512,
    2 cores: TensorFlow 2.21 and PyTorch 2.13"."""
    return list(dict.fromkeys(_pair_words(frame)))


def table(frame: pd.DataFrame) -> pd.DataFrame:
    """`compared` as the Sweeps page shows it: each configuration (in words), its machine and
    frameworks where there are several pairs (`pairs_of`), both peaks (GiB) and the ratio."""
    several = len(pairs_of(frame)) > 1
    out = frame.assign(machine=_pair_words(frame))
    out = out[[name for name in TABLE_HEADINGS if name != "machine" or several]]
    return out.rename(columns=TABLE_HEADINGS).round(
        {"TensorFlow peak (GiB)": 3, "PyTorch peak (GiB)": 3, "PyTorch / TensorFlow": 2}
    )


def by_batch(frame: pd.DataFrame) -> pd.DataFrame:
    """AlexNet's rows of `compared`, long: one row per configuration, machine and framework
    (``framework`` in words, ``image``, ``side``, ``batch_size``, ``network``, ``steps``,
    ``machine``, ``runs``, ``peak_gib``): seed 004's figure, peak against batch size."""
    alexnet = frame[frame[browse.WORKLOAD] == FIGURE_WORKLOAD]
    kept = alexnet[[browse.IMAGE, "side", "batch_size", "network", "steps", "machine"]]
    sides = [
        kept.assign(
            framework=alexnet[name],
            runs=alexnet[f"{name}_runs"],
            peak_gib=alexnet[f"{name}_peak_gib"],
        )
        for name in (TENSORFLOW, TORCH)
    ]
    return pd.concat(sides, ignore_index=True)


def figure_images(points: pd.DataFrame) -> list[str]:
    """The images of `by_batch`'s ``points``, the one with the most batch sizes first (the
    larger first among equals): the figure's image by default."""
    batches = points.groupby(browse.IMAGE)["batch_size"].nunique()
    sides = points.groupby(browse.IMAGE)["side"].max()
    return sorted(batches.index, key=lambda image: (-batches[image], -sides[image], image))


def summaries(frame: pd.DataFrame) -> list[str]:
    """Per machine pair, the ratios in words: "Intel Xeon, ...: TensorFlow 2.21 and PyTorch 2.13:
    12 configuration(s), PyTorch / TensorFlow median 1.840, min 1.210, max 2.310"."""
    lines = []
    keys = ["machine", "tensorflow", "torch"]
    for (machine, tf, torch), group in frame.groupby(keys, sort=False):
        ratios = group["ratio"]
        lines.append(
            f"{machine}: {tf} and {torch}: {len(ratios)} configuration(s), PyTorch / TensorFlow "
            f"median {ratios.median():.3f}, min {ratios.min():.3f}, max {ratios.max():.3f}"
        )
    return lines
