"""``memplan size gpu``: the GPU questions on the command line, in words and as JSON.

The answers are `application.gpu_sizing`'s, from a database holding the H200 runs
(imported as ``memplan import`` does); the JSON and the text say the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from application import gpu_sizing
from application.gpu_sizing import GpuQuestion
from core import bundled_gpu
from memplan import cli
from presentation import gpu_report_html, gpu_sizing_text
from profiling import exchange

H200_RUNS, ALLOC_CONF = bundled_gpu.BUNDLED_GPU_RUNS[0]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gpu") / "memplan.duckdb"
    exchange.import_runs(path, H200_RUNS, alloc_conf=ALLOC_CONF)
    return path


def _said(capsys, *words: str) -> str:
    assert cli.main(["size", "gpu", *words]) == 0
    return capsys.readouterr().out


def test_largest_cube_on_an_80_gb_gpu_in_words(db: Path, capsys) -> None:
    out = _said(capsys, "largest-cube", "--batch-size", "2", "--gpu", "80GB", "--db", str(db))

    lines = out.splitlines()
    assert lines[0] == (
        "Largest cube at batch 2 that fits 80 GB (H100 80GB, 79.18 GiB usable): 288^3; "
        "up to 352^3 verify first (unet3d, float32, the default allocator)."
    )
    assert lines[1].startswith("fits: 288^3 at batch 2 on 80 GB")
    assert "the same architecture (compute 9.0)" in out
    assert out.rstrip().endswith("which this answer does not give.")  # host RAM: not this


def test_which_gpus_as_json_has_a_verdict_per_size_and_the_options(db: Path, capsys) -> None:
    out = _said(
        capsys, "which-gpus", "--image-size", "256", "--batch-size", "2", "--gpu", "40GB",
        "--db", str(db), "--json",
    )  # fmt: skip

    data = json.loads(out)
    assert [row["verdict"] for row in data["table"]] == [
        "does not fit", "verify first", "verify first", "fits", "fits", "fits",
    ]  # fmt: skip
    assert data["answer"]["usable_bytes"] == round(39.39 * 2**30)
    changes = [option["change"] for option in data["options"]]
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in changes
    assert changes[-1] == "an 80 GB GPU (H100 80GB)"
    assert data["evidence"]["random_split_coverage"] == 1.0
    assert data["notes"] == [gpu_sizing.HOST_RAM_NOTE]


def test_largest_batch_with_bfloat16_and_expandable_segments(db: Path, capsys) -> None:
    out = _said(
        capsys, "largest-batch", "--image-size", "128", "--precision", "mixed_bfloat16",
        "--alloc-conf", "expandable_segments:True", "--db", str(db), "--json",
    )  # fmt: skip

    data = json.loads(out)
    assert data["found"] == 32 and data["precision"] == "mixed_bfloat16"
    assert "expandable_segments:True was not measured" in data["evidence"]["transfer"]


def test_the_cli_the_application_and_the_report_say_the_same(db: Path, capsys) -> None:
    question = GpuQuestion(gpu_sizing.WHICH_GPUS, image_shape=(192, 192, 192), batch_size=4)
    said = gpu_sizing.ask(question, db)

    out = _said(capsys, "which-gpus", "--image-size", "192", "--batch-size", "4", "--db", str(db))

    assert out.splitlines() == gpu_sizing_text.answer_lines(said)
    html = gpu_report_html.with_gpu_section("<html><body></body></html>", said)
    assert gpu_sizing_text.headline(said) in html and html.endswith("</body></html>")


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["largest-cube", "--batch-size", "2", "--gpu", "75"], "'75' is not a GPU memory size"),
        (
            ["largest-cube", "--batch-size", "2", "--workload", "alexnet", "--levels", "4"],
            "the alexnet workload has no --levels",
        ),
        (["largest-batch", "--image-size", "100"], "image side 100 cannot be trained"),
    ],
)
def test_a_bad_question_is_one_error_line(db: Path, capsys, words, message) -> None:
    assert cli.main(["size", "gpu", *words, "--db", str(db)]) == 2

    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_a_database_without_gpu_runs_says_how_to_get_them(tmp_path: Path, capsys) -> None:
    code = cli.main(
        ["size", "gpu", "largest-cube", "--batch-size", "1", "--db", str(tmp_path / "e.duckdb")]
    )

    assert code == 2
    assert "no GPU profile in this database: import GPU runs first" in capsys.readouterr().err


def test_the_report_section_escapes_what_it_shows(db: Path) -> None:
    said = gpu_sizing.ask(GpuQuestion(gpu_sizing.LARGEST_CUBE, batch_size=1, gpu="80GB"), db)

    html = gpu_report_html.section_html(said)

    assert "<script" not in html and "&#39;" not in html.split("<h2")[0]
    assert 'id="gpu-memory"' in html and "Largest cube at batch 1" in html


@pytest.mark.parametrize("read_only", [True, False])
def test_a_gpu_answer_writes_nothing_to_the_database(
    db: Path, read_only: bool, monkeypatch, capsys
) -> None:
    if read_only:
        monkeypatch.setenv("MEMPLAN_READ_ONLY", "1")
    before = db.read_bytes(), db.stat().st_mtime_ns, sorted(p.name for p in db.parent.iterdir())

    _said(capsys, "which-gpus", "--image-size", "96", "--batch-size", "1", "--db", str(db))

    after = db.read_bytes(), db.stat().st_mtime_ns, sorted(p.name for p in db.parent.iterdir())
    assert after == before
