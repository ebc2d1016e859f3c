"""`memplan` itself: one parser with every subcommand, its version, and ``--json``."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from core import store
from core.version import __version__
from memplan import cli, jsonout
from tests.conftest import build_record, synthetic_database

COMMANDS = [
    *("run", "sweep", "calibrate", "machines", "list", "show", "summary", "export", "import"),
    *("evaluate", "export-results", "report", "size"),
]
CHEAP = ["--models", "least_squares", "--seeds", "2", "--extrapolation-seeds", "1"]
GIB = 2**30
REPO = Path(__file__).resolve().parents[2]


def _help(capsys: pytest.CaptureFixture, *argv: str) -> str:
    with pytest.raises(SystemExit) as exited:
        cli.main([*argv, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


def _listed(out: str) -> list[str]:
    """The subcommands a help lists: each starts a line, four spaces in."""
    return re.findall(r"^    (\S+)", out, flags=re.MULTILINE)


def test_help_lists_every_subcommand_and_ends_with_the_exit_codes(capsys) -> None:
    out = _help(capsys)

    assert out.startswith("usage: memplan [-h] [--version] COMMAND ...")
    assert _listed(out) == COMMANDS
    table = out[out.index("exit codes (every subcommand):") :].splitlines()
    assert [line.split()[0] for line in table[1:5]] == ["0", "1", "2", "130"]
    assert out.count("exit codes") == 1


def test_every_subcommand_is_in_the_parser(capsys) -> None:
    assert sorted(cli.COMMANDS) == sorted(COMMANDS)
    for command in COMMANDS:
        assert _help(capsys, command).startswith(f"usage: memplan {command} ")


def test_size_help_lists_every_question(capsys) -> None:
    out = _help(capsys, "size")
    assert _listed(out) == ["image", "batch", "buy", "gpu"]


def test_a_listing_loads_neither_the_models_nor_a_framework() -> None:
    # `main` prepares only the subcommand it runs; the answers' modules load scikit-learn.
    probe = (
        "import sys; from memplan import cli; cli.build_parser('list'); "
        "heavy = ('sklearn', 'tensorflow', 'torch', 'memplan.size'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert loaded.stdout == "[]\n"


def test_version_is_core_versions(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"memplan {__version__}\n"


def test_no_subcommand_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main([])
    assert exited.value.code == 2
    assert "the following arguments are required: COMMAND" in capsys.readouterr().err


# --- jsonout -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Answer:
    side: int
    bound_bytes: float
    shape: tuple[int, int]


def test_plain_makes_json_of_dataclasses_numpy_and_non_finite_numbers() -> None:
    value = {"a": _Answer(np.int64(3), math.inf, (1, 2)), "b": float("nan"), "c": Path("x")}
    assert jsonout.plain(value) == {
        "a": {"side": 3, "bound_bytes": None, "shape": [1, 2]},
        "b": None,
        "c": "x",
    }
    assert json.loads(jsonout.dumps(value))["a"]["side"] == 3


# --- --json of the listings ------------------------------------------------------------------


@pytest.fixture
def runs_db(tmp_path: Path) -> Path:
    path = tmp_path / "runs.duckdb"
    for batch, peak in ((1, 1.0), (2, 1.5)):
        store.insert_run(
            path,
            build_record(
                depth=32, height=32, width=32, batch_size=batch, peak_hwm_bytes=int(peak * GIB)
            ),
        )
    store.insert_run(
        path, build_record(depth=48, height=48, width=48, status="oom", peak_hwm_bytes=None)
    )
    return path


def _json(capsys: pytest.CaptureFixture, *argv: str, code: int = 0):
    assert cli.main(list(argv)) == code
    return json.loads(capsys.readouterr().out)


def test_list_json_is_every_run_with_sizes_in_bytes(runs_db: Path, capsys) -> None:
    runs = _json(capsys, "list", "--json", "--db", str(runs_db))

    assert len(runs) == 3
    assert list(runs[0]) == [
        *("run_id", "sweep_id", "status", "workload", "depth", "height", "width"),
        *("batch_size", "base_filters", "precision", "peak_sampled_bytes", "peak_hwm_bytes"),
        *("wall_s", "hostname"),
    ]
    assert sorted(r["peak_hwm_bytes"] for r in runs if r["status"] == "ok") == [GIB, 1.5 * GIB]
    assert [r["peak_hwm_bytes"] for r in runs if r["status"] == "oom"] == [None]
    assert all(len(r["run_id"]) == 32 for r in runs)  # whole, not the table's 12 digits


def test_list_takes_json_or_csv_not_both(runs_db: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["list", "--json", "--csv", "--db", str(runs_db)])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_show_json_is_the_run_and_its_timeline(tmp_path: Path, capsys) -> None:
    db = tmp_path / "runs.duckdb"
    record = build_record(timeline=3)
    store.insert_run(db, record)

    shown = _json(capsys, "show", record.run_id[:8], "--json", "--timeline", "--db", str(db))

    assert shown["run_id"] == record.run_id
    assert shown["peak_hwm_bytes"] == record.peak_hwm_bytes
    assert shown["samples"] == 3
    assert shown["timeline"][1] == {"t_s": 0.1, "rss_bytes": 2 * 2**20}


def test_summary_json_is_one_cell_per_point(runs_db: Path, capsys) -> None:
    cells = _json(capsys, "summary", "--json", "--db", str(runs_db))

    by_point = {(c["image_size"], c["batch_size"]): c for c in cells}
    assert by_point[("32", 2)]["peak_bytes"] == 1.5 * GIB
    assert by_point[("32", 2)]["status"] == "ok" and by_point[("32", 2)]["ok_runs"] == 1
    assert by_point[("48", 1)]["peak_bytes"] is None
    assert by_point[("48", 1)]["status"] == "oom"
    assert {c["metric"] for c in cells} == {"hwm"}
    assert all(c["profile"] and c["machine"] and c["network"] for c in cells)


def test_machines_json_lists_each_profile(runs_db: Path, capsys) -> None:
    listed = _json(capsys, "machines", "--json", "--db", str(runs_db))

    assert set(listed) == {"this_machine", "profiles"}
    assert set(listed["this_machine"]) == {"profile", "machine"}
    (row,) = listed["profiles"]
    assert row["runs"] == 3 and row["ok_runs"] == 2 and row["configurations"] == 2
    assert row["fitted"] is False and row["workload"] == "unet3d"


def test_machines_compare_json_has_peaks_in_bytes(runs_db: Path, capsys) -> None:
    assert _json(capsys, "machines", "--compare", "--json", "--db", str(runs_db)) == []


# --- --json of the answers ------------------------------------------------------------------


@pytest.fixture(scope="module")
def evaluated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic runs, evaluated: built once for the session (test_verification's too)."""
    return synthetic_database(tmp_path_factory, *CHEAP)


@pytest.fixture
def evaluated(evaluated_template: Path, tmp_path: Path, capsys) -> Path:
    capsys.readouterr()
    return Path(shutil.copy(evaluated_template, tmp_path / "runs.duckdb"))


def test_size_image_json_is_the_answer_and_what_runs_say(evaluated: Path, capsys) -> None:
    argv = ["size", "image", "--budget", "6GiB", "--headroom", "0", "--batch-size", "2", "--json"]
    said = _json(capsys, *argv, "--db", str(evaluated))

    assert list(said) == [
        "question",
        "workload",
        "framework",
        "knobs",
        "budget_bytes",
        "headroom_pct",
        "usable_budget_bytes",
        "model",
        "machine",
        "answer",
        "verification",
    ]
    assert said["question"] == "image" and said["workload"] == "unet3d"
    assert said["framework"] == "tensorflow"
    assert said["machine"]["facts"]["framework"].startswith("TensorFlow")
    # No headroom kept: all of the 6 GiB is for training.
    assert said["headroom_pct"] == 0 and said["usable_budget_bytes"] == 6 * GIB
    assert said["answer"]["side"] == 128 and said["answer"]["next_side"] == 144
    assert said["answer"]["budget_bytes"] == 6 * GIB
    assert said["answer"]["bound_bytes"] <= 6 * GIB < said["answer"]["next_bound_bytes"]
    assert said["answer"]["basis"]["model"] == "least_squares"
    assert said["machine"]["profile"] and said["machine"]["label"].startswith("Intel Test")
    assert said["verification"]["verdict"] == "a prediction"
    assert said["verification"]["command"].startswith("memplan size image ")


def test_size_batch_and_buy_json_parse(evaluated: Path, capsys) -> None:
    batch = _json(
        capsys, "size", "batch", "--image-size", "64", "--budget", "6GiB", "--json",
        "--db", str(evaluated),
    )  # fmt: skip
    assert batch["question"] == "batch" and batch["answer"]["image_shape"] == [64, 64, 64]
    assert batch["answer"]["batch_size"] >= 1

    buy = _json(
        capsys, "size", "buy", "--image-size", "64", "--batch-size", "2", "--json",
        "--db", str(evaluated),
    )  # fmt: skip
    assert buy["question"] == "buy" and "verification" not in buy
    assert buy["answer"]["required_bytes"] >= buy["answer"]["bound_bytes"]
    assert buy["answer"]["memory_gb"] * GIB >= buy["answer"]["required_bytes"]
