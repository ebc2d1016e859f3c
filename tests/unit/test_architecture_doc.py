"""docs/architecture.md names only modules that exist: a module renamed, merged or gone
fails here until the page is redrawn."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "architecture.md"
PACKAGES = ("core", "profiling", "modeling", "application", "presentation", "dashboard", "memplan")


def _sources() -> list[str]:
    found = ["app.py"]
    for package in (*PACKAGES, "benchmarks", "tests"):
        found += [str(path.relative_to(REPO)) for path in (REPO / package).rglob("*.py")]
    return found


def _names(text: str) -> list[str]:
    """Every `code` span that is a file (``x.py``, ``pkg/x.py``) or a dotted path starting
    at one of PACKAGES (``core.snapshot.read``)."""
    spans = re.findall(r"`([^`\s]+)`", text)
    # A placeholder (``core/workloads/NAME.py``) names no module.
    files = [span for span in spans if re.fullmatch(r"[\w/]+\.py", span) and "NAME" not in span]
    dotted = [span for span in spans if re.fullmatch(r"[a-z_]+(\.\w+)+", span)]
    return files + [span for span in dotted if span.split(".")[0] in PACKAGES]


def _exists(name: str, sources: list[str]) -> bool:
    if name.endswith(".py"):
        return any(path == name or path.endswith("/" + name) for path in sources)
    parts = name.split(".")
    # The longest prefix that is a module or a package; what follows is a name in it.
    for end in range(len(parts), 1, -1):
        base = REPO.joinpath(*parts[:end])
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return True
    return False


def test_the_page_names_modules():
    assert len(_names(PAGE.read_text())) > 100


def test_every_module_the_architecture_page_names_exists():
    sources = _sources()
    missing = sorted({name for name in _names(PAGE.read_text()) if not _exists(name, sources)})
    assert missing == []


def test_a_missing_module_is_caught():
    sources = _sources()
    text = "`core/nowhere.py`, `gone.py`, `modeling.nowhere.fit`, `core.snapshot.read`"
    assert [name for name in _names(text) if not _exists(name, sources)] == [
        "core/nowhere.py",
        "gone.py",
        "modeling.nowhere.fit",
    ]


def _unnamed(text: str) -> list[str]:
    """The modules of PACKAGES (and app.py) that ``text`` never names as `x.py` or `dir/x.py`."""
    named = {span.rsplit("/", 1)[-1] for span in re.findall(r"`([\w/]+\.py)`", text)}
    return sorted(
        path
        for path in _sources()
        if path.split("/")[0] in (*PACKAGES, "app.py")
        and not path.endswith("__init__.py")
        and path.rsplit("/", 1)[-1] not in named
    )


def test_every_module_is_on_the_architecture_page():
    # Drawn from the code as it is: a new module is placed on the page when it is added.
    assert _unnamed(PAGE.read_text()) == []


def test_a_module_the_page_does_not_name_is_caught():
    assert "core/snapshot.py" in _unnamed("`app.py` and `core/store.py` only")
    assert "core/store.py" not in _unnamed("`app.py` and `core/store.py` only")
