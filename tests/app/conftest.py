"""Fixtures for the dashboard tests: a real DuckDB file with the bundled runs and models.

Each database comes two ways: a private copy per test (``reference_db``, ...), for a test
that writes to it or changes what the page's caches depend on (this machine's profile, say);
and a copy per test process shared by the tests that only read it (``shared_reference_db``,
...), whose pages then find their cached runs and models warm (a cold Sizing page costs
about 4 CPU s here, a warm one 0.5). A test that writes to a shared copy fails.

The AlexNet databases add synthetic AlexNet runs (`tests.app.helpers.add_alexnet_runs`)
to the bundled U-Net runs, with or without an AlexNet evaluation of their own; the
two-machine one measures them on a second machine profile too (`OTHER_MACHINE`, its
peaks `OTHER_MACHINE_SCALE` times higher), each profile with its own evaluation; the
frameworks one in PyTorch on the same machine (`ALEXNET_TORCH_SCALE` times higher).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from application import bundles
from core import database
from core.database import file_stamp
from core.frameworks import TENSORFLOW
from core.profiles import MachineProfile
from profiling import exchange
from tests.app.helpers import (
    OTHER_MACHINE,
    OTHER_MACHINE_SCALE,
    add_alexnet_runs,
    evaluate_alexnet,
    profile_key,
    this_machine_is,
)
from tests.app.once import repeated_work_done_once
from tests.app.script_wait import script_runs_joined
from tests.app.torch_runs import ALEXNET_TORCH_SCALE, TORCH_COLUMNS, add_torch_runs, evaluate_torch
from tests.conftest import (
    UNMEASURED_MACHINE,
    built_once,
    every_bundle_database,
    gpu_database,
    reference_database,
)


@pytest.fixture(scope="session", autouse=True)
def _repeated_work_done_once() -> Iterator[None]:
    """Each distinct chart is checked against the Vega-Lite schema once per test process,
    and the installed components are scanned once (`tests.app.once`): every page run
    would do both again with the same answer. Each run is awaited without a busy poll
    (`tests.app.script_wait`)."""
    with repeated_work_done_once(), script_runs_joined():
        yield


@pytest.fixture(scope="session")
def reference_db_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding the bundled reference runs and the bundled evaluation (built once).

    Built once for the session, whatever the number of xdist workers (`built_once`)."""
    return built_once(tmp_path_factory, "reference.duckdb", reference_database)


@pytest.fixture
def reference_db(
    reference_db_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A private copy of the reference database, made the dashboard's via ``MEMPLAN_DB``."""
    path = tmp_path / "memplan.duckdb"
    path.write_bytes(reference_db_template.read_bytes())
    monkeypatch.setenv(database.DB_ENV_VAR, str(path))
    return path


def _private_copy(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "memplan.duckdb"
    path.write_bytes(template.read_bytes())
    monkeypatch.setenv(database.DB_ENV_VAR, str(path))
    return path


@pytest.fixture(scope="session")
def alexnet_runs_template(
    reference_db_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The reference database plus synthetic AlexNet runs, without an AlexNet evaluation."""

    def build(path: Path) -> None:
        path.write_bytes(reference_db_template.read_bytes())
        add_alexnet_runs(path)

    return built_once(tmp_path_factory, "alexnet_runs.duckdb", build)


@pytest.fixture(scope="session")
def alexnet_template(alexnet_runs_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The AlexNet runs' database with an AlexNet evaluation of its own (quick settings)."""

    def build(path: Path) -> None:
        path.write_bytes(alexnet_runs_template.read_bytes())
        evaluate_alexnet(path)

    return built_once(tmp_path_factory, "alexnet.duckdb", build)


@pytest.fixture
def alexnet_runs_db(
    alexnet_runs_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A private copy of the AlexNet runs (no AlexNet models), made the dashboard's."""
    return _private_copy(alexnet_runs_template, tmp_path, monkeypatch)


@pytest.fixture
def alexnet_db(alexnet_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the AlexNet runs and their evaluation, made the dashboard's."""
    return _private_copy(alexnet_template, tmp_path, monkeypatch)


@pytest.fixture(scope="session")
def two_machines_template(alexnet_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The AlexNet runs, the same again on `OTHER_MACHINE`, and an evaluation of each (the
    first machine's is `alexnet_template`'s: only the second is fitted here, without the
    symbolic regression, ~7 of its ~9 CPU s: the Sizing page's test asks both machines for
    the least squares model, the Sweeps page's reads the runs only)."""

    def build(path: Path) -> None:
        path.write_bytes(alexnet_template.read_bytes())
        add_alexnet_runs(path, scale=OTHER_MACHINE_SCALE, **OTHER_MACHINE)
        machine = profile_key(**OTHER_MACHINE)
        evaluate_alexnet(path, machine=machine, models=("paper", "refined", "least_squares"))

    return built_once(tmp_path_factory, "two_machines.duckdb", build)


@pytest.fixture
def two_machines_db(
    two_machines_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A private copy of the two machines' AlexNet runs and models, made the dashboard's."""
    return _private_copy(two_machines_template, tmp_path, monkeypatch)


@pytest.fixture(scope="session")
def frameworks_template(
    alexnet_runs_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The AlexNet runs, and the same configurations in PyTorch on the same machine
    (`ALEXNET_TORCH_SCALE` times their peaks): frameworks to compare; built once."""

    def build(path: Path) -> None:
        path.write_bytes(alexnet_runs_template.read_bytes())
        add_alexnet_runs(path, scale=ALEXNET_TORCH_SCALE, **TORCH_COLUMNS)

    return built_once(tmp_path_factory, "frameworks.duckdb", build)


@pytest.fixture(scope="session")
def every_bundle_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every bundled run and every bundled evaluation: what a fresh checkout's database holds
    (the Intel reference, the AMD profiles, the knob profiles, the AlexNet, both workloads in
    TensorFlow and PyTorch on the family 26 EPYC); built once."""

    return built_once(tmp_path_factory, "every_bundle.duckdb", every_bundle_database)


@pytest.fixture
def every_bundle_db(
    every_bundle_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A private copy of every bundled run and evaluation, made the dashboard's."""
    return _private_copy(every_bundle_template, tmp_path, monkeypatch)


def tensorflow_exports() -> list[tuple[Path, Path]]:
    """The bundled exports of TensorFlow runs (one from before schema 8 has no framework
    column: its runs were TensorFlow's)."""
    found = []
    for runs_file, samples_file in database.BUNDLED_EXPORTS:
        if "framework" in pq.read_schema(runs_file).names:
            frameworks = set(pq.read_table(runs_file, columns=["framework"])[0].to_pylist())
            if frameworks != {TENSORFLOW}:
                continue
        found.append((runs_file, samples_file))
    return found


@pytest.fixture(scope="session")
def torch_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every bundled TensorFlow run and evaluation, plus synthetic PyTorch U-Net runs and
    their own evaluation (`tests.app.torch_runs`), in place of the bundled PyTorch ones: a
    database with two frameworks whose PyTorch peaks the tests know; built once."""

    def build(path: Path) -> None:
        database.ensure_database(path)
        for runs_file, samples_file in tensorflow_exports():
            exchange.import_runs(path, runs_file, samples_file)
        bundles.install_every_bundle(path)  # the PyTorch bundles find no runs of theirs
        add_torch_runs(path)
        evaluate_torch(path)

    return built_once(tmp_path_factory, "torch.duckdb", build)


@pytest.fixture
def torch_db(torch_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the two frameworks' database, made the dashboard's."""
    return _private_copy(torch_template, tmp_path, monkeypatch)


# --- shared copies, for the tests that only read ---------------------------------------


@pytest.fixture(scope="session")
def _shared_copies() -> dict[Path, Path]:
    """Template -> this test process's shared copy of it (made on first use)."""
    return {}


def shared_copy(
    template: Path,
    copies: dict[Path, Path],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Path]:
    """This process's copy of ``template``, made the dashboard's; fails a test that wrote to it
    (the next test would read what it left, and the pages' caches would be stale)."""
    path = copies.get(template)
    if path is None:
        path = copies[template] = tmp_path_factory.mktemp("shared") / "memplan.duckdb"
        path.write_bytes(template.read_bytes())
    monkeypatch.setenv(database.DB_ENV_VAR, str(path))
    before = file_stamp(path)
    yield path
    assert file_stamp(path) == before, (
        "this test wrote to a shared database: ask for the private copy (reference_db, ...)"
    )


def _shared_fixture(
    template: str,
    what: str,
    *,
    copies: str = "_shared_copies",
    as_machine: MachineProfile | None = None,
) -> Callable[..., Iterator[Path]]:
    """A fixture yielding this process's copy of the template fixture ``template``, kept in the
    session's ``copies`` dict; with ``as_machine``, read with this machine made that one."""

    @pytest.fixture
    def shared(
        request: pytest.FixtureRequest,
        tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch,
    ) -> Iterator[Path]:
        if as_machine is not None:
            this_machine_is(monkeypatch, as_machine)
        built = request.getfixturevalue(template)
        kept = request.getfixturevalue(copies)
        yield from shared_copy(built, kept, tmp_path_factory, monkeypatch)

    shared.__doc__ = f"{what}, shared with the other tests that only read it."
    return shared


shared_reference_db = _shared_fixture("reference_db_template", "The reference database")
shared_alexnet_runs_db = _shared_fixture(
    "alexnet_runs_template", "The AlexNet runs (no AlexNet models)"
)
shared_alexnet_db = _shared_fixture("alexnet_template", "The AlexNet runs and their evaluation")
shared_two_machines_db = _shared_fixture(
    "two_machines_template", "The two machines' AlexNet runs and models"
)
shared_frameworks_db = _shared_fixture(
    "frameworks_template", "The AlexNet runs in TensorFlow and in PyTorch on one machine"
)
shared_every_bundle_db = _shared_fixture(
    "every_bundle_template", "Every bundled run and evaluation"
)


@pytest.fixture(scope="session")
def _unmeasured_copies() -> dict[Path, Path]:
    """Template -> this process's copy read as `UNMEASURED_MACHINE` (made on first use): apart
    from `_shared_copies`, as the pages' caches hold which machine this one is."""
    return {}


def _unmeasured_fixture(template: str, what: str) -> Callable[..., Iterator[Path]]:
    """A fixture making this machine `UNMEASURED_MACHINE` (`this_machine_is`) and yielding
    this process's copy of the template fixture ``template`` read as that machine."""
    unmeasured = _shared_fixture(
        template, what, copies="_unmeasured_copies", as_machine=UNMEASURED_MACHINE
    )
    unmeasured.__doc__ = (
        f"{what}, on a machine no bundled run measured; shared with the other tests that "
        "only read it as that machine, so each after the first finds the pages' caches warm."
    )
    return unmeasured


unmeasured_reference_db = _unmeasured_fixture("reference_db_template", "The reference database")
unmeasured_every_bundle_db = _unmeasured_fixture(
    "every_bundle_template", "Every bundled run and evaluation"
)
unmeasured_torch_db = _unmeasured_fixture(
    "torch_template", "The bundled TensorFlow runs and the synthetic PyTorch ones"
)


@pytest.fixture(scope="session")
def gpu_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference database plus the bundled H200 GPU runs (`tests.conftest.gpu_database`),
    the same file as the browser tests' GPU server reads."""
    return built_once(tmp_path_factory, "gpu.duckdb", gpu_database)


shared_gpu_db = _shared_fixture("gpu_template", "The reference runs and the bundled GPU runs")
