"""Typed numbers beside the Sizing page's sliders (issue 42, point 3): a researcher reaching
batch 16 types 16, instead of pressing an arrow key 15 times on a 1-128 one-step slider.
The slider stays the value's one source: a typed value moves it, and the URL follows."""

from __future__ import annotations

from pathlib import Path

from tests.app.helpers import open_page, shown, widget

PAGE = "dashboard/sizing_page.py"


def test_a_typed_batch_moves_the_slider_the_answer_and_the_link(
    shared_reference_db: Path,
) -> None:
    at = open_page(PAGE, workload="unet3d", image="128", batch="4")
    assert at.number_input(key="sizing_unet3d_batch_typed").value == 4

    at = at.number_input(key="sizing_unet3d_batch_typed").set_value(16).run()

    assert not at.exception
    assert widget(at.select_slider, "Batch size").value == 16
    assert at.query_params["batch"] == "16"
    assert [h.value for h in at.subheader if "at batch" in h.value] == [
        "3D U-Net (IntelAI/unet): 128^3 at batch 16"
    ]


def test_a_moved_slider_shows_in_the_typed_number(shared_reference_db: Path) -> None:
    at = open_page(PAGE, workload="unet3d", image="128", batch="4")

    at = widget(at.select_slider, "Image side").set_value(64).run()

    assert at.number_input(key="sizing_unet3d_side_typed").value == 64


def test_a_typed_side_not_offered_takes_the_nearest_and_says_so(
    shared_reference_db: Path,
) -> None:
    at = open_page(PAGE, workload="unet3d", image="128", batch="4")

    at = at.number_input(key="sizing_unet3d_side_typed").set_value(100).run()

    assert widget(at.select_slider, "Image side").value == 96
    assert at.query_params["image"] == "96"
    assert (
        "A typed image side of 100 is not offered (the offered ones: multiples of 16 from 16 to "
        "1024): showing the nearest, 96."
    ) in [shown(c.value) for c in at.caption]
