"""The architecture as a test: which package may import which, and no import cycles.

Layers, bottom up: ``core`` (workloads, store, units, errors) <- ``profiling``
(measures) and ``modeling`` (predicts), which never import each other <-
``application`` (the use cases, composing both) <- ``presentation``
(Streamlit-free frames, charts and text reports) <-
``dashboard`` and ``app.py``, and beside them ``memplan`` (the command line),
which never import each other, and which reach ``profiling`` and ``modeling`` only
through ``application`` (the one door: they import ``application``, ``presentation``
and ``core``). No special case: ``memplan`` is the one package to run. Every import
counts, inside functions too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = (
    "core",
    "profiling",
    "modeling",
    "application",
    "presentation",
    "dashboard",
    "memplan",
)
LAYER = {
    "core": 0,
    "profiling": 1,
    "modeling": 1,
    "application": 2,
    "presentation": 3,
    "dashboard": 4,
    "memplan": 4,
    "app": 5,
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    files = [REPO / "app.py"]
    for package in PACKAGES:
        files += sorted((REPO / package).rglob("*.py"))
    return {_module_name(path): path for path in files}


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module an import of ``name`` loads, or None for a third-party one."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(target for name in names if (target := _resolve(name)))
    found.discard(module)
    return found


GRAPH = {module: _imports(module) for module in MODULES}


# The command-line pieces every subcommand shares: argparse options and dispatch.
CLI_SUPPORT = "memplan.commands"


def _reachable(module: str) -> set[str]:
    """Every project module importing ``module`` loads, directly or through others."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        for target in GRAPH[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def _layer(module: str) -> int:
    return LAYER[module.split(".")[0]]


def _package(module: str) -> str:
    return module.split(".")[0]


def test_the_graph_sees_the_known_edges():
    # A guard against a walker that finds nothing and so passes everything.
    assert "core.store" in GRAPH["profiling.lifecycle"]
    assert "core.workloads.base" in GRAPH["core.workloads.alexnet"]
    assert "profiling.runner" in GRAPH["profiling.local_sweep"]


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_a_module_imports_only_its_own_package_or_lower_layers(module):
    upward = [
        target
        for target in GRAPH[module]
        if _package(target) != _package(module) and _layer(target) >= _layer(module)
    ]
    assert not upward, f"{module} imports {upward}: a back-edge or a sideways one"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if _package(m) in ("core",)))
def test_the_bottom_layer_imports_nothing_above_it(module):
    assert {_package(target) for target in GRAPH[module]} <= {"core"}


def test_profiling_and_modeling_never_import_each_other():
    crossing = [
        (module, target)
        for module, targets in GRAPH.items()
        for target in targets
        if {_package(module), _package(target)} == {"profiling", "modeling"}
    ]
    assert crossing == []


def test_the_application_layer_sits_between_the_packages_it_composes_and_presentation():
    assert "modeling.sizing" in GRAPH["application.sizing"]
    assert "profiling.sweep" in GRAPH["application.verify"]
    assert _layer("application.sizing") > _layer("modeling.sizing")
    assert _layer("application.sizing") < _layer("presentation.sizing_view")


def test_the_dashboard_reaches_no_command_line_module_even_indirectly():
    pages = [m for m in GRAPH if _package(m) in ("dashboard", "app")]
    loaded = set().union(*(_reachable(page) for page in pages))
    assert [m for m in loaded if _package(m) == "memplan" or m == CLI_SUPPORT] == []


def test_the_command_line_reaches_no_dashboard_module_even_indirectly():
    commands = [m for m in GRAPH if _package(m) == "memplan"]
    loaded = set().union(*(_reachable(command) for command in commands))
    assert [m for m in loaded if _package(m) in ("dashboard", "app")] == []


# The one door (issue 39): the pages and the command reach every use case through
# `application`, and import `presentation` and `core` (types, constants, errors) besides.
FRONT_DOORS = ("dashboard", "memplan", "app")


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if _package(m) in FRONT_DOORS))
def test_the_pages_and_the_command_reach_modeling_and_profiling_only_through_application(module):
    walked_around = sorted(t for t in GRAPH[module] if _package(t) in ("modeling", "profiling"))
    assert walked_around == [], (
        f"{module} imports {walked_around}: call a use case of `application` instead "
        "(or import the type from `core`)"
    )


def test_the_door_check_sees_an_import_inside_a_function():
    # A guard against a walker that skips function bodies: `dashboard.serve` imports
    # `application.models` inside `warm_up`, not at the top.
    assert "application.models" in GRAPH["dashboard.serve"]


@pytest.mark.parametrize("package", [p for p in PACKAGES if p != "memplan"])
def test_only_the_command_line_is_a_package_to_run(package):
    # `memplan` is the one command (`python -m memplan`); a job's process runs its own
    # module (`python -m application.sweep_job`, `application.refit`), not a package.
    assert not (REPO / package / "__main__.py").exists()


# How to start the command line and its database flag: only `memplan` may spell them. A
# sweep below it is a typed job (`profiling.jobspec.SweepJob`), not a command line; a
# message or a suggested command below it, or on a page, names the database option as
# `core.dbnames.DB_FLAG`, declared once, as the knobs' flags are.
CLI_WORDS = ('"-m", "memplan"', "--db")
NOT_THE_COMMAND_LINE = PACKAGES[:-1]


def _cli_words(path: Path) -> list[str]:
    """``"-m", "memplan"`` where a list or tuple holds them in a row, however laid out, and
    each of `CLI_WORDS` anywhere in the text (a message, a docstring, a comment)."""
    found = [words for words in CLI_WORDS if words in path.read_text()]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.List | ast.Tuple):
            words = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            if any(pair == ("-m", "memplan") for pair in zip(words, words[1:], strict=False)):
                found.append('"-m", "memplan"')
    return sorted(set(found))


def test_nothing_but_the_command_line_builds_its_argv_or_names_its_db_flag():
    assert "memplan" not in NOT_THE_COMMAND_LINE
    found = {
        str(path.relative_to(REPO)): words
        for package in NOT_THE_COMMAND_LINE
        for path in sorted((REPO / package).rglob("*.py"))
        if (words := _cli_words(path))
    }
    assert found == {}


def test_the_cli_words_finder_sees_a_command_line_however_it_is_laid_out(tmp_path: Path):
    built = tmp_path / "built.py"
    built.write_text('ARGV = [\n    "python",\n    "-m",\n    "memplan",\n    "x"]\n')
    assert _cli_words(built) == ['"-m", "memplan"']
    said = tmp_path / "said.py"
    said.write_text('HINT = f"run `memplan evaluate --db {path}`"\n')
    assert _cli_words(said) == ["--db"]


def test_the_command_line_declares_its_database_option_from_core():
    from core.dbnames import DB_FLAG

    assert DB_FLAG == "--db"
    assert "DB_FLAG" in (REPO / "memplan" / "commands.py").read_text()


def test_the_graph_holds_the_command_line():
    # memplan.cli loads its subcommands' modules by name (importlib); each is walked itself.
    assert "application.sweeps" in GRAPH["memplan.sweep"]
    assert "application.sizing" in GRAPH["memplan.size"]


def test_the_presentation_layer_does_not_need_streamlit():
    for module, path in MODULES.items():
        if _package(module) == "presentation":
            assert "streamlit" not in path.read_text(), module


def test_there_is_no_import_cycle():
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                cycle = path[path.index(target) :] + [target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module)
