"""``memplan report``: a self-contained HTML sizing report for one question."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import replace
from pathlib import Path

from application import machines, sizing, stored
from core import database, frameworks
from core.errors import ModelingError
from core.units import GIB, parse_budget
from memplan import gpu_size, model_options
from memplan.commands import config_from_args, positive_int
from memplan.size import question_of, stored_models
from presentation import gpu_report_html, sizing_report, sizing_report_html

DESCRIPTION = (
    "write a self-contained HTML sizing report for one question: the decision, "
    "the model and its bound, the evidence, the runs and the published reference points; "
    "print it to PDF from a browser"
)


def prepare(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.add_argument("--image-size", required=True, help="one side (144) or all: DxHxW / HxW")
    parser.add_argument("--batch-size", type=positive_int, required=True)
    parser.add_argument(
        "--budget", type=parse_budget, required=True, help=model_options.BUDGET_HELP
    )
    model_options.add_headroom_option(parser)
    parser.add_argument(
        "--output", type=Path, required=True, help="the HTML file to write, e.g. sizing.html"
    )
    parser.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    model_options.add_model_options(parser)
    gpu_size.add_gpu_options(parser)  # --gpu: the report carries the GPU answer too


def _report_target(output: Path, force: bool) -> Path:
    """Where the report goes; refused before any work if it cannot be written there."""
    if output.is_dir():
        raise ModelingError(
            f"--output {output} is a folder; name a file, e.g. {output}/sizing.html"
        )
    if not output.parent.is_dir():
        raise ModelingError(
            f"folder {output.parent} does not exist; create it first or choose another --output"
        )
    if output.exists() and not force:
        raise ModelingError(f"{output} already exists. Use --force to overwrite it.")
    return output


def _report_command(args: argparse.Namespace, model: str, machine: str | None) -> str:
    """The command that asks the same question again, the model and the machine it is for
    pinned: this machine's key where another profile answered for it, which ``--machine``
    answers the same way, widened (`application.machines.asked_profile`)."""
    words = ["memplan", "report", "--workload", args.workload, *frameworks.flag(args.framework)]
    words += ["--image-size", args.image_size, "--batch-size", str(args.batch_size)]
    words += ["--budget", f"{args.budget / GIB:g}GiB", "--headroom", f"{args.headroom:g}"]
    words += ["--model", model] + (["--machine", machine] if machine else [])
    for knob, value in model_options.knobs(args).items():
        words += [f"--{knob.replace('_', '-')}", str(value)]
    return shlex.join([*words, "--output", str(args.output)])


def _for_machine(machine: machines.MachineChoice) -> str | None:
    """The key ``--machine`` names to ask for the machine ``machine`` answers for."""
    return machine.transfer.asked.key if machine.transfer else machine.key


def run(args: argparse.Namespace) -> int:
    output = _report_target(args.output, args.force)
    # Refuses an image or knob the network cannot take before any model is read.
    config_from_args(args, args.image_size, args.batch_size)
    # One open and one read of the database for the whole report (`core.snapshot`).
    read = stored.read_once(Path(args.db or database.default_db_path()), args.workload)
    models, machine = stored_models(args, read)
    asked = models.pick(args.model)
    runs = read.runs_of(machine.key)
    question = question_of(args, sizing.BUY, models.machine)
    source = sizing_report.ReportSource(
        machine_words=machine.sentence(),
        machine_note=machine.note,
        profile=machine.profile,
        command=_report_command(args, asked.name, _for_machine(machine)),
    )
    built = sizing_report.build_report(replace(question, model=asked.name), models, runs, source)
    html = sizing_report_html.render_html(built)
    if args.gpu is not None:
        html = gpu_report_html.with_gpu_section(html, gpu_size.answered(args, gpu_size.WHICH_GPUS))
    try:
        output.write_text(html, encoding="utf-8")
    except OSError as error:
        raise ModelingError(f"cannot write {output}: {error.strerror or error}") from error
    print(f"wrote {output}")
    print(built.headline)
    return 0
