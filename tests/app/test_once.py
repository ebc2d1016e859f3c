"""What the page tests do once per process: the schema check of charts, once per distinct
valid chart and every time for an invalid one; the components' scan; the scripts' compiling;
the bundles' check of a database's bytes (`tests.app.once`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.app.once import (
    checking_once,
    components_scanned_once,
    remember_valid_charts,
    remembering,
    scripts_compiled_once,
)


def counted() -> tuple[list[Any], Any]:
    seen: list[Any] = []

    def validate(spec: Any, schema: Any, rootschema: Any = None, **kwargs: Any) -> None:
        seen.append(spec)
        return None if spec.get("valid") else ValueError("invalid")

    return seen, validate


def test_a_valid_chart_is_checked_once_and_an_invalid_one_every_time() -> None:
    seen, validate = counted()
    check = remembering(validate)
    schema: dict[str, Any] = {}

    assert [check({"valid": True}, schema) for _ in range(3)] == [None] * 3
    errors = [check({"valid": False}, schema) for _ in range(2)]

    assert len(seen) == 1 + 2
    assert all(isinstance(error, ValueError) for error in errors)


def test_the_same_chart_against_another_schema_is_checked_again() -> None:
    seen, validate = counted()
    check = remembering(validate)

    check({"valid": True}, {"a": 1})
    check({"valid": True}, {"b": 2})

    assert len(seen) == 2


def test_altair_still_refuses_an_invalid_chart_drawn_twice() -> None:
    import altair as alt  # here, not at collection, like the pages
    import jsonschema

    chart = alt.Chart(pd.DataFrame({"x": [1]})).mark_point().encode(x="x:Q")
    broken = chart.copy()
    broken.width = "wide"  # a width is a number, "container" or a step

    with remember_valid_charts():
        chart.to_dict()
        chart.to_dict()
        for _ in range(2):
            with pytest.raises(jsonschema.ValidationError):
                broken.to_dict()


def test_the_components_are_scanned_once_and_each_caller_gets_the_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from streamlit.components.v2 import manifest_scanner

    scans: list[int] = []

    def scan() -> list[str]:
        scans.append(1)
        return ["a component"]

    monkeypatch.setattr(manifest_scanner, "scan_component_manifests", scan)
    with components_scanned_once():
        first = manifest_scanner.scan_component_manifests()
        first.append("changed by its caller")
        again = manifest_scanner.scan_component_manifests()

    assert again == ["a component"]
    assert len(scans) == 1
    assert manifest_scanner.scan_component_manifests is scan  # put back on the way out


def test_a_script_is_compiled_once_for_its_text_and_again_when_it_changes(
    tmp_path: Path,
) -> None:
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    script = tmp_path / "page.py"
    script.write_text("shown = 1\n")
    with scripts_compiled_once():
        first = ScriptCache().get_bytecode(str(script))
        again = ScriptCache().get_bytecode(str(script))
        script.write_text("shown = 2\n")
        changed = ScriptCache().get_bytecode(str(script))

    assert again is first
    assert changed is not first
    assert 2 in changed.co_consts


def test_the_bundles_are_checked_once_per_content_and_again_for_other_bytes(
    tmp_path: Path,
) -> None:
    checked: list[Path] = []

    def install(path: Path) -> int:  # installs into a file holding "new", nothing elsewhere
        checked.append(path)
        if path.exists() and path.read_bytes() == b"new":
            path.write_bytes(b"installed")
            return 1
        return 0

    check = checking_once(install)
    first, copy, other, new = (tmp_path / f"{name}.duckdb" for name in ("a", "b", "c", "d"))
    first.write_bytes(b"runs")
    copy.write_bytes(b"runs")
    other.write_bytes(b"other runs")
    new.write_bytes(b"new")

    assert [check(path) for path in (first, copy, first, other)] == [0, 0, 0, 0]
    assert checked == [first, other]  # the copy's bytes were checked already
    (copy.with_name(copy.name + ".wal")).write_bytes(b"a write")
    assert check(copy) == 0 and checked[-1] == copy  # its log changed what it holds
    assert check(new) == 1 and check(new) == 0  # installed, then checked again: nothing left
    assert checked[-2:] == [new, new]
    assert check(tmp_path / "missing.duckdb") == 0 and checked[-1].name == "missing.duckdb"
