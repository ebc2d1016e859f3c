"""Published reference points: what the study memplan is built on reported, beside our runs.

Dell EMC and Intel trained the same kind of 3D U-Net on BraTS volumes of
240x240x144 at batch 16 (Dell EMC white paper "Overcoming the memory bottleneck
in AI healthcare", 2019, summarised by Intel in "Addressing the Memory
Bottleneck in AI Model Training"; the server outcomes are from the same study).
They are shown as labelled points with their software stack, never fitted: a
different stack, thread count and implementation make them a different
measurement.

Nothing here is measured by memplan; every figure is the publication's, in its
own words (``quote``) beside the number a chart draws.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.units import GIB

# The published study's configuration and stack.
STUDY_IMAGE_SHAPE = (240, 240, 144)
STUDY_BATCH_SIZE = 16
STUDY_STACK = (
    "TensorFlow 1.11 with MKL-DNN (DNNL), Keras, FP32, 80 intra-op threads, "
    "4-socket Intel Xeon Gold 6248 (80 cores), 1.5 TB DDR4; IntelAI/unet 3D U-Net"
)
STUDY_SOURCE = (
    "Dell EMC / Intel, 'Overcoming the memory bottleneck in AI healthcare' (2019); "
    "Intel, 'Addressing the Memory Bottleneck in AI Model Training'"
)
# Why the study's figures ("almost 1 TB"; a 384 GB server fitting only half-size images)
# sit beside a far smaller answer, in the two sentences a buyer reads beside both: what
# differs between its measurement and ours (issue 42, point 6).
WHY_OURS_DIFFER = (
    "Why the study needed almost 1 TB (and a 384 GB server fit only half-size images) while "
    "the answers here are far smaller: the study ran TensorFlow 1.11 with Intel's MKL-DNN "
    "build, in graph mode with 80 intra-op threads on a 4-socket, 80-core Xeon Gold 6248 "
    "server, on the IntelAI/unet code, and reported single runs; ours are TensorFlow 2.21 "
    "with oneDNN and Keras 3 on memplan's own U-Net, on the machines that ran them (2 cores "
    "for the bundled profiles), each answer an upper bound fitted over many measured runs. "
    "Peaks differ by stack and machine even for one network, so the published figures are "
    "context, not data our models are fitted to: size for the stack you will run, and "
    "measure a point of it before buying."
)


@dataclass(frozen=True)
class PublishedPoint:
    """One published outcome for the study's configuration."""

    label: str  # what a chart writes beside the mark
    memory_bytes: int  # the memory the outcome is about: a peak, or a server's RAM
    outcome: str  # "peak": the training peak; "ran" / "out of memory": a server size tried
    quote: str  # the publication's words
    image_shape: tuple[int, int, int] = STUDY_IMAGE_SHAPE
    batch_size: int = STUDY_BATCH_SIZE

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / GIB


# Server sizes in GB are binary, as DIMMs are sold (`core.units`); "almost a terabyte"
# is drawn at 1 TB, its upper end.
PUBLISHED_POINTS: tuple[PublishedPoint, ...] = (
    PublishedPoint(
        "published peak: almost 1 TB",
        1024 * GIB,
        "peak",
        "training ... use[s] almost a terabyte (TB) of RAM",
    ),
    PublishedPoint(
        "192 GB server: out of memory within minutes",
        192 * GIB,
        "out of memory",
        "a 192 GB server ran out of memory in minutes",
    ),
    PublishedPoint(
        "384 GB server: only half-size images fit",
        384 * GIB,
        "out of memory",
        "384 GB forced half-size images",
    ),
    PublishedPoint(
        "1.5 TB server: ran the full size",
        1536 * GIB,
        "ran",
        "1.5 TB ran the full size",
    ),
)


def applies_to(image_shape: tuple[int, ...], batch_size: int, knobs_default: bool) -> bool:
    """Whether the published points are about this question (the study's image, batch, network)."""
    return (
        knobs_default and tuple(image_shape) == STUDY_IMAGE_SHAPE and batch_size == STUDY_BATCH_SIZE
    )
