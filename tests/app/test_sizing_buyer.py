"""The Sizing page's first screen (issue 42, point 1; issue 26 finding 6): the dashboard opens
on Sizing, and the page's headline, right under the question in words, is the answer to the
question asked: the memory to buy for a buyer (the default), the largest image or batch for a
researcher, with every other answer below it. Before, the dashboard opened on Models and a
researcher's first figure was "Memory to buy 64 GB", the largest image two screens down."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.helpers import APP, open_page, shown

PAGE = "dashboard/sizing_page.py"
QUESTION = "subheader: 3D U-Net (IntelAI/unet): 128^3 at batch 4"


def in_page_order(node: Any) -> list[Any]:
    """Every element under ``node``, depth first, in the order the page shows them."""
    children = getattr(node, "children", None)
    if not children:
        return [node]
    found = []
    for key in sorted(children):
        found += in_page_order(children[key])
    return found


def what_reads(element: Any) -> str:
    label = getattr(element, "label", None)
    if element.type == "metric":
        return f"metric: {label}"
    value = getattr(element, "value", "")
    return f"{element.type}: {shown(str(value))}"


def reading_order(at: AppTest) -> list[str]:
    return [what_reads(element) for element in in_page_order(at.main)]


def test_the_dashboard_opens_on_the_sizing_page(shared_reference_db: Path) -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()

    assert not at.exception
    assert [t.value for t in at.main.title] == ["Sizing"]


def test_the_memory_to_buy_heads_the_page_under_the_question(shared_reference_db: Path) -> None:
    at: AppTest = open_page(PAGE, workload="unet3d", image="128", batch="4", budget="256")
    shown_in_order = reading_order(at)
    answers = shown_in_order[shown_in_order.index(QUESTION) + 1 :]

    assert answers[0] == "metric: Memory to buy"
    buy_metric = next(m for m in at.metric if m.label == "Memory to buy")
    assert buy_metric.value.endswith(" GB")
    # Right under it: what it needs, of host RAM, with its headroom, then the model and bound.
    assert answers[1].startswith("caption: Needs up to ") and " of host RAM; " in answers[1]
    assert "with 20% headroom" in answers[1]
    # The bound in a sentence a buyer can repeat; its technical name behind an expander.
    assert answers[2].startswith("caption: Model ") and "9 in 10 measured peaks" in answers[2]
    assert "conformal" not in answers[2]
    assert answers[3].startswith("markdown: The bound, exactly: 90% conformal upper bound")
    assert "How the bound is made" in [e.label for e in at.main.expander]
    # The inputs, then the verdict about the budget, only after it.
    assert answers.index("metric: Upper bound") > answers.index("subheader: Question") > 2
    assert [m.label for m in at.metric].count("Memory to buy") == 1
    assert "ask" not in at.query_params  # the default: a link without it asks it


def test_a_researcher_asking_for_the_largest_image_gets_it_first(
    shared_reference_db: Path,
) -> None:
    at = open_page(PAGE, workload="unet3d", image="128", batch="4", budget="12", ask="image")
    shown_in_order = reading_order(at)
    answers = shown_in_order[shown_in_order.index(QUESTION) + 1 :]

    assert answers[0] == "metric: Largest cube at batch 4"
    assert answers[1].startswith("caption: Needs up to ") and " of host RAM; " in answers[1]
    # Every other answer is still on the page, once, below it.
    labels = [m.label for m in at.metric]
    assert answers.index("metric: Memory to buy") > answers.index("metric: Largest cube at batch 4")
    assert labels.count("Largest cube at batch 4") == 1
    assert labels.count("Largest batch at 128^3") == 1


def test_choosing_the_largest_batch_puts_it_first_and_in_the_link(
    shared_reference_db: Path,
) -> None:
    at = open_page(PAGE, workload="unet3d", image="128", batch="4", budget="12")

    at = at.radio(key="sizing_ask").set_value("batch").run()

    answers = reading_order(at)
    assert answers[answers.index(QUESTION) + 1] == "metric: Largest batch at 128^3"
    assert at.query_params["ask"] == "batch"


def test_a_link_asking_an_unknown_question_says_so_and_asks_the_buyers(
    shared_reference_db: Path,
) -> None:
    at = open_page(PAGE, workload="unet3d", ask="everything")

    assert [shown(w.value) for w in at.warning if "ask=" in shown(w.value)] == [
        "The link's ask='everything' was ignored: the questions are buy, image, batch. "
        "Showing ask=buy instead."
    ]
    assert at.radio(key="sizing_ask").value == "buy"


def test_every_figure_is_said_to_be_host_ram_not_gpu_memory(shared_reference_db: Path) -> None:
    at = open_page(PAGE, workload="unet3d", image="128", batch="4")

    captions = [shown(c.value) for c in at.main.caption]
    assert any("not a GPU's memory" in c and "host RAM" in c for c in captions)


@pytest.mark.parametrize("page", ["dashboard/models_page.py", "dashboard/sweeps_page.py"])
def test_the_other_pages_say_their_memory_is_host_ram_too(
    shared_reference_db: Path, page: str
) -> None:
    at = open_page(page)

    assert any("host RAM" in c.value and "not a GPU" in c.value for c in at.main.caption)
