"""``memplan size image|batch|buy``: answer a sizing question from a stored model.

``--json`` prints the answer as JSON instead (`answer_json`); ``--verify``
measures an image or batch answer first (`memplan.verify`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from core import workloads
from core.commands import add_commands, positive_int
from core.units import parse_bytes
from memplan import jsonout, model_options, options, verify
from modeling import machines, trainable
from modeling.sizing import DEFAULT_HEADROOM, largest_batch, largest_image_side, memory_to_buy
from modeling.stored import bundle
from modeling.stored import tables as results
from modeling.stored.predictor import Predictor
from presentation import report, verification
from presentation.verification import Claim, Verification


def _add_verify_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--verify",
        action="store_true",
        help="measure the answer and the next size up on this machine (a two-point sweep "
        "under the budget as memory limit, stored as runs): exit 0 when the answer fits, "
        "1 when it does not, 2 when it cannot be verified here",
    )


def prepare_image(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--budget", type=parse_bytes, required=True, help=model_options.BUDGET_HELP)
    parser.add_argument("--batch-size", type=positive_int, required=True)
    model_options.add_model_options(parser)
    _add_verify_option(parser)
    options.add_json_option(parser)


def prepare_batch(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--image-size", required=True, help="one side (144) or all: DxHxW / HxW")
    parser.add_argument("--budget", type=parse_bytes, required=True, help=model_options.BUDGET_HELP)
    model_options.add_model_options(parser)
    _add_verify_option(parser)
    options.add_json_option(parser)


def prepare_buy(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--image-size", required=True, help="one side (144) or all: DxHxW / HxW")
    parser.add_argument("--batch-size", type=positive_int, required=True)
    parser.add_argument(
        "--headroom",
        type=float,
        default=DEFAULT_HEADROOM,
        help=f"fraction on top of the bound (default {DEFAULT_HEADROOM})",
    )
    model_options.add_model_options(parser)
    options.add_json_option(parser)


def stored_models(
    args: argparse.Namespace,
) -> tuple[list[results.Predictor], results.Predictor, machines.MachineChoice, Path]:
    """Every stored model of the machine profile, the one asked for, the profile, the database.

    The database's models, or the bundled ones for its runs, read in memory: nothing
    is written to the database (the bundle is never installed), and in read-only
    mode it is not even created or migrated. A precision or knob value that never
    trained on the profile is refused with the reason (`modeling.trainable.refuse`).
    """
    db_path, machine = _profile(args)
    predictors = bundle.load_predictors(db_path, args.workload, machine.key)
    asked = results.select_predictor(
        predictors,
        lambda: bundle.load_scores(db_path, args.workload, machine.key),
        args.model,
        db_path,
    )
    return predictors, asked, machine, db_path


def asked_model(args: argparse.Namespace) -> tuple[Predictor, machines.MachineChoice, Path]:
    """The one stored model asked for, the profile, the database: `stored_models`, but the
    other models are never decoded (an answer uses one; reading them all took seconds)."""
    db_path, machine = _profile(args)
    asked = bundle.load_predictor(db_path, args.model, args.workload, machine.key)
    return asked, machine, db_path


def _profile(args: argparse.Namespace) -> tuple[Path, machines.MachineChoice]:
    """The database and the machine profile the answer is for; untrainable settings refused."""
    db_path = model_options.db_for_reading(args)
    machine = machines.choose_machine(
        db_path, args.workload, args.machine, model_options.precision(args)
    )
    trainable.refuse(db_path, args.workload, machine.key, model_options.knobs(args))
    return db_path, machine


def _print_answer(machine: machines.MachineChoice, lines: list[str], precision: str) -> None:
    """The machine the answer is for, the answer, why it is not this machine if so, and
    what oneDNN does to an answer at ``precision`` there."""
    print(f"Machine: {machine.sentence()}")
    print("\n".join(lines))
    if machine.note:
        print(f"note: {machine.note}")
    onednn = machine.profile.onednn_note_for(precision) if machine.profile else None
    if onednn:
        print(f"note: {onednn}")


def answer_json(
    args: argparse.Namespace, question: str, machine: machines.MachineChoice, answer: Any
) -> dict[str, Any]:
    """The answer as JSON-ready data: the question, the machine profile, the answer's fields."""
    precision = model_options.precision(args)
    onednn = machine.profile.onednn_note_for(precision) if machine.profile else None
    return {
        "question": question,
        "workload": args.workload,
        "knobs": model_options.knobs(args),
        "machine": {
            "profile": machine.key,
            "label": machine.label,
            "reason": machine.reason,
            "notes": [note for note in (machine.note, onednn) if note],
        },
        "answer": jsonout.plain(answer),
    }


def run_image(args: argparse.Namespace) -> int:
    predictor, machine, db_path = asked_model(args)
    knobs = model_options.knobs(args)
    answer = largest_image_side(
        predictor, args.budget, args.batch_size, knobs, workload=args.workload
    )
    dims = workloads.get(args.workload).DIMS
    claim = verification.image_claim(answer, args.workload, knobs, machine.key, machine.label)
    shown = (report.image_size_lines(answer, dims), answer_json(args, "image", machine, answer))
    return _answer_verified(args, machine, shown, claim, db_path)


def run_batch(args: argparse.Namespace) -> int:
    shape = workloads.get(args.workload).parse_image_shape(args.image_size)
    predictor, machine, db_path = asked_model(args)
    knobs = model_options.knobs(args)
    answer = largest_batch(predictor, args.budget, shape, knobs, workload=args.workload)
    claim = verification.batch_claim(answer, args.workload, knobs, machine.key, machine.label)
    shown = (report.batch_lines(answer), answer_json(args, "batch", machine, answer))
    return _answer_verified(args, machine, shown, claim, db_path)


def _answer_verified(
    args: argparse.Namespace,
    machine: machines.MachineChoice,
    shown: tuple[list[str], dict[str, Any]],
    claim: Claim,
    db_path: Path,
) -> int:
    """The answer (as lines, or as JSON), then what runs say of it: measured first with
    ``--verify``, else as stored."""
    lines, data = shown
    if not args.verify:
        said = verification.verify(claim, verify.runs_for(db_path, claim), args.db)
        if args.json:
            return jsonout.emit({**data, "verification": _verdict(said)})
        _print_answer(machine, [*lines, said.line], model_options.precision(args))
        return 0
    if not args.json:
        _print_answer(machine, lines, model_options.precision(args))
    said = verify.measure(claim, db_path, quiet_stdout=args.json)
    if isinstance(said, int):
        return said  # the sweep was interrupted
    if args.json:
        jsonout.emit({**data, "verification": _verdict(said)})
        return verify.exit_code(said)
    code = verify.exit_code(said)
    print(said.line)
    return code


def _verdict(said: Verification) -> dict[str, str]:
    return {"verdict": said.verdict.value, "text": said.text, "command": said.command}


def run_buy(args: argparse.Namespace) -> int:
    shape = workloads.get(args.workload).parse_image_shape(args.image_size)
    predictor, machine, _ = asked_model(args)
    answer = memory_to_buy(
        predictor,
        shape,
        args.batch_size,
        args.headroom,
        model_options.knobs(args),
        workload=args.workload,
    )
    if args.json:
        return jsonout.emit(answer_json(args, "buy", machine, answer))
    _print_answer(machine, report.memory_lines(answer), model_options.precision(args))
    return 0


IMAGE_SUMMARY = "largest image size that fits a memory budget at a batch size"
BATCH_SUMMARY = "largest batch that fits a memory budget for an image size"
BUY_SUMMARY = "server memory to buy for an image size and batch, with headroom"
COMMANDS = {
    "image": (prepare_image, run_image, IMAGE_SUMMARY),
    "batch": (prepare_batch, run_batch, BATCH_SUMMARY),
    "buy": (prepare_buy, run_buy, BUY_SUMMARY),
}


def prepare(parser: argparse.ArgumentParser) -> None:
    """``size``'s questions, each a subcommand of its own."""
    questions = parser.add_subparsers(dest="question", required=True, metavar="QUESTION")
    add_commands(questions, COMMANDS)
