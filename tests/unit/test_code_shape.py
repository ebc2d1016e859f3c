"""The house rules on size: modules of at most 400 lines, functions of at most 60 lines and
6 parameters, unless the function says why in a comment right above it (a comment block
that mentions its "lines" or its "parameters").

The debt listed here while issue 25 was open is paid: nothing is over, and nothing may be.
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
    ("kind", "found"),
    [
        ("module over 400 lines", OVER[0]),
        ("function over 60 lines", OVER[1]),
        ("function over 6 parameters", OVER[2]),
    ],
    ids=["modules", "function-lines", "function-parameters"],
)
def test_nothing_is_over_the_house_limits(kind: str, found: set[str]):
    assert not found, f"{kind}, split it or say why in a comment above it: {sorted(found)}"


def test_the_walker_sees_functions():
    # A guard against a walker that finds nothing and so passes everything.
    names = {name for name, *_ in _functions(ROOT / "profiling" / "lifecycle.py")}
    assert {"run", "point_bounds", "dominates"} <= names
