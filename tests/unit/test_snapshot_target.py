"""A host-RAM question's snapshot holds host-RAM runs only: a GPU profile's runs (no host
figure, no CPU facts) are not a machine of the host-RAM models, machines and answers."""

from pathlib import Path

from core import database, snapshot, store, targets
from core.bundled_gpu import insert_bundled_gpu_runs


def test_a_snapshot_of_a_database_holding_gpu_runs_reads_only_host_ram_runs(
    tmp_path: Path,
) -> None:
    db = database.ensure_database(tmp_path / "gpu.duckdb")
    with database.connect(db) as con:
        imported = insert_bundled_gpu_runs(con, db)
    assert imported > 0
    unet3d_gpu_runs = store.load_runs(
        db, store.RunFilter(target=targets.GPU_MEMORY, workload="unet3d")
    )
    assert len(unet3d_gpu_runs) > 0

    read = snapshot.read(db, "unet3d")

    assert read.runs.empty
    assert read.ok_runs().empty
