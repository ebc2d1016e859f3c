"""One question, one answer, whichever path asks it (issue 26 finding 4).

The same questions (the memory to buy, the largest cube at a batch, the largest
batch at an image) on two machine profiles whose default models differ, one at a
headroom other than the default, asked through the Sizing page (AppTest), the
command line (``python -m memplan size ... --json``, a subprocess) and the HTML
report (``memplan report``): the same figures, bounds and headroom everywhere.
On 9c1906c the page answered 272^3 and batch 20 at 64 GiB where the command line
answered 288^3 and 24 (the page kept 20% headroom, the command line none, and
had no ``--headroom`` for an image or batch).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from memplan import cli as memplan_cli
from presentation.sizing_text import gib
from tests.app.helpers import open_page, shown, widget

PAGE = "dashboard/sizing_page.py"
INTEL = "9b59349f74"  # the bundled Intel reference profile
KNOBS = "259d139078"  # the AVX2 AMD knob profile: another default model
IMAGE, BATCH, BUDGET_GIB = 128, 2, 64
# (profile, headroom %): the page's default on one, another on the other.
QUESTIONS = [(INTEL, 20), (KNOBS, 35)]


def page_figures(at: AppTest) -> dict[str, Any]:
    """What the page answers, as shown: the model, each answer's figure and its bound."""
    metrics = {m.label: m.value for m in at.metric}

    def metric(prefix: str) -> str:
        (value,) = [v for label, v in metrics.items() if label.startswith(prefix)]
        return value

    bounds = [
        found.group(1)
        for caption in at.caption
        if (found := re.match(r"Needs up to ([\d,.]+ GiB)", shown(caption.value)))
    ]
    usable = next(
        shown(c.value) for c in at.caption if shown(c.value).startswith("Answers use what")
    )
    return {
        "model": widget(at.selectbox, "Model").value,
        "memory_gb": int(metric("Memory to buy").removesuffix(" GB")),
        "side": int(metric("Largest cube").removesuffix("^3")),
        "batch_size": int(metric("Largest batch")),
        # Shown in the order of the page: the memory to buy, then the cube, then the batch.
        "bounds": bounds,
        "usable": re.search(r"leaves ([\d,.]+ GiB) for training", usable).group(1),
    }


def cli(db: Path, profile: str, headroom: int, *question: str) -> dict[str, Any]:
    """``memplan size QUESTION ... --json`` in a process of its own."""
    done = subprocess.run(
        [sys.executable, "-m", "memplan", "size", *question, "--machine", profile]
        + ["--headroom", str(headroom), "--db", str(db), "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def cli_figures(db: Path, profile: str, headroom: int) -> dict[str, Any]:
    budget = f"{BUDGET_GIB}GiB"
    buy = cli(db, profile, headroom, "buy", "--image-size", str(IMAGE), "--batch-size", str(BATCH))
    image = cli(db, profile, headroom, "image", "--budget", budget, "--batch-size", str(BATCH))
    batch = cli(db, profile, headroom, "batch", "--budget", budget, "--image-size", str(IMAGE))
    for said in (buy, image, batch):
        assert said["headroom_pct"] == headroom
    assert image["usable_budget_bytes"] == batch["usable_budget_bytes"]
    assert image["usable_budget_bytes"] == int(BUDGET_GIB * 2**30 / (1 + headroom / 100))
    return {
        "model": buy["model"],
        "memory_gb": buy["answer"]["memory_gb"],
        "side": image["answer"]["side"],
        "batch_size": batch["answer"]["batch_size"],
        "bounds": [gib(said["answer"]["bound_bytes"]) for said in (buy, image, batch)],
        "usable": gib(image["usable_budget_bytes"]),
    }


def report_figures(db: Path, profile: str, headroom: int, output: Path) -> dict[str, Any]:
    """``memplan report`` for the same question: the figures of its "What fits" table."""
    code = memplan_cli.main(
        ["report", "--image-size", str(IMAGE), "--batch-size", str(BATCH)]
        + ["--budget", f"{BUDGET_GIB}GiB", "--headroom", str(headroom), "--machine", profile]
        + ["--db", str(db), "--output", str(output)]
    )
    assert code == 0
    html = output.read_text()
    table = html[html.index('<table id="answers">') :]
    table = table[: table.index("</table>")]
    figure = dict(re.findall(r'data-figure="(\w+)">(\d+)<', table))
    bounds = [int(b) for b in re.findall(r'data-bound-bytes="(\d+)"', table)]
    assert f"{headroom}% headroom" in table
    return {
        "memory_gb": int(figure["memory_gb"]),
        "side": int(figure["side"]),
        "batch_size": int(figure["batch_size"]),
        "bounds": [gib(bound) for bound in bounds],
    }


@pytest.mark.parametrize(("profile", "headroom"), QUESTIONS)
def test_the_page_the_command_line_and_the_report_give_the_same_figures(
    every_bundle_db: Path, tmp_path: Path, profile: str, headroom: int
) -> None:
    at = open_page(
        PAGE,
        workload="unet3d",
        image=str(IMAGE),
        batch=str(BATCH),
        budget=str(BUDGET_GIB),
        headroom=str(headroom),
        machine=profile,
    )
    on_page = page_figures(at)
    on_cli = cli_figures(every_bundle_db, profile, headroom)
    in_report = report_figures(every_bundle_db, profile, headroom, tmp_path / "sizing.html")

    assert on_page == on_cli
    assert in_report == {key: on_cli[key] for key in in_report}
