"""``memplan report``: writes one self-contained HTML file, and nothing else.

The report reads the database (and the bundled models of its runs, in memory)
and writes only the file named by ``--output``: never over an existing one
without ``--force``, never into a folder that does not exist, never into the
database (as ``size``, `tests/integration/test_size_writes_nothing.py`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from application import readonly
from core import database
from memplan import cli
from profiling import exchange
from tests.conftest import built_once, bundled_exports_database

DELL_REPORT = [
    "report",
    "--image-size",
    "240x240x144",
    "--batch-size",
    "16",
    "--budget",
    "256GiB",
    "--machine",
    "9b59349f74",
    "--model",
    "symbolic",
]
HEADLINE = "Predicted to fit, 12x beyond the largest measured run: verify first"


@pytest.fixture(scope="module")
def runs_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every bundled run, no evaluation: the report answers from the bundles read in memory.
    Imported once for the session (`built_once`); each test copies it."""
    return built_once(tmp_path_factory, "bundled_exports.duckdb", bundled_exports_database)


@pytest.fixture
def db(runs_template: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "db"
    folder.mkdir()
    return Path(shutil.copy(runs_template, folder / "memplan.duckdb"))


def _state(db: Path) -> tuple[bytes, int, list[str]]:
    """The file's bytes and mtime, and every name in its folder."""
    return db.read_bytes(), db.stat().st_mtime_ns, sorted(p.name for p in db.parent.iterdir())


@pytest.mark.parametrize("read_only", [True, False])
def test_report_writes_the_html_and_nothing_to_the_database(
    db: Path, tmp_path: Path, read_only: bool, monkeypatch, capsys
) -> None:
    if read_only:
        monkeypatch.setenv(readonly.READ_ONLY_ENV_VAR, "1")
    output = tmp_path / "dell.html"
    before = _state(db)

    assert cli.main([*DELL_REPORT, "--db", str(db), "--output", str(output)]) == 0

    assert capsys.readouterr().out == f"wrote {output}\n{HEADLINE}\n"
    html = output.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and HEADLINE in html
    assert (
        "memplan report --workload unet3d --image-size 240x240x144 --batch-size 16 "
        "--budget 256GiB --headroom 20 --model symbolic --machine 9b59349f74 --output"
    ) in html
    assert _state(db) == before


def test_report_refuses_to_overwrite_without_force(db: Path, tmp_path: Path, capsys) -> None:
    output = tmp_path / "kept.html"
    output.write_text("someone's report")

    assert cli.main([*DELL_REPORT, "--db", str(db), "--output", str(output)]) == 2

    assert capsys.readouterr().err == (
        f"error: {output} already exists. Use --force to overwrite it.\n"
    )
    assert output.read_text() == "someone's report"

    assert cli.main([*DELL_REPORT, "--db", str(db), "--output", str(output), "--force"]) == 0
    assert HEADLINE in output.read_text(encoding="utf-8")


def test_report_into_a_missing_folder_is_a_one_line_error(db: Path, tmp_path: Path, capsys) -> None:
    output = tmp_path / "missing" / "report.html"

    assert cli.main([*DELL_REPORT, "--db", str(db), "--output", str(output)]) == 2

    assert capsys.readouterr().err == (
        f"error: folder {output.parent} does not exist; create it first or choose another "
        "--output\n"
    )
    assert not output.parent.exists()


def test_report_of_an_unknown_model_names_the_known_ones(db: Path, tmp_path: Path, capsys):
    output = tmp_path / "report.html"
    asked = [*DELL_REPORT[:-1], "nonesuch"]

    assert cli.main([*asked, "--db", str(db), "--output", str(output)]) == 2

    err = capsys.readouterr().err
    assert err.startswith(f"error: no stored model 'nonesuch' in {db}; known: best, paper,")
    assert err.count("\n") == 1
    assert not output.exists()


def test_report_with_the_default_model_and_headroom_says_what_it_used(
    db: Path, tmp_path: Path, capsys
) -> None:
    output = tmp_path / "measured.html"
    question = ["report", "--image-size", "128", "--batch-size", "4", "--budget", "64GiB"]

    assert cli.main([*question, "--machine", "9b59", "--db", str(db), "--output", str(output)]) == 0

    assert capsys.readouterr().out.splitlines()[1].startswith("Fits, verified by a run")
    html = output.read_text(encoding="utf-8")
    assert "20% on top of the upper bound" in html
    assert "64 GiB" in html


def test_report_carries_the_gpu_answer_when_asked_and_only_then(
    db: Path, tmp_path: Path, capsys
) -> None:
    exchange.import_runs(
        db, database.REPO_ROOT / "data/gpu/h200-torch-2026-11-28.jsonl", alloc_conf=""
    )
    asked = ["--db", str(db), "--image-size", "240x240x144", "--batch-size", "4"]
    plain, gpu = tmp_path / "plain.html", tmp_path / "gpu.html"
    report = [*DELL_REPORT[:1], *DELL_REPORT[5:]]  # the Dell question's model and machine

    assert cli.main([*report, *asked, "--output", str(plain)]) == 0
    assert cli.main([*report, *asked, "--gpu", "80GB", "--output", str(gpu)]) == 0
    assert cli.main(["size", "gpu", "which-gpus", *asked, "--gpu", "80GB"]) == 0

    printed = capsys.readouterr().out.splitlines()
    html = gpu.read_text(encoding="utf-8")
    assert 'id="gpu-memory"' not in plain.read_text(encoding="utf-8")
    headline = [line for line in printed if "(unet3d, float32" in line][0]
    assert f"GPU memory: {headline}" in html.replace("&#39;", "'")  # the CLI's sentence
    assert "80 GB (H100 80GB, 79.18 GiB usable)" in html and "host RAM a GPU training" in html
    assert html.rstrip().endswith("</html>")
