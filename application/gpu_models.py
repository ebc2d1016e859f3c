"""GPU profiles and their fitted models, and which one answers for a GPU that was not measured.

A GPU profile (`core.profiles`) is one device, its software and its allocator setting;
`gpu_models_of` fits `modeling.gpu_memory.GpuMemoryModel` to each profile's runs and
scores it (`modeling.gpu_evaluation`: random split, beyond the measured sides), so an
answer can say its bound's coverage. `nearest` chooses the profile that answers for a
card and says, in words, how the card differs from the device measured and what that
does to the bound (the transfer rule of issue 40, point 5):

* the profile's own device (same usable bytes): no transfer;
* another card of the same architecture (compute capability), or a memory size given
  alone (its architecture unknown, taken as the profile's): the same kernels and the
  same allocator, and what tensors allocate does not depend on how much memory the card
  has, so the bound is used as it is. No two measured GPUs say how far the need moves
  between cards of one architecture: the rule is stated, not measured;
* another architecture: cuDNN chooses other kernels and workspaces there, and nothing
  measured says by how much: no bound (`Transfer.bounded` False), so no size is said to fit
  there without a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from core import database, profiles, store, targets
from core.errors import ConfigError
from core.gpu_cards import GpuCard
from core.profiles import MachineProfile
from modeling import gpu_evaluation
from modeling.gpu_evaluation import GpuScores
from modeling.gpu_memory import GpuMemoryModel

DEFAULT_ALLOC_CONF = ""
EXPANDABLE = "expandable_segments:True"
ALLOC_CONFS = (DEFAULT_ALLOC_CONF, EXPANDABLE)


@dataclass(frozen=True)
class GpuProfileModel:
    """One GPU profile's model and how it scored on runs it was not fitted to."""

    key: str
    profile: MachineProfile
    model: GpuMemoryModel
    run_count: int
    random_split: GpuScores | None  # None: too few runs to hold any out
    beyond_sides: GpuScores | None

    @property
    def label(self) -> str:
        return self.profile.label

    @property
    def alloc_conf(self) -> str:
        assert self.profile.gpu is not None
        return self.profile.gpu.alloc_conf


@dataclass(frozen=True)
class Transfer:
    """How the card asked about differs from the profile's device, and what follows."""

    bounded: bool  # False: another architecture, no bound
    words: str


def _scores(runs: pd.DataFrame) -> tuple[GpuScores | None, GpuScores | None]:
    try:
        return gpu_evaluation.random_split(runs), gpu_evaluation.beyond_sides(runs)
    except ValueError:  # no held-out run answered: too few runs per network
        return None, None


def gpu_models_of(runs: pd.DataFrame) -> dict[str, GpuProfileModel]:
    """Every GPU profile of ``runs`` (any targets; GPU-memory runs are used), fitted and scored."""
    gpu = runs[runs[targets.TARGET_COLUMN] == targets.GPU_MEMORY] if len(runs) else runs
    if gpu.empty:
        return {}
    gpu = profiles.with_keys(gpu)
    found = {}
    for key, profile in profiles.profiles_in(gpu).items():
        own = gpu[gpu[profiles.KEY_COLUMN] == key].drop(columns=[profiles.KEY_COLUMN])
        random_split, beyond_sides = _scores(own)
        found[key] = GpuProfileModel(
            key=key,
            profile=profile,
            model=GpuMemoryModel().fit(own),
            run_count=int((own["status"] == "ok").sum()),
            random_split=random_split,
            beyond_sides=beyond_sides,
        )
    return found


@lru_cache(maxsize=4)
def _loaded(path: Path, stamp: tuple[int, ...]) -> dict[str, GpuProfileModel]:
    # Made ready once per file state, not on every call: checking it opened the file (~25 ms
    # CPU on the 2-core VM), three times a GPU Sizing page's rerun. A migration changes the
    # file, so the next call's stamp differs and finds it ready.
    database.ensure_database(path)
    return gpu_models_of(store.load_runs(path, store.RunFilter(target=targets.GPU_MEMORY)))


def load_gpu_models(db_path: Path) -> dict[str, GpuProfileModel]:
    """The GPU profiles of the database at ``db_path`` and their models (made ready as a
    command's database is: created if missing, migrated if older); kept while the file
    is unchanged."""
    path = Path(db_path)
    if not path.exists():
        database.ensure_database(path)  # created first: a missing file has no state to keep
    return _loaded(path, database.file_stamp(path))


def nearest(
    models: dict[str, GpuProfileModel], card: GpuCard, alloc_conf: str, key: str | None = None
) -> tuple[GpuProfileModel, Transfer | None]:
    """The profile that answers for ``card`` with ``alloc_conf`` (``key``: that one), and the
    transfer, or None when it answers for its own device with its own allocator setting."""
    if not models:
        raise ConfigError(
            "no GPU profile in this database: import GPU runs first, e.g. the bundled H200 "
            "runs: memplan import data/gpu/h200-torch-2026-11-28.jsonl --alloc-conf ''"
        )
    if key is not None:
        if key not in models:
            raise ConfigError(f"no GPU profile {key!r}; the GPU profiles are {', '.join(models)}")
        chosen = models[key]
    else:
        chosen = max(models.values(), key=lambda m: _closeness(m, card, alloc_conf))
    return chosen, transfer_of(chosen, card, alloc_conf)


def _closeness(model: GpuProfileModel, card: GpuCard, alloc_conf: str) -> tuple:
    device = model.profile.gpu
    assert device is not None
    return (
        device.total_bytes == card.usable_bytes,
        device.compute_capability == card.compute_capability,
        model.alloc_conf == alloc_conf,
        model.run_count,
    )


def transfer_of(model: GpuProfileModel, card: GpuCard, alloc_conf: str) -> Transfer | None:
    """What answering for ``card`` (with ``alloc_conf``) from ``model``'s device means, in words."""
    device = model.profile.gpu
    assert device is not None
    parts, bounded = [], True
    if device.total_bytes != card.usable_bytes:
        measured = f"{device.name} (compute {device.compute_capability})"
        if card.compute_capability is None:
            parts.append(
                f"a memory size given alone is answered by the {measured} profile, its "
                "architecture taken as the same: what the tensors allocate does not depend on "
                "how much memory a card has, so the bound is used as it is; on another "
                "architecture, verify first"
            )
        elif card.compute_capability == device.compute_capability:
            parts.append(
                f"the {card.cards} was not measured; the {measured} profile answers: the same "
                f"architecture (compute {card.compute_capability}), so the same kernels and "
                "allocator, and what the tensors allocate does not depend on how much memory "
                "a card has: the bound is used as it is (a rule, not measured: no two "
                "measured GPUs of one architecture compare it)"
            )
        else:
            bounded = False
            parts.append(
                f"the {card.cards} (compute {card.compute_capability}) is another architecture "
                f"than the measured {measured}: cuDNN chooses other kernels and workspaces "
                "there, and no run says by how much, so there is no bound — the figures are "
                "the measured GPU's, and nothing is said to fit there without a run"
            )
    if alloc_conf != model.alloc_conf:
        parts.append(
            f"PYTORCH_CUDA_ALLOC_CONF={alloc_conf or '(default)'} was not measured (the runs "
            f"used {model.alloc_conf or 'the default'}): expandable segments let the allocator "
            "give back more of its cached blocks, by an amount no run measured, so the "
            "default allocator's bound is kept — conservative — and a configuration between "
            "the floor and the bound needs a run to know"
        )
    if not parts:
        return None
    return Transfer(bounded=bounded, words="; ".join(parts))
