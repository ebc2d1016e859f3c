"""The bundled H200 runs: a fresh default database starts with them as one GPU profile.

They come in through the same import as ``memplan import FILE.jsonl`` (`core.bundled_gpu`),
so a bad bundled line stops the seeding with its line and field, and nothing is created.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import bundled_gpu, database, profiles, store
from core.errors import DataFileError
from memplan import cli

H200_RUNS, H200_ALLOC_CONF = bundled_gpu.BUNDLED_GPU_RUNS[0]


def test_a_fresh_default_database_holds_the_h200_runs_as_one_gpu_profile(
    tmp_path: Path, capsys
) -> None:
    db = tmp_path / "memplan.duckdb"

    assert database.created_seeded(db)

    runs = store.load_runs(db, store.RunFilter(target="gpu_memory"))
    assert len(runs) == 50 and set(runs["alloc_conf"]) == {""}
    [profile] = profiles.profiles_in(runs).values()
    assert profile.gpu is not None and profile.gpu.name == "NVIDIA H200"
    assert cli.main(["list", "--target", "gpu_memory", "--db", str(db)]) == 0
    assert "NVIDIA H200" in capsys.readouterr().out


def test_the_gpu_runs_leave_the_host_ram_runs_as_they_were(tmp_path: Path) -> None:
    db = tmp_path / "memplan.duckdb"
    database.created_seeded(db)

    host = store.load_runs(db)
    assert set(host["memory_target"]) == {"host_ram"}
    assert len(store.load_runs(db, store.RunFilter(target=None))) == len(host) + 50


def test_a_bad_bundled_gpu_line_stops_the_seeding_and_nothing_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = H200_RUNS.read_text().splitlines()
    lines[4] = json.dumps({**json.loads(lines[4]), "nvml_used_peak_bytes": float("nan")})
    bad = tmp_path / H200_RUNS.name
    bad.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(bundled_gpu, "BUNDLED_GPU_RUNS", ((bad, H200_ALLOC_CONF),))
    db = tmp_path / "memplan.duckdb"

    with pytest.raises(DataFileError, match="line 5, field 'nvml_used_peak_bytes': nan is not"):
        database.created_seeded(db)

    assert not db.exists()
    assert not list(tmp_path.glob("*.tmp"))
