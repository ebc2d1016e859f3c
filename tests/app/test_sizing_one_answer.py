"""One question, one answer on the Sizing page, whatever path reaches it (issue 26).

On every bundled run and evaluation: the Intel reference profile and the AVX2 AMD
knob profile, whose default models differ.
"""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.app.helpers import open_page, shown, widget

PAGE = "dashboard/sizing_page.py"
INTEL = "9b59349f74"  # the bundled Intel reference profile
KNOBS = "259d139078"  # the AVX2 AMD knob profile: its mixed_float16 runs all ended in error
QUESTION = {"workload": "unet3d", "image": "128", "batch": "2", "budget": "64"}


def figures(at: AppTest) -> dict[str, str]:
    """What the page answers: the model, every metric and every coloured box, as shown."""
    boxes = [shown(box.value) for box in [*at.success, *at.warning, *at.error, *at.info]]
    return {
        "model": widget(at.selectbox, "Model").value,
        **{m.label: m.value for m in at.metric},
        "boxes": " | ".join(boxes),
    }


def test_switching_machine_answers_as_a_fresh_link_to_that_machine(
    shared_every_bundle_db: Path,
) -> None:
    # A model picked on the Intel profile that is not the knob profile's default.
    at = open_page(PAGE, **QUESTION, machine=INTEL)
    fresh = open_page(PAGE, **QUESTION, machine=KNOBS)
    picked = next(m for m in ("hybrid_terms", "symbolic") if m != fresh_model(fresh))
    widget(at.selectbox, "Model").set_value(picked).run()
    assert widget(at.selectbox, "Model").value == picked

    widget(at.main.selectbox, "Machine").set_value(KNOBS).run()
    assert not at.exception

    assert figures(at) == figures(fresh)
    # And the link the page now writes opens on the same answer.
    link = {name: str(value) for name, value in at.query_params.items()}
    assert figures(open_page(PAGE, **link)) == figures(fresh)


def fresh_model(at: AppTest) -> str:
    return widget(at.selectbox, "Model").value


def test_a_model_picked_on_a_machine_is_kept_for_that_machine(shared_every_bundle_db: Path) -> None:
    at = open_page(PAGE, **QUESTION, machine=INTEL)
    picked = "symbolic"
    widget(at.selectbox, "Model").set_value(picked).run()

    widget(at.main.selectbox, "Machine").set_value(KNOBS).run()
    widget(at.main.selectbox, "Machine").set_value(INTEL).run()

    assert widget(at.selectbox, "Model").value == picked


def test_a_precision_that_never_trained_here_gets_the_reason_not_a_prediction(
    shared_every_bundle_db: Path,
) -> None:
    at = open_page(PAGE, **QUESTION, machine=KNOBS, precision="mixed_float16")

    (refusal,) = [shown(e.value) for e in at.error if "does not train" in e.value]
    assert refusal.startswith("**Does not train on this machine profile.** Precision mixed_float16")
    assert "all 8 of its runs there ended in error" in refusal
    assert "No OpKernel was registered to support Op 'MaxPool3D' for DT_HALF" in refusal
    # No prediction anywhere: no bound, no fit, no sizing answer, no every-model table.
    assert not [m for m in at.metric if m.label != "Refined closed-form estimate"]
    assert "fit" not in " ".join(shown(b.value) for b in [*at.success, *at.warning])
    assert not at.dataframe and not at.table
    # The choice says so before it is made; a precision that trains is offered plainly.
    precision = widget(at.selectbox, "Precision")
    assert precision.format_func("mixed_float16") == "mixed_float16 (fails here)"
    assert precision.format_func("mixed_bfloat16") == "mixed_bfloat16"


def test_a_precision_that_trains_here_is_predicted(shared_every_bundle_db: Path) -> None:
    at = open_page(PAGE, **QUESTION, machine=KNOBS, precision="mixed_bfloat16")

    assert not [e for e in at.error if "does not train" in e.value]
    assert widget(at.metric, "Upper bound").value.endswith(" GiB")
