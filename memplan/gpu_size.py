"""``memplan size gpu largest-cube|largest-batch|which-gpus``: GPU memory sizing questions.

Each subcommand builds one `application.gpu_sizing.GpuQuestion` and prints what
`application.gpu_sizing.ask` says (`presentation.gpu_sizing_text`), from the GPU
profiles of the database (the default database holds the bundled H200 runs):
``--gpu`` a listed size (24GB ... 141GB: its usable memory, not the marketing size) or
the usable memory as the framework reports it (75GiB); default the profile's own GPU.
``--precision`` and ``--alloc-conf`` are knobs of the answer; ``--json`` prints the
answer as JSON instead.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from application import gpu_models
from application.gpu_sizing import (
    LARGEST_BATCH,
    LARGEST_CUBE,
    WHICH_GPUS,
    GpuAnswer,
    GpuQuestion,
    ask,
)
from core import database, workloads
from core.gpu_cards import SIZES_GB
from memplan import jsonout, options
from memplan.commands import (
    add_commands,
    add_db_option,
    add_knob_options,
    add_workload_option,
    given_knobs,
    positive_int,
)
from presentation import gpu_sizing_text

GPU_HELP = (
    f"the GPU: a listed size ({', '.join(f'{size}GB' for size in SIZES_GB)}: the memory the "
    "framework reports as usable on it, not the marketing size) or the usable memory your "
    "framework reports, e.g. 75GiB (default: the answering profile's own GPU)"
)
ALLOC_CONF_HELP = (
    "PYTORCH_CUDA_ALLOC_CONF of the training: '' (the allocator's default) or "
    f"{gpu_models.EXPANDABLE} (not measured: the default's bound is kept, and said so)"
)


def add_gpu_options(parser: argparse.ArgumentParser) -> None:
    """The options every GPU question shares (and ``memplan report --gpu`` reads)."""
    parser.add_argument("--gpu", default=None, help=GPU_HELP)
    parser.add_argument(
        "--alloc-conf",
        default=gpu_models.DEFAULT_ALLOC_CONF,
        choices=gpu_models.ALLOC_CONFS,
        help=ALLOC_CONF_HELP,
    )
    parser.add_argument(
        "--gpu-profile", default=None, help="a GPU profile key (default: the nearest)"
    )


def _common(parser: argparse.ArgumentParser) -> None:
    add_gpu_options(parser)
    add_db_option(parser)
    add_workload_option(parser)
    add_knob_options(parser)
    options.add_json_option(parser)


def prepare_cube(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch-size", type=positive_int, required=True)
    _common(parser)


def prepare_batch(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--image-size", required=True, help="one side (144) or all: DxHxW / HxW")
    _common(parser)


def prepare_which(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--image-size", required=True, help="one side (144) or all: DxHxW / HxW")
    parser.add_argument("--batch-size", type=positive_int, required=True)
    _common(parser)


def question_of(args: argparse.Namespace, kind: str) -> GpuQuestion:
    """The GPU question the command line asks."""
    knobs = given_knobs(args, args.workload)
    module = workloads.get(args.workload)
    precision = knobs.pop("precision", module.Config.precision)
    image_size = getattr(args, "image_size", None)
    return GpuQuestion(
        kind=kind,
        workload=args.workload,
        precision=precision,
        batch_size=getattr(args, "batch_size", None),
        image_shape=module.parse_image_shape(image_size) if image_size else None,
        gpu=args.gpu,
        alloc_conf=args.alloc_conf,
        profile=args.gpu_profile,
        knobs=tuple(sorted(knobs.items())),
    )


def answered(args: argparse.Namespace, kind: str) -> GpuAnswer:
    """The answer to the question the command line asks, from its database."""
    return ask(question_of(args, kind), Path(args.db or database.default_db_path()))


def _run(args: argparse.Namespace, kind: str) -> int:
    said = answered(args, kind)
    if args.json:
        return jsonout.emit(gpu_sizing_text.answer_data(said))
    print("\n".join(gpu_sizing_text.answer_lines(said)))
    return 0


def run_cube(args: argparse.Namespace) -> int:
    return _run(args, LARGEST_CUBE)


def run_batch(args: argparse.Namespace) -> int:
    return _run(args, LARGEST_BATCH)


def run_which(args: argparse.Namespace) -> int:
    return _run(args, WHICH_GPUS)


COMMANDS: dict[str, Any] = {
    LARGEST_CUBE: (prepare_cube, run_cube, "largest cube that fits a GPU at a batch size"),
    LARGEST_BATCH: (prepare_batch, run_batch, "largest batch that fits a GPU at an image size"),
    WHICH_GPUS: (
        prepare_which,
        run_which,
        "which GPU sizes fit an image size at a batch size, and what would make it fit",
    ),
}
SUMMARY = "GPU memory: largest cube, largest batch, which GPU sizes fit (not host RAM)"


def prepare(parser: argparse.ArgumentParser) -> None:
    """``size gpu``'s questions, each a subcommand of its own."""
    questions = parser.add_subparsers(dest="gpu_question", required=True, metavar="QUESTION")
    add_commands(questions, COMMANDS)


def run(args: argparse.Namespace) -> int:  # never called: each question sets its own handler
    raise AssertionError(f"no GPU question chosen: {args!r}")
