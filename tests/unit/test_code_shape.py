"""The house rules on size: modules of at most 400 lines, functions of at most 60 lines and
6 parameters, unless the function says why in a comment right above it (a comment block
that mentions its "lines" or its "parameters").

What is still over is listed below by name, as debt to pay (issue 25), so that nothing
new joins it unnoticed and an entry that is paid must leave the list.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "profiling", "modeling", "application", "presentation", "dashboard", "memplan")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_PARAMETERS = 6

# Still over, to be split (issue 25): module paths, and "path:function" for functions.
LONG_MODULES: frozenset[str] = frozenset(
    {
        "core/database.py",
        "core/datafiles.py",
        "core/schema.py",
        "dashboard/models_page.py",
        "dashboard/sidebar.py",
        "modeling/stored/bundle.py",
        "presentation/charts.py",
        "presentation/curves.py",
        "presentation/machines.py",
    }
)
LONG_FUNCTIONS: frozenset[str] = frozenset(
    {
        "dashboard/models_page.py:render",
        "dashboard/sidebar.py:_launch_form",
        "memplan/evaluate.py:prepare",
        "modeling/stored/tables.py:store_results",
        "presentation/charts.py:bounds",
        "presentation/charts.py:published_points",
        "presentation/charts_published.py:chart_frame",
        "presentation/charts_published.py:measured_vs_predicted",
        "presentation/charts_sweeps.py:memory_timeline",
        "presentation/machines.py:compared",
        "profiling/launcher.py:start_job",
    }
)
MANY_PARAMETERS: frozenset[str] = frozenset(
    {
        "dashboard/models_page.py:curve_frame",
        "dashboard/models_page.py:out_of_sample_charts",
        "dashboard/models_page.py:peak_chart",
        "modeling/stored/tables.py:store_results",
        "presentation/machines.py:shortfall",
    }
)


def _sources() -> list[Path]:
    found = [ROOT / "app.py"]
    for package in PACKAGES:
        found += sorted((ROOT / package).rglob("*.py"))
    return [path for path in found if path.exists()]


def _comment_above(lines: list[str], first: int) -> str:
    """The comment block right above line ``first`` (1-based), lower-cased; "" if none."""
    block = []
    number = first - 2
    while number >= 0 and lines[number].strip().startswith("#"):
        block.append(lines[number].strip())
        number -= 1
    return " ".join(reversed(block)).lower()


def _functions(path: Path) -> list[tuple[str, int, int, str]]:
    """(name, lines, parameters, the comment above it) of every function in ``path``."""
    text = path.read_text()
    lines = text.splitlines()
    found = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        args = node.args
        named = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        count = len([name for name in named if name not in ("self", "cls")])
        count += bool(args.vararg) + bool(args.kwarg)
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        size = (node.end_lineno or node.lineno) - node.lineno + 1
        found.append((node.name, size, count, _comment_above(lines, first)))
    return found


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _over() -> tuple[set[str], set[str], set[str]]:
    modules, long_functions, many_parameters = set(), set(), set()
    for path in _sources():
        name = _relative(path)
        if len(path.read_text().splitlines()) > MAX_MODULE_LINES:
            modules.add(name)
        for function, size, count, why in _functions(path):
            if size > MAX_FUNCTION_LINES and "lines" not in why:
                long_functions.add(f"{name}:{function}")
            if count > MAX_PARAMETERS and "parameters" not in why:
                many_parameters.add(f"{name}:{function}")
    return modules, long_functions, many_parameters


OVER = _over()


@pytest.mark.parametrize(
    ("kind", "found", "listed"),
    [
        ("module over 400 lines", OVER[0], LONG_MODULES),
        ("function over 60 lines", OVER[1], LONG_FUNCTIONS),
        ("function over 6 parameters", OVER[2], MANY_PARAMETERS),
    ],
    ids=["modules", "function-lines", "function-parameters"],
)
def test_nothing_new_is_over_the_house_limits(kind: str, found: set[str], listed: frozenset[str]):
    new = sorted(found - listed)
    assert not new, f"{kind}, split it or say why in a comment above it: {new}"
    paid = sorted(listed - found)
    assert not paid, f"no longer a {kind}; take it off the list in this test: {paid}"


def test_the_walker_sees_functions():
    # A guard against a walker that finds nothing and so passes everything.
    names = {name for name, *_ in _functions(ROOT / "profiling" / "lifecycle.py")}
    assert {"run", "point_bounds", "dominates"} <= names
