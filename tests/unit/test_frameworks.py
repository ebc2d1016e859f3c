"""Which framework trains a run: one flag on every measuring command; a missing one says how
to install it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from core import frameworks
from memplan import cli, options
from profiling.jobspec import SweepJob
from profiling.requests import parse_request

# The least each measuring command needs besides the flag.
MEASURING = {"run": ["--image-size", "16"], "sweep": [], "calibrate": []}


@pytest.mark.parametrize("command", list(MEASURING))
def test_every_measuring_command_takes_the_framework_tensorflow_by_default(command: str) -> None:
    parser = cli.build_parser(command)

    assert parser.parse_args([command, *MEASURING[command]]).framework == "tensorflow"
    chosen = parser.parse_args([command, *MEASURING[command], "--framework", "torch"])
    assert chosen.framework == "torch"
    with pytest.raises(SystemExit):
        parser.parse_args([command, *MEASURING[command], "--framework", "jax"])


def test_the_measuring_settings_carry_the_framework_that_trains_the_points() -> None:
    args = cli.build_parser("run").parse_args(["run", "--image-size", "16"])

    assert options.settings(args).framework == frameworks.TENSORFLOW


def test_asking_for_a_framework_that_is_not_installed_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setitem(frameworks.DISTRIBUTIONS, "torch", ("no-such-distribution-here",))
    db = tmp_path / "runs.duckdb"

    code = cli.main(["run", "--framework", "torch", "--image-size", "16", "--db", str(db)])

    assert code == 2 and not db.exists()  # refused before anything was opened or launched
    assert capsys.readouterr().err == (
        "error: --framework torch needs PyTorch, which is not installed in this environment; "
        "install it with `pip install -r requirements-torch.txt` (from the repository root) "
        "and run again\n"
    )


def test_a_launched_sweep_trains_with_the_framework_of_its_request() -> None:
    request = dataclasses.replace(parse_request("16", "1", {}, 1, "2GiB"), framework="torch")

    job = request.job(Path("/db/x.duckdb"))

    assert SweepJob.from_json(job.to_json()).framework == "torch"
