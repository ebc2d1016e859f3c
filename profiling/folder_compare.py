"""memplan's GPU figures beside an outside script's, configuration by configuration.

    python -m profiling.folder_compare FOLDER LINES.jsonl

FOLDER is what a folder sweep wrote (`profiling.folder_sweep`, run records); LINES the
outside script's runs, one JSON object a line (``shared/gpu/measure.py``'s, read as
`core.device_runs` reads them). For each configuration both measured ``ok``, one line:
the allocated and reserved peaks of each, and memplan's difference from the script's in
percent. Needs only what the folder sweep needs (no DuckDB, no pandas).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from core import record_files, workloads
from core.device_runs import read_lines
from core.units import format_gib
from core.workloads.base import WorkloadConfig

FIGURES = ("allocated_peak_bytes", "reserved_peak_bytes")


@dataclass(frozen=True)
class Comparison:
    """One configuration: its label, and per figure (memplan's bytes, the script's bytes)."""

    label: str
    figures: dict[str, tuple[int, int]]

    def percent(self, figure: str) -> float:
        """memplan's figure against the script's, in percent (+: memplan's is larger)."""
        ours, theirs = self.figures[figure]
        return 100.0 * (ours - theirs) / theirs

    def line(self) -> str:
        parts = [
            f"{name.removesuffix('_peak_bytes')} {format_gib(ours)} vs {format_gib(theirs)} "
            f"({self.percent(name):+.2f}%)"
            for name, (ours, theirs) in self.figures.items()
        ]
        return f"{self.label}: " + "; ".join(parts)


def _key(columns: dict) -> tuple:
    return tuple(sorted(columns.items()))


def config_label(config: WorkloadConfig) -> str:
    """A configuration in words: network, image, batch, precision and its set knobs."""
    columns = workloads.config_columns(config)
    knobs = "".join(
        f" {name} {columns[name]}" for name in ("base_filters", "levels") if columns.get(name)
    )
    return (
        f"{config.workload} {config.image_label} batch {config.batch_size} "
        f"{config.precision}{knobs}"
    )


def compare(runs: list[dict], lines_path: Path) -> list[Comparison]:
    """The ``ok`` GPU runs of ``runs`` (runs columns) that ``lines_path`` measured ``ok`` too."""
    theirs = {
        _key(workloads.config_columns(run.config)): run
        for run in read_lines(lines_path, default_alloc_conf="")
        if run.status == "ok"
    }
    found = []
    for run in runs:
        if run["status"] != "ok" or run.get("allocated_peak_bytes") is None:
            continue
        config = workloads.config_from_row(run)
        other = theirs.get(_key(workloads.config_columns(config)))
        if other is not None:
            found.append(
                Comparison(
                    config_label(config),
                    {name: (run[name], getattr(other, name)) for name in FIGURES},
                )
            )
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m profiling.folder_compare FOLDER LINES.jsonl", file=sys.stderr)
        return 2
    folder, lines_path = Path(args[0]), Path(args[1])
    runs = [record_files.load(path)[0] for path in record_files.record_paths(folder)]
    found = compare(runs, lines_path)
    for comparison in found:
        print(comparison.line())
    if not found:
        print(f"no configuration measured ok on a GPU both in {folder} and in {lines_path}")
        return 1
    worst = {name: max(abs(c.percent(name)) for c in found) for name in FIGURES}
    print(
        f"{len(found)} configuration(s) in common; largest difference: "
        + ", ".join(f"{name.removesuffix('_peak_bytes')} {v:.2f}%" for name, v in worst.items())
    )
    print(json.dumps({"compared": len(found), "max_abs_percent": worst}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
