"""The buyer's Sizing page (issue 26 finding 6): the first answer under the question is the
memory to buy, with the bound it covers and its confidence, before any verdict about a
budget the buyer never chose (on 9c1906c it was the third figure, ~1,000 px down)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from tests.app.helpers import open_page, shown

PAGE = "dashboard/sizing_page.py"


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


def test_the_memory_to_buy_comes_first_under_the_question(shared_reference_db: Path) -> None:
    at: AppTest = open_page(PAGE, workload="unet3d", image="128", batch="4", budget="256")
    shown_in_order = [what_reads(element) for element in in_page_order(at.main)]
    answers = shown_in_order[shown_in_order.index("subheader: 128^3 at batch 4") + 1 :]

    assert answers[0] == "metric: Memory to buy"
    buy_metric = next(m for m in at.metric if m.label == "Memory to buy")
    assert buy_metric.value.endswith(" GB")
    # Right under it: what it needs with its headroom, then the model and its bound.
    assert answers[1].startswith("caption: Needs up to ")
    assert "with 20% headroom" in answers[1]
    assert answers[2].startswith("caption: Model ") and "90% conformal upper bound" in answers[2]
    # The verdict about the budget only after it.
    assert answers.index("metric: Upper bound") > 2
