"""Modeling is pure over the data it is handed: no function in ``modeling/`` takes a database
path, imports DuckDB or calls what opens, reads or writes the database (issue 39). The
application layer reads a `core.snapshot.Snapshot` once per question and passes it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

MODELING = Path(__file__).resolve().parents[2] / "modeling"
FILES = sorted(MODELING.rglob("*.py"))
# What opens the database: its connections, and every loader and writer of `core.store`.
OPENING = {"connect", "transaction", "reading", "ensure_database", "open_file"}
STORE_IO = ("load_", "insert_", "delete_", "update_", "import_", "runs_in", "run_statuses")


def _problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names]
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if "duckdb" in names or module == "duckdb" or module == "core.dbopen":
                found.append(f"line {node.lineno}: imports duckdb or core.dbopen")
            if module == "core.database" and OPENING & set(names):
                found.append(f"line {node.lineno}: imports {sorted(OPENING & set(names))}")
            if module == "core.store" and [n for n in names if n.startswith(STORE_IO)]:
                found.append(f"line {node.lineno}: imports core.store's loading functions")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "database" and node.attr in OPENING:
                found.append(f"line {node.lineno}: database.{node.attr}")
            if node.value.id == "store" and node.attr.startswith(STORE_IO):
                found.append(f"line {node.lineno}: store.{node.attr}")
        elif isinstance(node, ast.arg) and node.arg in ("db_path", "path", "db"):
            found.append(f"line {node.lineno}: a parameter {node.arg!r}")
    return found


def test_the_scan_sees_a_function_that_reads_the_database(tmp_path: Path) -> None:
    # A guard against a scan that finds nothing and so passes everything.
    scratch = tmp_path / "reads.py"
    scratch.write_text(
        "from core import store\ndef f(db_path):\n    return store.load_runs(db_path)\n"
    )
    assert _problems(scratch) == ["line 2: a parameter 'db_path'", "line 3: store.load_runs"]


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(MODELING)) for p in FILES])
def test_no_modeling_module_opens_the_database(path: Path) -> None:
    assert _problems(path) == []
