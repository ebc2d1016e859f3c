"""``python -m modeling``: evaluate the models on stored runs, and answer sizing questions.

Library first, thin CLI (as ``python -m profiling``): each subcommand parses its
flags, calls one function of `modeling`, and prints the result. Every
`MemplanError` (bad input, no stored models, a locked database) becomes one
line ``error: ...`` on stderr and exit code 2.

    python -m modeling evaluate [--db FILE] [--machine KEY] [--seeds 10] [--quick] [--no-store]
    python -m modeling size image --budget 256GiB --batch-size 4 [--machine KEY] [--verify]
    python -m modeling size batch --image-size 144 --budget 64GiB [--verify]
    python -m modeling size buy --image-size 240x240x144 --batch-size 16 [--headroom 0.2]
    python -m modeling report --image-size 240x240x144 --batch-size 16 --budget 256GiB \
        --output sizing.html [--headroom 0.2] [--model NAME] [--machine KEY] [--force]
    python -m modeling export-results data/reference_results [--db FILE]

``size image|batch --verify`` measures the answer and the next size up on this
machine: modeling never imports profiling, so it runs ``python -m profiling
sweep`` as a child (`presentation.verification` builds the sweep), then exits 0
when a run verified the answer, 1 when it refuted it, 2 when it cannot be
verified here.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd

from core import database, profiles, store, workloads
from core.commands import (
    add_commands,
    add_db_option,
    add_knob_options,
    add_workload_option,
    config_from_args,
    given_knobs,
    open_db,
    positive_int,
    run_handler,
)
from core.machine import this_profile
from core.units import GIB, parse_bytes
from modeling import machines, trainable
from modeling.errors import ModelingError
from modeling.estimators.catalogue import catalogue, pick, spec_names
from modeling.evaluation.bounds import DEFAULT_COVERAGE
from modeling.evaluation.fitting import checked_coverage, fit_predictors, with_calibration
from modeling.evaluation.protocol import (
    DEFAULT_EXTRAPOLATION_SEEDS,
    DEFAULT_SEEDS,
    evaluate,
    summarise,
)
from modeling.evaluation.splits import SPLIT_KINDS
from modeling.features import measured_frame
from modeling.sizing import (
    DEFAULT_HEADROOM,
    MAX_HEADROOM,
    largest_batch,
    largest_image_side,
    memory_to_buy,
)
from modeling.stored import bundle, readonly
from modeling.stored import tables as results
from presentation import report, sizing_report, verification
from presentation.verification import Claim, Verdict

BUDGET_HELP = "memory available, e.g. 256GiB, 256GB or 64G; every unit is binary (GB = GiB = 2^30)"
# What `python -m profiling sweep` exits with when Ctrl-C or SIGTERM stopped it (profiling.cli's).
SWEEP_INTERRUPTED_EXIT_CODE = 130
# `size ... --verify`'s exit codes: a run verified the answer, or refuted it (2: cannot tell).
VERIFIED_EXIT_CODE, REFUTED_EXIT_CODE = 0, 1


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (e.g. 0.9), got {text}")
    return value


# --- evaluate ----------------------------------------------------------------------------


def _prepare_evaluate(parser: argparse.ArgumentParser) -> None:
    add_db_option(parser)
    parser.add_argument(
        "--workload",
        choices=list(workloads.WORKLOADS),
        help="evaluate only this network (default: every workload with ok runs, each on its own)",
    )
    parser.add_argument(
        "--machine",
        help="evaluate only this machine profile: a key or a unique prefix (default: every "
        "profile with enough runs, each on its own; `python -m profiling machines` lists them)",
    )
    parser.add_argument(
        "--seeds",
        type=positive_int,
        default=DEFAULT_SEEDS,
        help=f"random 70/30 splits to repeat (default {DEFAULT_SEEDS})",
    )
    parser.add_argument(
        "--extrapolation-seeds",
        type=positive_int,
        default=DEFAULT_EXTRAPOLATION_SEEDS,
        help="repeats of the fixed extrapolation split, with other model seeds "
        f"(default {DEFAULT_EXTRAPOLATION_SEEDS})",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        metavar="MODEL",
        help=f"only these (default all): {', '.join(spec_names(catalogue()))}",
    )
    parser.add_argument(
        "--splits",
        nargs="+",
        choices=SPLIT_KINDS,
        default=list(SPLIT_KINDS),
        help="which split kinds to score (default all; the knob split only where a knob varies)",
    )
    parser.add_argument(
        "--coverage",
        type=_fraction,
        default=DEFAULT_COVERAGE,
        help=f"coverage of the stored upper bounds (default {DEFAULT_COVERAGE})",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny symbolic-regression settings: a smoke test, not a result",
    )
    parser.add_argument(
        "--store-db", type=Path, default=None, help="store results in this database instead of --db"
    )
    parser.add_argument(
        "--no-store", dest="store", action="store_false", help="print only; store nothing"
    )


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _db_for_reading(args: argparse.Namespace) -> Path:
    """The database to read; in read-only mode only an existing one, opened for nothing else."""
    if readonly.read_only():
        return readonly.existing(args.db or database.default_db_path())
    return open_db(args)


def _evaluate(args: argparse.Namespace) -> int:
    if args.store and readonly.read_only():
        raise ModelingError(
            f"{readonly.READ_ONLY_ENV_VAR} is set, so nothing is stored: pass --no-store to "
            "score the models without storing them, or unset it"
        )
    db_path = _db_for_reading(args)
    specs = pick(catalogue(quick=args.quick), args.models)
    runs = store.load_runs(db_path, status="ok", workload=args.workload)
    runs = profiles.with_keys(runs)
    groups = _evaluation_groups(runs, args.machine)
    if not groups:
        raise ModelingError(
            f"{db_path} has no ok runs to evaluate; measure some with `python -m profiling sweep`"
        )
    frame = measured_frame(runs)
    evaluated = 0
    for workload, machine in groups:
        name = f"{workload} on {machine.label} (profile {machine.key})"
        if not machine.determined:
            # Never fitted together with anything: the runs did not say which CPU they had.
            _progress(f"skipped {name}: its runs did not record their machine")
            continue
        key = profiles.KEY_COLUMN
        chosen = runs[(runs["workload"] == workload) & (runs[key] == machine.key)]
        try:
            _evaluate_group(args, db_path, workload, machine, specs, frame.loc[chosen["run_id"]])
        except ModelingError as error:
            # Evaluating every group: one with too few runs must not stop the others.
            if len(groups) == 1:
                raise ModelingError(f"{name}: {error}") from error
            _progress(f"skipped {name}: {error}")
        else:
            evaluated += 1
    if not evaluated:
        raise ModelingError(
            "no workload and machine profile has enough runs to evaluate; measure more "
            "(python -m profiling sweep, or python -m profiling calibrate for this machine)"
        )
    return 0


def _evaluation_groups(
    runs: pd.DataFrame, requested: str | None
) -> list[tuple[str, profiles.MachineProfile]]:
    """(workload, profile) pairs to evaluate, each on its own runs (keyed: `with_keys`)."""
    known = profiles.profiles_in(runs)
    if requested is not None:
        wanted = profiles.resolve(requested, known).key
        known = {wanted: known[wanted]}
    pairs = runs[["workload", profiles.KEY_COLUMN]].drop_duplicates()
    chosen = [(str(w), known[key]) for w, key in pairs.itertuples(index=False) if key in known]
    return sorted(chosen, key=lambda pair: (pair[0], pair[1].label, pair[1].key))


def _evaluate_group(
    args: argparse.Namespace,
    db_path: Path,
    workload: str,
    machine: profiles.MachineProfile,
    specs: list,
    frame: pd.DataFrame,
) -> None:
    """Score, fit and store one workload's models on one machine profile's runs only."""
    _progress(f"evaluating {workloads.get(workload).TITLE} on {machine.label}")
    evaluation = evaluate(
        frame,
        specs,
        seeds=range(args.seeds),
        kinds=args.splits,
        progress=_progress,
        extrapolation_seeds=range(args.extrapolation_seeds),
    )
    seeds = f"seeds: {args.seeds} random split(s), {args.extrapolation_seeds} extrapolation"
    print(
        f"{workload} on {machine.label} (profile {machine.key}): {evaluation.n_runs} ok run(s), "
        f"{evaluation.n_points} configuration(s) from {db_path}; {seeds}\n"
    )
    print(report.markdown_table(summarise(evaluation, specs)))
    if not args.store:
        return
    # The bounds' evidence: held-out predictions counted by configuration, stored with the rest.
    evaluation = with_calibration(evaluation, frame, specs, progress=_progress)
    _progress(f"fitting the final {workload} models on all its runs")
    predictors = fit_predictors(specs, frame, evaluation, args.coverage)
    print("\n" + report.formulas_table(predictors))
    checked = {
        p.name: checked_coverage(evaluation, frame, p.name, args.coverage) for p in predictors
    }
    print("\n" + report.bounds_table(predictors, checked))
    target = database.ensure_database(args.store_db) if args.store_db else db_path
    command = shlex.join(["python", "-m", "modeling", *sys.argv[1:]])
    evaluation_id = results.store_results(
        target, evaluation, predictors, command, workload=workload, machine=machine.key
    )
    print(
        f"\nstored {workload} evaluation {evaluation_id[:12]} and {len(predictors)} "
        f"model(s) in {target}\n"
    )


# --- export-results ----------------------------------------------------------------------


def _prepare_export(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", type=Path, help="folder for the four Parquet files")
    add_workload_option(parser)
    _add_machine_option(parser)
    add_db_option(parser)


def _export(args: argparse.Namespace) -> int:
    db_path = _db_for_reading(args)
    machine = machines.choose_machine(db_path, args.workload, args.machine)
    directory = bundle.export_results(db_path, args.directory, args.workload, machine.key)
    tables = ", ".join(results.RESULT_TABLES)
    print(
        f"wrote the latest {args.workload} evaluation's {tables}, {machine.sentence()}, "
        f"to {directory}"
    )
    return 0


# --- size --------------------------------------------------------------------------------


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    add_db_option(parser)
    parser.add_argument(
        "--model",
        default=results.BEST,
        help="a stored model (see `evaluate`); default: best, the lowest "
        "mean error on its weakest split (random, extrapolation or knob)",
    )
    add_workload_option(parser)
    _add_machine_option(parser)
    add_knob_options(parser)


def _add_machine_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--machine",
        help="the machine profile to answer for: a key or a unique prefix (default: this "
        "machine's if it has fitted models, else the bundled reference's)",
    )


def _knobs(args: argparse.Namespace) -> dict:
    return given_knobs(args, args.workload)


def _precision(args: argparse.Namespace) -> str:
    """The precision asked for, else the workload network's own."""
    return _knobs(args).get("precision", workloads.get(args.workload).Config.precision)


def _prepare_size_image(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--budget",
        type=parse_bytes,
        required=True,
        help=BUDGET_HELP,
    )
    parser.add_argument("--batch-size", type=positive_int, required=True)
    _add_model_options(parser)
    _add_verify_option(parser)


def _add_verify_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--verify",
        action="store_true",
        help="measure the answer and the next size up on this machine (a two-point sweep "
        "under the budget as memory limit, stored as runs): exit 0 when the answer fits, "
        "1 when it does not, 2 when it cannot be verified here",
    )


def _stored_models(
    args: argparse.Namespace,
) -> tuple[list[results.Predictor], results.Predictor, machines.MachineChoice, Path]:
    """Every stored model of the machine profile, the one asked for, the profile, the database.

    The database's models, or the bundled ones for its runs, read in memory: nothing
    is written to the database (the bundle is never installed), and in read-only
    mode it is not even created or migrated. A precision or knob value that never
    trained on the profile is refused with the reason (`modeling.trainable.refuse`).
    """
    db_path = _db_for_reading(args)
    machine = machines.choose_machine(db_path, args.workload, args.machine, _precision(args))
    trainable.refuse(db_path, args.workload, machine.key, _knobs(args))
    predictors = bundle.load_predictors(db_path, args.workload, machine.key)
    asked = results.select_predictor(
        predictors,
        lambda: bundle.load_scores(db_path, args.workload, machine.key),
        args.model,
        db_path,
    )
    return predictors, asked, machine, db_path


def _stored_model(args: argparse.Namespace) -> tuple[results.Predictor, machines.MachineChoice]:
    """The model asked for and the machine profile it is for (`_stored_models`)."""
    _, asked, machine, _ = _stored_models(args)
    return asked, machine


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


def _size_image(args: argparse.Namespace) -> int:
    _, predictor, machine, db_path = _stored_models(args)
    knobs = _knobs(args)
    answer = largest_image_side(
        predictor, args.budget, args.batch_size, knobs, workload=args.workload
    )
    dims = workloads.get(args.workload).DIMS
    claim = verification.image_claim(answer, args.workload, knobs, machine.key, machine.label)
    return _answer_verified(args, machine, report.image_size_lines(answer, dims), claim, db_path)


def _prepare_size_batch(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--image-size", required=True, help="one side (144) or all: DxHxW / HxW")
    parser.add_argument("--budget", type=parse_bytes, required=True, help=BUDGET_HELP)
    _add_model_options(parser)
    _add_verify_option(parser)


def _size_batch(args: argparse.Namespace) -> int:
    shape = workloads.get(args.workload).parse_image_shape(args.image_size)
    _, predictor, machine, db_path = _stored_models(args)
    knobs = _knobs(args)
    answer = largest_batch(predictor, args.budget, shape, knobs, workload=args.workload)
    claim = verification.batch_claim(answer, args.workload, knobs, machine.key, machine.label)
    return _answer_verified(args, machine, report.batch_lines(answer), claim, db_path)


def _answer_verified(
    args: argparse.Namespace,
    machine: machines.MachineChoice,
    lines: list[str],
    claim: Claim,
    db_path: Path,
) -> int:
    """The answer, then what runs say of it: measured first with ``--verify``, else as stored."""
    if not args.verify:
        said = verification.verify(claim, _runs(db_path, claim), args.db)
        _print_answer(machine, [*lines, said.line], _precision(args))
        return 0
    _print_answer(machine, lines, _precision(args))
    return _verify(claim, db_path)


def _runs(db_path: Path, claim: Claim) -> pd.DataFrame:
    return store.load_runs(db_path, workload=claim.workload)


def _verify(claim: Claim, db_path: Path) -> int:
    """Measure ``claim``'s two points with ``python -m profiling sweep``, then say what they show.

    The sweep runs as a child with this process's terminal, so its progress bar shows;
    it skips a point already measured, so verifying twice measures nothing twice.
    """
    here = this_profile(claim.answered.precision).key
    problem = verification.refusal(claim, here, verification.safe_limit_bytes())
    if problem:
        raise ModelingError(f"cannot verify here: {problem}")
    if readonly.read_only():
        raise ModelingError(
            f"cannot verify here: {readonly.READ_ONLY_ENV_VAR} is set, so nothing is measured "
            "or stored; unset it to verify"
        )
    # The child runs in the repository root: a relative --db must name the same file.
    sweep_args = verification.sweep_request(claim).sweep_args(db_path.resolve())
    print(f"verifying: {shlex.join(['python', '-m', 'profiling', *sweep_args])}", flush=True)
    code = _run_sweep([sys.executable, "-m", "profiling", *sweep_args])
    if code == SWEEP_INTERRUPTED_EXIT_CODE:
        return code
    if code != 0:
        raise ModelingError(
            f"the verification sweep failed (exit code {code}); its messages are above"
        )
    said = verification.verify(claim, _runs(db_path, claim))
    if said.verdict is Verdict.VERIFIED:
        print(said.line)
        return VERIFIED_EXIT_CODE
    if said.verdict is Verdict.REFUTED:
        print(said.line)
        return REFUTED_EXIT_CODE
    raise ModelingError(said.line)


def _run_sweep(argv: list[str]) -> int:
    """Run the sweep ``argv`` to its end, in this terminal; its exit code."""
    process = subprocess.Popen(argv, cwd=database.REPO_ROOT)
    try:
        return process.wait()
    except KeyboardInterrupt:
        # The sweep got the same Ctrl-C: let it discard its point and record itself interrupted.
        return process.wait()


def _prepare_size_buy(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--image-size", required=True, help="one side (144) or all: DxHxW / HxW")
    parser.add_argument("--batch-size", type=positive_int, required=True)
    parser.add_argument(
        "--headroom",
        type=float,
        default=DEFAULT_HEADROOM,
        help=f"fraction on top of the bound (default {DEFAULT_HEADROOM})",
    )
    _add_model_options(parser)


def _size_buy(args: argparse.Namespace) -> int:
    shape = workloads.get(args.workload).parse_image_shape(args.image_size)
    predictor, machine = _stored_model(args)
    answer = memory_to_buy(
        predictor, shape, args.batch_size, args.headroom, _knobs(args), workload=args.workload
    )
    _print_answer(machine, report.memory_lines(answer), _precision(args))
    return 0


# --- report ------------------------------------------------------------------------------


def _headroom(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= MAX_HEADROOM:
        raise argparse.ArgumentTypeError(
            f"must be a fraction between 0 and {MAX_HEADROOM:g} (0.2 = 20%), got {text}"
        )
    return value


def _prepare_report(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--image-size", required=True, help="one side (144) or all: DxHxW / HxW")
    parser.add_argument("--batch-size", type=positive_int, required=True)
    parser.add_argument("--budget", type=parse_bytes, required=True, help=BUDGET_HELP)
    parser.add_argument(
        "--headroom",
        type=_headroom,
        default=DEFAULT_HEADROOM,
        help=f"fraction on top of the bound (default {DEFAULT_HEADROOM})",
    )
    parser.add_argument(
        "--output", type=Path, required=True, help="the HTML file to write, e.g. sizing.html"
    )
    parser.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    _add_model_options(parser)


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
    """The command that asks the same question again, the model and profile pinned."""
    words = ["python", "-m", "modeling", "report", "--workload", args.workload]
    words += ["--image-size", args.image_size, "--batch-size", str(args.batch_size)]
    words += ["--budget", f"{args.budget / GIB:g}GiB", "--headroom", f"{args.headroom:g}"]
    words += ["--model", model] + (["--machine", machine] if machine else [])
    for knob, value in _knobs(args).items():
        words += [f"--{knob.replace('_', '-')}", str(value)]
    return shlex.join([*words, "--output", str(args.output)])


def _report(args: argparse.Namespace) -> int:
    output = _report_target(args.output, args.force)
    config = config_from_args(args, args.image_size, args.batch_size)
    predictors, asked, machine, db_path = _stored_models(args)
    runs = store.load_runs(db_path, workload=args.workload, machine=machine.key)
    built = sizing_report.build_report(
        predictors,
        config,
        runs,
        budget_gib=args.budget / GIB,
        headroom_pct=args.headroom * 100,
        asked_model=asked.name,
        machine_words=machine.sentence(),
        machine_key=machine.key,
        machine_note=machine.note,
        profile=machine.profile,
        command=_report_command(args, asked.name, machine.key),
    )
    try:
        output.write_text(sizing_report.render_html(built), encoding="utf-8")
    except OSError as error:
        raise ModelingError(f"cannot write {output}: {error.strerror or error}") from error
    print(f"wrote {output}")
    print(built.headline)
    return 0


SIZE_COMMANDS = {
    "image": (
        _prepare_size_image,
        _size_image,
        "largest image size that fits a memory budget at a batch size",
    ),
    "batch": (
        _prepare_size_batch,
        _size_batch,
        "largest batch that fits a memory budget for an image size",
    ),
    "buy": (
        _prepare_size_buy,
        _size_buy,
        "server memory to buy for an image size and batch, with headroom",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m modeling",
        description="Predict the peak memory of 3D U-Net training and size machines for it.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    evaluate_parser = commands.add_parser(
        "evaluate",
        help="score every model on the stored runs and store the fitted models",
        description="score every model on the stored runs and store the fitted models",
    )
    _prepare_evaluate(evaluate_parser)
    evaluate_parser.set_defaults(handler=_evaluate)
    export = commands.add_parser(
        "export-results",
        help="write the latest evaluation as Parquet (the bundled results)",
        description="write the latest evaluation and its models as Parquet files; "
        "data/reference_results is made this way",
    )
    _prepare_export(export)
    export.set_defaults(handler=_export)
    report_parser = commands.add_parser(
        "report",
        help="write a self-contained HTML sizing report (decision, evidence, chart, runs)",
        description="write a self-contained HTML sizing report for one question: the decision, "
        "the model and its bound, the evidence, the runs and the published reference points; "
        "print it to PDF from a browser",
    )
    _prepare_report(report_parser)
    report_parser.set_defaults(handler=_report)
    size = commands.add_parser(
        "size",
        help="answer a sizing question from a stored model",
        description="answer a sizing question from a stored model",
    )
    questions = size.add_subparsers(dest="question", required=True, metavar="QUESTION")
    add_commands(questions, SIZE_COMMANDS)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_handler(build_parser().parse_args(argv))
