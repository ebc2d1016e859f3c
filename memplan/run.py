"""``memplan run``: profile one configuration in a fresh process and store the run."""

from __future__ import annotations

import argparse

from application.runs import run_point
from core import store
from memplan import options
from memplan.commands import add_knob_options, add_workload_option, config_from_args, open_db
from memplan.exitcodes import FAILED_EXIT_CODE, SUCCESS_EXIT_CODE


def prepare(parser: argparse.ArgumentParser) -> None:
    add_workload_option(parser)
    parser.add_argument(
        "--image-size",
        required=True,
        help="one side (144) or every side: DxHxW for the U-Net (240x240x144), HxW for AlexNet",
    )
    parser.add_argument("--batch-size", type=int, default=1)
    add_knob_options(parser)
    options.add_measure_options(parser)
    options.add_device_option(parser)


def run(args: argparse.Namespace) -> int:
    settings = options.settings(args)
    config = config_from_args(args, args.image_size, args.batch_size)
    db_path = open_db(args, writes="`run`")
    record = run_point(config, settings)
    store.insert_run(db_path, record)
    print(
        f"{record.status}: {config.image_label} batch {config.batch_size}, "
        f"sampled peak {options.gib(record.peak_sampled_bytes)}, "
        f"high-water mark {options.gib(record.peak_hwm_bytes)}, {record.wall_s:.1f} s "
        f"(run {record.run_id[:12]} in {db_path})"
    )
    if record.allocated_peak_bytes is not None:
        print(
            f"GPU {record.gpu_name}: allocated peak {options.gib(record.allocated_peak_bytes)}, "
            f"reserved peak {options.gib(record.reserved_peak_bytes)}, NVML used peak "
            f"{options.gib(record.nvml_used_peak_bytes)}, CUDA context "
            f"{options.gib(record.context_bytes)}"
        )
    if record.message:
        print(record.message)
    return SUCCESS_EXIT_CODE if record.status == "ok" else FAILED_EXIT_CODE
