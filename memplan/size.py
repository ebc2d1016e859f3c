"""``memplan size image|batch|buy``: answer a sizing question from a stored model.

Each subcommand builds one `application.sizing.SizingQuestion` and prints what
`application.sizing.answer` says, as the Sizing page does; ``--headroom PCT``
(default 20, the page's) is kept free of the budget. ``--json`` prints the
answer as JSON instead (`answer_json`, with the headroom and the usable
budget); ``--verify`` measures an image or batch answer first (`memplan.verify`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from application import machines, sizing, stored, widening
from application.machines import Transfer
from application.models import load_evidence
from application.sizing import Models, SizingAnswer, SizingQuestion
from application.verify import Verification
from core import database, workloads
from core.snapshot import Snapshot
from core.units import parse_budget
from memplan import gpu_size, jsonout, model_options, options
from memplan.commands import add_commands, positive_int
from presentation import report
from presentation.evidence import evidence_line


def _add_verify_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--verify",
        action="store_true",
        help="measure the answer and the next size up on this machine (a two-point sweep "
        "under the budget less its headroom as memory limit, stored as runs): exit 0 when "
        "the answer fits, 1 when it does not, 2 when it cannot be verified here",
    )


def _add_budget_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--budget", type=parse_budget, required=True, help=model_options.BUDGET_HELP
    )


def prepare_image(parser: argparse.ArgumentParser) -> None:
    _add_budget_option(parser)
    model_options.add_headroom_option(parser)
    parser.add_argument("--batch-size", type=positive_int, required=True)
    model_options.add_model_options(parser)
    _add_verify_option(parser)
    options.add_json_option(parser)


def prepare_batch(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--image-size", required=True, help="one side (144) or all: DxHxW / HxW")
    _add_budget_option(parser)
    model_options.add_headroom_option(parser)
    model_options.add_model_options(parser)
    _add_verify_option(parser)
    options.add_json_option(parser)


def prepare_buy(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--image-size", required=True, help="one side (144) or all: DxHxW / HxW")
    parser.add_argument("--batch-size", type=positive_int, required=True)
    model_options.add_headroom_option(parser)
    model_options.add_model_options(parser)
    options.add_json_option(parser)


def question_of(args: argparse.Namespace, kind: str, machine: str | None) -> SizingQuestion:
    """The question the command line asks, for the machine profile ``machine``."""
    image_size = getattr(args, "image_size", None)
    shape = None
    if image_size is not None:
        shape = workloads.get(args.workload).parse_image_shape(image_size)
    return SizingQuestion(
        kind=kind,
        workload=args.workload,
        machine=machine,
        knobs=tuple(model_options.knobs(args).items()),
        budget_bytes=getattr(args, "budget", None),
        headroom_pct=args.headroom,
        model=args.model,
        image_shape=shape,
        batch_size=getattr(args, "batch_size", None),
    )


def stored_models(
    args: argparse.Namespace, read: Snapshot
) -> tuple[Models, machines.MachineChoice]:
    """The stored models of the machine profile asked for in the snapshot ``read`` of the
    database, and that profile.

    The database's models, or the bundled ones for its runs, read in memory: nothing
    is written to the database (the bundle is never installed), and in read-only
    mode it is not even created or migrated (`application.stored.read_once`).
    """
    # Only the model asked for is decoded: an answer uses one, and reading a forest back
    # takes ~0.3 s on the 2-core VM.
    knobs = model_options.knobs(args)
    return sizing.load_models(read, args.machine, knobs, only=args.model, framework=args.framework)


def _print_answer(machine: machines.MachineChoice, lines: list[str], precision: str) -> None:
    """The machine the answer is for (its label names the framework: "..., PyTorch 2.13"),
    the answer, its cores and what is known of more, why it is not this machine if so, and
    what oneDNN does to an answer at ``precision`` there."""
    print(f"Machine: {machine.sentence()}")
    print("\n".join(lines))
    more = _more_cores(machine)
    if more is not None:
        print(f"Cores: {more.sentence}.")
    if machine.transfer:
        print(f"note: {machine.transfer.sentence()}.")
    if machine.note:
        print(f"note: {machine.note}")
    onednn = machine.profile.onednn_note_for(precision) if machine.profile else None
    if onednn:
        print(f"note: {onednn}")


def answer_json(
    args: argparse.Namespace, machine: machines.MachineChoice, said: SizingAnswer
) -> dict[str, Any]:
    """The answer as JSON-ready data: the question, its headroom and usable budget, the
    machine profile, the answer's fields."""
    precision = model_options.precision(args)
    onednn = machine.profile.onednn_note_for(precision) if machine.profile else None
    question = said.question
    return {
        "question": question.kind,
        "workload": args.workload,
        "framework": args.framework,
        "knobs": model_options.knobs(args),
        "budget_bytes": question.budget_bytes,
        "headroom_pct": question.headroom_pct,
        "usable_budget_bytes": question.usable_bytes,
        "model": said.model,
        "machine": {
            "profile": machine.key,
            "label": machine.label,
            "reason": machine.reason,
            "facts": jsonout.plain(said.machine),
            "notes": [note for note in (machine.note, onednn) if note],
            "transfer": _transfer_json(machine.transfer),
            "cores": _cores_json(_more_cores(machine)),
        },
        "answer": jsonout.plain(said.found),
    }


def _more_cores(machine: machines.MachineChoice) -> widening.MoreCores | None:
    """The answering profile's cores and what memplan ships about more (`core.cores`)."""
    profile = machine.profile
    if profile is None:
        return None
    return widening.more_cores(profile.framework, machine.facts.cores)


def _cores_json(more: widening.MoreCores | None) -> dict[str, Any] | None:
    """The profile's core count, what is known of more, and the memory to buy's widening."""
    if more is None:
        return None
    return {
        "profile_cores": more.cores,
        "memory_to_buy_widening": more.factor,
        "evidence": more.evidence,
        "sentence": more.sentence,
    }


def _transfer_json(transfer: Transfer | None) -> dict[str, Any] | None:
    """Which profile answered for a machine without models, why, and the widening; None
    when the answer is for the profile's own machine."""
    if transfer is None:
        return None
    return {
        "answered_by": transfer.nearest.key,
        "reasons": list(transfer.nearest.reasons),
        "widening_factor": transfer.factor,
        "evidence": transfer.sentence(),
    }


@dataclass(frozen=True)
class Asked:
    """A question the command line asked: its answer, the profile it is for, the database,
    and what the answer rests on (`presentation.evidence`), in words."""

    said: SizingAnswer
    machine: machines.MachineChoice
    db_path: Path
    rests_on: str


def _ask(args: argparse.Namespace, kind: str) -> Asked:
    db_path = Path(args.db or database.default_db_path())
    # One open and one read of the runs for the whole answer (`core.snapshot`): the
    # functions it calls read for themselves before: 22 connections and 9 reads of the runs
    # for `size buy`. A verifying sweep writes after it.
    read = stored.read_once(db_path, args.workload)
    models, machine = stored_models(args, read)
    question = question_of(args, kind, models.machine)
    runs = None if kind == sizing.BUY else read.runs
    said = sizing.answer(question, models, runs, args.db)
    evidence = load_evidence(read, said.question.machine)
    return Asked(said, machine, db_path, evidence_line(evidence, [said.model_title or said.model]))


def run_image(args: argparse.Namespace) -> int:
    asked = _ask(args, sizing.IMAGE)
    dims = workloads.get(args.workload).DIMS
    lines = [*report.image_size_lines(asked.said.found, dims), asked.rests_on]
    return _answer_verified(args, asked, lines)


def run_batch(args: argparse.Namespace) -> int:
    asked = _ask(args, sizing.BATCH)
    return _answer_verified(args, asked, [*report.batch_lines(asked.said.found), asked.rests_on])


def _answer_verified(args: argparse.Namespace, asked: Asked, lines: list[str]) -> int:
    """The answer (as lines, or as JSON), then what runs say of it: measured first with
    ``--verify``, else as stored."""
    said, machine, db_path = asked.said, asked.machine, asked.db_path
    data = answer_json(args, machine, said)
    lines = [*lines, report.headroom_line(said.question)]
    assert said.claim is not None and said.verification is not None
    if not args.verify:
        if args.json:
            return jsonout.emit({**data, "verification": _verdict(said.verification)})
        _print_answer(machine, [*lines, said.verification.line], model_options.precision(args))
        return 0
    if not args.json:
        _print_answer(machine, lines, model_options.precision(args))
    from memplan import verify  # the sweep machinery: imported only to measure (cold start)

    try:
        measured = verify.measure(said.claim, db_path, quiet_stdout=args.json)
    except verify.SweepStopped as stopped:  # interrupted: the sweep said so
        return stopped.code
    if args.json:
        jsonout.emit({**data, "verification": _verdict(measured)})
        return verify.exit_code(measured)
    code = verify.exit_code(measured)
    print(measured.line)
    return code


def _verdict(said: Verification) -> dict[str, str]:
    return {"verdict": said.verdict.value, "text": said.text, "command": said.command}


def run_buy(args: argparse.Namespace) -> int:
    asked = _ask(args, sizing.BUY)
    if args.json:
        return jsonout.emit(answer_json(args, asked.machine, asked.said))
    lines = [*report.memory_lines(asked.said.found), asked.rests_on]
    _print_answer(asked.machine, lines, model_options.precision(args))
    return 0


IMAGE_SUMMARY = "largest image size that fits a host RAM budget (less its headroom) at a batch"
BATCH_SUMMARY = "largest batch that fits a host RAM budget (less its headroom) for an image size"
BUY_SUMMARY = "server host RAM to buy for an image size and batch, with headroom"
COMMANDS = {
    "image": (prepare_image, run_image, IMAGE_SUMMARY),
    "batch": (prepare_batch, run_batch, BATCH_SUMMARY),
    "buy": (prepare_buy, run_buy, BUY_SUMMARY),
    "gpu": (gpu_size.prepare, gpu_size.run, gpu_size.SUMMARY),
}


def prepare(parser: argparse.ArgumentParser) -> None:
    """``size``'s questions, each a subcommand of its own."""
    questions = parser.add_subparsers(dest="question", required=True, metavar="QUESTION")
    add_commands(questions, COMMANDS)
