"""The Models page reads back only the stored models it draws (issue 26, finding 10).

It draws three models by default; reading every stored model back (the trees through
scikit-learn, skops and XGBoost) took ~3.7 s CPU of its cold first render on the
2-core VM. A model is decoded when first drawn (`modeling.stored.codec.Stored`); a
malformed one is refused then, with the same message, and the others are drawn.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from modeling.stored import codec
from tests.app.helpers import open_page, shown, widget
from tests.app.test_tampered_model_page import tamper_random_forest

PAGE = "dashboard/models_page.py"


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The type (`codec`'s manifest name) of every stored model decoded from now on."""
    types: list[str] = []
    real = codec.decode

    def counting(blob: bytes) -> object:
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            types.append(json.loads(archive.read(codec.MANIFEST))["type"])
        return real(blob)

    monkeypatch.setattr(codec, "decode", counting)
    return types


def test_the_models_page_reads_back_only_the_models_it_draws(
    reference_db: Path, decoded: list[str]
) -> None:
    at = open_page(PAGE)

    assert sorted(decoded) == ["paper", "refined", "symbolic"]
    models = widget(at.button_group, "Models")
    models.set_value([*models.value, "random_forest"]).run()
    assert not at.exception
    assert sorted(decoded) == ["paper", "refined", "sklearn", "symbolic"]


def test_a_malformed_tree_is_refused_when_chosen_and_the_others_are_drawn(
    reference_db: Path,
) -> None:
    tamper_random_forest(reference_db)
    at = open_page(PAGE)
    assert not at.error

    models = widget(at.button_group, "Models")
    models.set_value([*models.value, "random_forest"]).run()

    assert not at.exception
    [error] = at.error
    text = shown(error.value)
    assert "stored model 'random_forest'" in text and "malformed" in text
    assert "memplan evaluate" in text
