"""The Sizing page in GPU memory (issue 40, point 4): the page, ``memplan size gpu --json``
and the report give the same answer, the link carries the question, and a hostile link
gets a plain message.

The database holds the reference runs and the bundled H200 GPU runs (``shared_gpu_db``).
"""

from __future__ import annotations

import html
import json
import shlex
from dataclasses import replace
from pathlib import Path

from streamlit.testing.v1 import AppTest

from application import gpu_sizing, readonly
from application.gpu_sizing import GpuQuestion
from core import database
from memplan import cli
from presentation import gpu_sizing_text
from presentation.text import plain
from tests.app.helpers import open_page, shown, widget

PAGE = "dashboard/sizing_page.py"
H200 = "96f6d73453"  # the bundled H200 runs' GPU profile


def _captions(at: AppTest) -> list[str]:
    return [shown(caption.value) for caption in at.caption]


def _cli_json(at: AppTest, capsys) -> dict:
    """What the page's "copy this command" prints with --json."""
    (code,) = at.code
    words = shlex.split(code.value)
    assert words[:3] == ["memplan", "size", "gpu"]
    assert cli.main([*words[1:], "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _option_lines(at: AppTest, capsys) -> list[str]:
    """The "What would make it fit" lines the page's command prints (without --json)."""
    (code,) = at.code
    assert cli.main(shlex.split(code.value)[1:]) == 0
    said = capsys.readouterr().out.splitlines()
    after = said[said.index("What would make it fit:") + 1 :]
    return [line for line in after if line.startswith("  - ")]


def test_the_largest_cube_on_an_80_gb_gpu_is_the_applications_and_the_clis(
    shared_gpu_db: Path, capsys
) -> None:
    at = open_page(PAGE, memory="gpu", ask="largest-cube", gpu="80GB", batch="2")

    said = gpu_sizing.ask(
        GpuQuestion(gpu_sizing.LARGEST_CUBE, batch_size=2, gpu="80GB"), shared_gpu_db
    )
    (shown_metric,) = at.metric
    assert shown_metric.value == f"{said.found}^3" == "288^3"
    headline = gpu_sizing_text.headline(said)
    assert headline in _captions(at)
    data = _cli_json(at, capsys)
    assert (data["found"], data["headline"]) == (said.found, headline)
    assert data["answer"]["bound_bytes"] == said.check.bound_bytes
    assert f"{gpu_sizing.HOST_RAM_NOTE}." in _captions(at)  # host RAM is another figure


def test_which_gpus_shows_every_size_with_the_clis_verdicts_the_reports_and_the_options(
    shared_gpu_db: Path, tmp_path: Path, capsys
) -> None:
    at = open_page(PAGE, memory="gpu", ask="which-gpus", gpu="40GB", image="256", batch="2")

    data = _cli_json(at, capsys)
    report = tmp_path / "sizing.html"
    assert cli.main([
        "report", "--image-size", "256", "--batch-size", "2", "--budget", "64GiB",
        "--gpu", "40GB", "--output", str(report), "--db", str(shared_gpu_db),
    ]) == 0  # fmt: skip
    assert f"GPU memory: {data['headline']}</h2>" in html.unescape(report.read_text())
    assert data["headline"] in _captions(at)
    (table,) = (frame.value for frame in at.table)
    # A static table, whose cells are Markdown: each one shown as the text it is.
    cells = list(table.to_numpy().ravel())
    assert [plain(shown(cell)) for cell in cells] == cells
    assert [shown(v) for v in table["Verdict"]] == [row["verdict"] for row in data["table"]] == [
        "does not fit", "verify first", "verify first", "fits", "fits", "fits",
    ]  # fmt: skip
    # What would make it fit: a line each, the command line's words with their figures.
    options = [shown(m.value) for m in at.main.markdown if m.value.startswith("- **")]
    assert [line.split("**")[1] for line in options] == [o["change"] for o in data["options"]]
    assert ["  " + line.replace("**", "", 2) for line in options] == _option_lines(at, capsys)
    assert at.metric[0].value == data["answer"]["verdict"] == "verify first"
    assert "another architecture" in " ".join(_captions(at))  # the transfer, in words


def test_switching_to_gpu_memory_asks_the_gpu_question_and_the_link_carries_it(
    shared_gpu_db: Path, capsys
) -> None:
    at = open_page(PAGE, workload="unet3d", image="128", batch="16", budget="12")
    at = at.radio(key="sizing_memory").set_value("gpu").run()
    at = widget(at.radio, "Your question").set_value(gpu_sizing.LARGEST_BATCH).run()
    at = widget(at.selectbox, "GPU").set_value(H200).run()
    at = widget(at.selectbox, "Precision").set_value("mixed_bfloat16").run()
    at = widget(at.selectbox, "Allocator setting").set_value("expandable_segments:True").run()

    assert not at.exception
    params = dict(at.query_params)
    assert (params["memory"], params["ask"], params["gpu"], params["alloc"]) == (
        "gpu", "largest-batch", H200, "expandable_segments",
    )  # fmt: skip
    assert "budget" in params and "image" in params  # the GPU question's image: 128
    data = _cli_json(at, capsys)
    assert at.metric[0].value == str(data["found"]) == "32"
    linked = open_page(PAGE, **params)
    assert linked.metric[0].value == "32"


def test_a_typed_gpu_size_is_answered_as_given(shared_gpu_db: Path) -> None:
    at = open_page(PAGE, memory="gpu", gpu="75GiB", batch="2")

    assert widget(at.text_input, "Usable GPU memory").value == "75GiB"
    assert at.metric[0].label == "Largest cube at batch 2"
    assert "3D U-Net (IntelAI/unet) on 75.00 GiB GPU (size given)" in [
        h.value for h in at.subheader
    ]
    said = gpu_sizing.ask(
        GpuQuestion(gpu_sizing.LARGEST_CUBE, batch_size=2, gpu="75GiB"), shared_gpu_db
    )
    assert at.metric[0].value == f"{said.found}^3"


def test_a_hostile_link_gets_plain_messages_and_the_default_question(shared_gpu_db: Path) -> None:
    at = open_page(PAGE, memory="gpu", gpu="[x](http://evil)", batch="-3", ask="buy", alloc="<b>")

    warnings = [shown(w.value) for w in at.warning]
    assert any(w.startswith("The link's gpu='[x](http://evil)' was ignored: ") for w in warnings)
    assert any("batch=2 instead" in w for w in warnings)
    assert any("the GPU question is one of largest-cube" in w for w in warnings)
    assert at.metric[0].value == "288^3"  # 80GB, batch 2: the default question
    bad = open_page(PAGE, memory="ram")
    assert [shown(w.value) for w in bad.warning if "The link's" in shown(w.value)] == [
        "The link's memory='ram' was ignored: it is host or gpu. Showing memory=host instead."
    ]


def test_a_typed_batch_that_cannot_be_answered_says_why_and_the_answer_waits(
    shared_gpu_db: Path,
) -> None:
    at = open_page(PAGE, memory="gpu")

    at = widget(at.number_input, "Batch size").set_value(0).run()

    assert [shown(e.value) for e in at.error] == [
        "The batch size must be between 1 and 4096, not 0."
    ]
    assert not at.metric


def test_back_to_host_ram_drops_the_gpu_question_from_the_link(shared_gpu_db: Path) -> None:
    at = open_page(PAGE, memory="gpu", ask="which-gpus", image="200", batch="3")

    at = at.radio(key="sizing_memory").set_value("host").run()

    assert not at.exception
    assert not [w for w in at.warning if "The link's" in shown(w.value)]  # no GPU value misread
    assert "memory" not in at.query_params and "gpu" not in at.query_params
    assert any(metric.label == "Memory to buy" for metric in at.metric)


def test_without_gpu_runs_the_page_says_how_to_import_them(shared_reference_db: Path) -> None:
    at = open_page(PAGE, memory="gpu")

    assert [shown(e.value) for e in at.error][0].startswith("no GPU profile in this database")


def test_a_read_only_dashboard_answers_in_gpu_memory_and_writes_nothing(
    gpu_template: Path, tmp_path: Path, monkeypatch
) -> None:
    path = tmp_path / "memplan.duckdb"
    path.write_bytes(gpu_template.read_bytes())
    monkeypatch.setenv(database.DB_ENV_VAR, str(path))
    monkeypatch.setenv(readonly.READ_ONLY_ENV_VAR, "1")
    before = (path.read_bytes(), sorted(p.name for p in tmp_path.iterdir()))

    at = open_page(PAGE, memory="gpu", gpu="80GB", batch="2")

    assert at.metric[0].value == "288^3"
    assert (path.read_bytes(), sorted(p.name for p in tmp_path.iterdir())) == before


def test_the_largest_square_for_alexnet_on_every_gpu_size_is_each_sizes_answer(
    shared_gpu_db: Path,
) -> None:
    at = open_page(PAGE, memory="gpu", workload="alexnet", gpu="24GB", batch="256")

    question = GpuQuestion(gpu_sizing.LARGEST_CUBE, "alexnet", batch_size=256, gpu="24GB")
    said = gpu_sizing.ask(question, shared_gpu_db)
    assert at.metric[0].label == "Largest square at batch 256"
    found = "none known to fit" if said.found is None else f"{said.found}^2"
    assert at.metric[0].value == found
    (every,) = (frame.value for frame in at.dataframe)
    assert len(every) == 6 and every["GPU"][0] == said.card.label
    on_141 = gpu_sizing.ask(replace(question, gpu="141GB"), shared_gpu_db)
    assert every["Verify first up to"].iloc[-1] == f"{on_141.found_verify}^2"


def test_an_image_the_network_cannot_take_says_why_instead_of_an_answer(
    shared_gpu_db: Path,
) -> None:
    at = open_page(PAGE, memory="gpu", ask="largest-batch", image="100")

    (error,) = [shown(e.value) for e in at.error]
    assert error.startswith("image side 100 cannot be trained by a 5-level U-Net")
    assert not at.metric and not at.code
