"""Shared test helpers: a valid RunRecord with any field overridden; synthetic measured runs;
a real one-node Slurm cluster (tests/slurm_cluster.py) for the integration and browser tests.

Slurm is Debian's ``slurm-wlm`` and ``munge``, run as root: ``.ci/run`` installs
them; outside CI a missing Slurm (or a non-root user) skips the tests that use
the cluster, with the command that installs it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from application import bundles
from core import bundled_gpu, database, store, workloads
from core.analytical import refined_breakdown
from core.profiles import MachineProfile
from core.records import RunRecord, Sample
from core.workloads.base import WorkloadConfig
from modeling.stored import bundle
from profiling import exchange
from tests.slurm_cluster import SlurmCluster, slurm_available, start_cluster

# A tiny but valid workload: 16 is the smallest side a 5-level U-Net accepts.
_DEFAULTS: dict[str, Any] = {
    "sweep_id": None,
    "created_at": "2025-01-01T00:00:00+00:00",
    "status": "ok",
    "message": "",
    "workload": "unet3d",
    "depth": 16,
    "height": 16,
    "width": 16,
    "batch_size": 1,
    "base_filters": 16,
    "levels": 5,
    "in_channels": 1,
    "classes": 1,
    "precision": "float32",
    "upsampling": "transpose",
    "steps": 3,
    "seed": 0,
    "repeat": 0,
    "sample_interval_s": 0.05,
    "timeout_s": 600.0,
    "memory_limit_bytes": 8 * 2**30,
    "estimate_bytes": 900 * 2**20,
    "peak_sampled_bytes": 1000 * 2**20,
    "peak_hwm_bytes": 1024 * 2**20,
    "baseline_bytes": 400 * 2**20,
    "wall_s": 12.5,
    "step_times_s": "[1.5, 0.25, 0.25]",
    "step_hwm_bytes": "[900, 1000, 1024]",
    "hostname": "testhost",
    "cpu_vendor": "Intel",
    "cpu_model": "Test CPU",
    "cpu_isa": "avx512",
    "cpu_cores": 8,
    "usable_cores": 8,
    "intra_op_threads": 8,
    "total_ram_bytes": 32 * 2**30,
    "os": "Linux",
    "python_version": "3.11.7",
    "tensorflow_version": "2.16.1",
    "keras_version": "3.3.3",
    "numpy_version": "1.26.4",
    "onednn_enabled": True,
    "framework": "tensorflow",
    "framework_version": "2.16.1",
}


# A machine no bundled run measured, for tests that make it this one: another vendor's CPU
# generation, AMX, 16 cores. Its sizing default is the bundled reference, widened
# (`modeling.transfer`).
UNMEASURED_MACHINE = MachineProfile(
    cpu_vendor="Intel",
    cpu_model="Intel Xeon Platinum 8480+",
    cpu_isa="amx",
    cpu_cores=16,
    usable_cores=16,
    intra_op_threads=16,
    ram_gib=128,
    tensorflow_version="2.21.0",
    keras_version="3.12.0",
    onednn_enabled=True,
    cpu_family=6,
    cpu_model_number=143,
)
# The same machine with oneDNN off: the bundled reference that answers for it differs in
# oneDNN, which only the two AVX2 EPYC knob profiles measured apart (`modeling.transfer`).
ONEDNN_OFF_MACHINE = replace(UNMEASURED_MACHINE, onednn_enabled=False)


def build_record(*, timeline: int = 0, **overrides: Any) -> RunRecord:
    """A valid run with a fresh run_id; ``timeline`` adds that many samples, 0.1 s apart."""
    run_id = overrides.pop("run_id", uuid.uuid4().hex)
    samples = tuple(
        Sample(t_s=index * 0.1, rss_bytes=2**20 * (index + 1)) for index in range(timeline)
    )
    values = _DEFAULTS | {"samples": samples} | overrides
    return RunRecord(run_id=run_id, **values)


@pytest.fixture(scope="session")
def make_record() -> Callable[..., RunRecord]:
    return build_record


@pytest.fixture(autouse=True)
def _no_inherited_database(monkeypatch: pytest.MonkeyPatch) -> None:
    # A MEMPLAN_DB from the developer's shell must never point tests at real data.
    monkeypatch.delenv("MEMPLAN_DB", raising=False)
    monkeypatch.delenv("MEMPLAN_LOCK_TIMEOUT_S", raising=False)


@pytest.fixture
def database_opens(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The ``read_only`` flag of every file `core.database.connect` opens from now on."""
    opened: list[bool] = []
    real = database.open_file

    def counting(path: Path, read_only: bool) -> Any:
        opened.append(read_only)
        return real(path, read_only)

    monkeypatch.setattr(database, "open_file", counting)
    return opened


# --- synthetic measured runs for the modeling tests --------------------------------------

# A made-up but realistic law: the refined analytical model plus a constant
# runtime overhead, as measured on the reference machine (~0.2 GiB).
SYNTHETIC_FRAMEWORK_BYTES = 700 * 2**20
SYNTHETIC_RUNTIME_BYTES = 200 * 2**20


def synthetic_peak_bytes(config: WorkloadConfig) -> int:
    refined = refined_breakdown(config, SYNTHETIC_FRAMEWORK_BYTES)
    return refined.total_bytes + SYNTHETIC_RUNTIME_BYTES


def build_runs(
    sides: tuple[int, ...] = (32, 48, 64, 80, 96, 112),
    batches: tuple[int, ...] = (1, 2, 4, 8),
    repeats: int = 1,
    noise: float = 0.0,
    seed: int = 0,
    workload: str = "unet3d",
    network: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """A runs-table frame (all RUN_COLUMNS) of square/cube x batch points following the law above.

    ``noise`` is the relative standard deviation of each peak; ``repeats`` runs per point;
    ``network`` the knobs that differ from the workload's defaults (``{"base_filters": 8}``).
    """
    rng = np.random.default_rng(seed)
    module = workloads.get(workload)
    rows = []
    for side in sides:
        for batch in batches:
            config = module.Config((side,) * module.DIMS, batch, **(network or {}))
            peak = synthetic_peak_bytes(config)
            for repeat in range(repeats):
                measured = int(peak * (1 + noise * rng.standard_normal()))
                record = build_record(
                    **workloads.config_columns(config),
                    repeat=repeat,
                    peak_hwm_bytes=measured,
                    peak_sampled_bytes=measured,
                    baseline_bytes=SYNTHETIC_FRAMEWORK_BYTES,
                )
                rows.append(record.row())
    return pd.DataFrame(rows)


@pytest.fixture
def make_runs() -> Callable[..., Any]:
    return build_runs


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in {"", "0", "false", "no"}


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A running one-node Slurm cluster, with ``SLURM_CONF`` pointing at it for the session.

    One cluster for the session (starting one takes a second or two); its logs,
    ``slurm.conf`` and ``jobcomp.txt`` stay in pytest's temporary directory.
    """
    reason = slurm_available()
    if reason is not None:
        if _in_ci():
            pytest.fail(f"CI must run the Slurm tests: {reason} (.ci/run installs Slurm)")
        pytest.skip(reason)
    cluster = start_cluster(tmp_path_factory.mktemp("slurm"))
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf_path)
    try:
        yield cluster
    finally:
        if previous is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = previous
        cluster.stop()


# --- tiers: markers by fixture and directory, for -m and for pytest-xdist -------------

# A test with any of these markers is also `slow`: `-m "not slow"` is the inner loop.
SLOW_KINDS = ("tensorflow", "torch", "gpu", "e2e", "slurm", "app")
APP_TESTS = Path(__file__).resolve().parent / "app"
# What collecting the suite must never import (a worker pays seconds and ~0.5 GiB for
# TensorFlow, about 2 CPU seconds and 0.25 GiB for torch).
HEAVY_MODULES = ("tensorflow", "keras", "torch")
COLLECTION_IMPORTS: pytest.StashKey[list[str]] = pytest.StashKey()


# The modules whose tests run on the one-node Slurm cluster (the `slurm_cluster` fixture):
# under xdist one worker runs them all, on one cluster, in file order (see below).
SLURM_MODULES = re.compile(r"tests/(integration|e2e)/test_slurm_\w*\.py::")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the Slurm tests `slurm`, tests/app `app`, and every test of `SLOW_KINDS` `slow`."""
    for item in items:
        if APP_TESTS in item.path.parents:
            item.add_marker(pytest.mark.app)
        if "slurm_cluster" in getattr(item, "fixturenames", ()):
            if not SLURM_MODULES.match(item.nodeid):
                raise pytest.UsageError(
                    f"{item.nodeid} uses the Slurm cluster: its module must be "
                    "tests/integration/test_slurm_*.py or tests/e2e/test_slurm_*.py, "
                    "which one xdist worker runs together (tests/conftest.py)"
                )
            item.add_marker(pytest.mark.slurm)
        if any(item.get_closest_marker(kind) for kind in SLOW_KINDS):
            item.add_marker(pytest.mark.slow)


# The other browser tests: one worker runs them all, on one dashboard server (see below).
BROWSER_MODULES = re.compile(r"tests/e2e/test_\w*\.py::")
# Modules whose tests all read one costly module fixture (profiled TensorFlow children,
# twelve Keras models): one worker runs each, so the fixture is built once, not once per
# worker (see below).
TOGETHER_MODULES = re.compile(
    r"tests/integration/test_(onednn_state|folder_sweep|architecture_vs_keras|conv_workspace)\.py::"
)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` that also sends every test of `SLURM_MODULES` to one worker, and
    every other browser test to one worker.

    xdist's own groups (``xdist_group``) rename node ids, which pytest 9.2 no longer
    lets it do (xdist 3.8): the scheduler here groups by module name instead, as
    ``loadscope`` would, so only one Slurm cluster runs at a time. The browser tests share
    the session's dashboard server and chromium (`tests/e2e/conftest.py`): on one worker
    they start one of each and render each page cold once, not once per worker (a server's
    first Sizing page alone is 8-12 CPU s here). Each of `TOGETHER_MODULES` goes to one
    worker too: split, each worker swept its module fixture again (test_onednn_state's four
    TensorFlow children, 36 s, twice in a clean-clone run of 7e085a5; test_architecture_vs_keras'
    twelve Keras models, ~11 s, twice; test_conv_workspace's measured workspaces, ~10 s, twice
    in a run of 5fdd9b8).
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class SlurmTogether(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if SLURM_MODULES.match(nodeid):
                return "slurm"
            if BROWSER_MODULES.match(nodeid):
                return "browser"
            if TOGETHER_MODULES.match(nodeid):
                return nodeid.split("::", 1)[0]
            return super()._split_scope(nodeid)

    return SlurmTogether(config, log)


def pytest_collection_finish(session: pytest.Session) -> None:
    session.config.stash[COLLECTION_IMPORTS] = sorted(
        name for name in HEAVY_MODULES if name in sys.modules
    )


@pytest.fixture(scope="session")
def modules_imported_at_collection(pytestconfig: pytest.Config) -> list[str]:
    """Which of TensorFlow, Keras and torch were loaded once this process had collected."""
    return pytestconfig.stash.get(COLLECTION_IMPORTS, [])


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]
) -> Path:
    """The file ``name``, made by ``build(path)`` once per test session, for session fixtures.

    Under pytest-xdist every worker has its own session fixtures: a template database
    that took seconds of fitting would be built once per worker. Here the first worker
    to ask builds it, under a lock, in the folder all workers' temporary directories
    share; the others wait for it and read the same file. Callers only ever copy it.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # pytest-<n>/popen-gw0 -> pytest-<n>, this session's own
    folder = root / "built-once"
    folder.mkdir(exist_ok=True)
    path = folder / name
    with (folder / f"{name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not path.exists():
                partial = folder / f"partial-{name}"
                with contextlib.suppress(FileNotFoundError):
                    partial.unlink()
                build(partial)
                partial.rename(path)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return path


def reference_database(path: Path) -> None:
    """The bundled reference runs and the bundled evaluation, in a new database at ``path``."""
    database.ensure_database(path)
    exchange.import_runs(path, database.BUNDLED_RUNS, database.BUNDLED_SAMPLES)
    assert bundles.install_bundled_results(path), "the bundled evaluation did not install"


def gpu_database(path: Path) -> None:
    """`reference_database` plus the bundled H200 GPU runs (`core.bundled_gpu`), imported as
    ``memplan import`` imports them: the page and browser tests' ``gpu.duckdb``."""
    reference_database(path)
    for runs_file, alloc_conf in bundled_gpu.BUNDLED_GPU_RUNS:
        exchange.import_runs(path, runs_file, alloc_conf=alloc_conf)


def synthetic_database(tmp_path_factory: pytest.TempPathFactory, *evaluate: str) -> Path:
    """`build_runs(noise=0.01)`'s 24 U-Net runs (their run ids kept), stored together, and,
    with ``evaluate`` (`memplan evaluate`'s arguments, say ``--models least_squares``),
    evaluated: a database built once per session (`built_once`) that callers copy."""
    name = "synthetic" + "".join(f"_{argument.lstrip('-')}" for argument in evaluate)

    def build(path: Path) -> None:
        from memplan.cli import main  # here: the conftest never imports the CLI at collection

        database.ensure_database(path)
        rows = build_runs(noise=0.01).to_dict("records")
        store.insert_runs(path, [build_record(**row) for row in rows])
        if evaluate:
            assert main(["evaluate", "--db", str(path), *evaluate]) == 0

    return built_once(tmp_path_factory, f"{name}.duckdb", build)


def bundled_exports_database(path: Path) -> None:
    """Every bundled export's runs (`database.BUNDLED_EXPORTS`), no evaluation, in a new
    database at ``path``: answers come from the bundles, read in memory."""
    database.ensure_database(path)
    for runs_file, samples_file in database.BUNDLED_EXPORTS:
        exchange.import_runs(path, runs_file, samples_file)


def every_bundle_database(path: Path) -> None:
    """Every bundled run and every bundled evaluation in a new database at ``path``: what a
    fresh checkout's database holds (eight machine profiles, both workloads, TensorFlow and
    PyTorch)."""
    database.ensure_database(path)
    for runs_file, samples_file in database.BUNDLED_EXPORTS:
        exchange.import_runs(path, runs_file, samples_file)
    assert bundles.install_every_bundle(path) == len(bundle.BUNDLED_RESULTS_DIRS)
