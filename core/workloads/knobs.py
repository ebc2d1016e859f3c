"""A network knob, declared once: its name, type, default, allowed values, words and unit.

A workload module lists its knobs in ``KNOBS`` (`Knob` records, in the order
of its ``Config`` fields after the image and the batch) and its page words in
``LABELS`` (`WorkloadLabels`). Everything else derives from those two: the
command-line flags (`memplan.commands`), the sweep grid and its file keys
(`profiling.sweep`, `core.settings`), the ``runs`` columns (`core.records`,
`core.schema`), the models' codes of text knobs (`modeling.features`), the pages'
labels, knob choices and run lists (`presentation`, the dashboard, ``memplan list``).
docs/workloads.md says which files a new knob or workload touches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import ConfigError
from core.workloads.base import BYTES_PER_ELEMENT, PRECISIONS, check_range

# The Python types a knob may hold, and so the ``runs`` column types they map to.
KNOB_KINDS: tuple[type, ...] = (int, str)


@dataclass(frozen=True)
class KnobCode:
    """A text knob as the number the models read: its feature column and each value's number.

    ``words`` and ``meaning`` say it on the Models page (``bytes per element``, ``of the
    precision``). A whole-number knob needs none: it is a feature as it is.
    """

    column: str
    numbers: tuple[tuple[str, int], ...]  # (value, its number), one per choice
    words: str
    meaning: str

    def number(self, value: str) -> int:
        return dict(self.numbers)[value]


@dataclass(frozen=True)
class Knob:
    """One setting of a network besides its image and batch.

    ``low``/``high`` bound a whole-number knob; ``choices`` list a text knob's
    values. ``words`` names the knob in an error (``base filters must be ...``);
    ``unit`` follows its value in a network label (``16 base filters``; None: the
    value alone, ``float32``); ``label`` titles a form field or a flag's help.
    ``sweep_key`` is the grid's list of values (``--precisions``, the file key
    ``precisions``); ``shown_when_default`` False leaves the default value out of
    a network label (``3 input channels`` reads only when it is not 3). ``listed``
    False keeps the knob out of the run lists' columns and filters (``memplan list``,
    the Sweeps page, the framework comparison); ``code`` is a text knob's number for
    the models (`KnobCode`).
    """

    name: str
    kind: type
    default: Any
    label: str
    help: str
    words: str = ""
    unit: str | None = None
    low: int | None = None
    high: int | None = None
    choices: tuple[str, ...] = ()
    plural: bool = False
    shown_when_default: bool = True
    listed: bool = True
    code: KnobCode | None = None

    def __post_init__(self) -> None:
        if self.kind not in KNOB_KINDS:
            raise TypeError(f"knob {self.name}: kind {self.kind!r} is not one of {KNOB_KINDS}")
        if self.code and {value for value, _ in self.code.numbers} != set(self.choices):
            raise TypeError(f"knob {self.name}: its code numbers values other than its choices")
        if self.kind is int and not self.choices and (self.low is None or self.high is None):
            raise TypeError(f"knob {self.name}: a whole-number knob needs low and high")
        if not self.words:
            object.__setattr__(self, "words", self.label.lower())
        self.check(self.default)

    @property
    def flag(self) -> str:
        """The flag of one value: ``--base-filters``."""
        return "--" + self.name.replace("_", "-")

    @property
    def sweep_key(self) -> str:
        """The sweep grid's key for this knob's list: ``base_filters``, ``precisions``."""
        return f"{self.name}s" if self.plural else self.name

    @property
    def sweep_flag(self) -> str:
        """The sweep's flag for a list of values: ``--base-filters``, ``--precisions``."""
        return "--" + self.sweep_key.replace("_", "-")

    def check(self, value: object) -> None:
        """Raise `ConfigError` unless ``value`` is one this knob allows, saying which are."""
        if self.choices:
            if value not in self.choices:
                raise ConfigError(f"{self.words} {value!r} is not one of {', '.join(self.choices)}")
            return
        if self.kind is int:
            check_range(self.words, value, int(self.low or 0), int(self.high or 0))
        elif not isinstance(value, self.kind):
            raise ConfigError(f"{self.words} must be {self.kind.__name__}, got {value!r}")

    def example(self) -> list[Any]:
        """Values a settings file's example shows: the choices, else the default."""
        return list(self.choices) or [self.default]


def check_knobs(config: Any, knobs: Sequence[Knob]) -> None:
    """Check each knob's value on ``config`` (`Knob.check`), in declaration order."""
    for knob in knobs:
        knob.check(getattr(config, knob.name))


def check_declared(config_type: type, knobs: Sequence[Knob]) -> None:
    """Raise `TypeError` unless ``config_type``'s knob fields are ``knobs``, defaults included.

    A workload's ``Config`` spells its fields for readers and type checkers; the
    registry calls this so a field and its `Knob` can never drift apart.
    """
    fields = [f for f in dataclasses.fields(config_type) if f.name not in IMAGE_FIELDS]
    declared = [(knob.name, knob.default) for knob in knobs]
    spelled = [(field.name, field.default) for field in fields]
    if declared != spelled:
        raise TypeError(
            f"{config_type.__name__}'s knob fields {spelled} differ from its KNOBS {declared}"
        )


# The config fields every workload has and that are not knobs.
IMAGE_FIELDS = ("image_shape", "batch_size")


@dataclass(frozen=True)
class SizingOffer:
    """A knob the Sizing page lets one set: the values it offers, its URL parameter, its help.

    Left empty: the knob's choices, else its default (the page adds every value the runs
    measured); the knob's name; the knob's help as a sentence.
    """

    knob: str
    values: tuple[Any, ...] = ()
    param: str = ""
    help: str = ""


# Both networks offer precision on the Sizing page, in these words.
PRECISION_OFFER = SizingOffer(
    "precision", help="Mixed precision keeps activations in 16 bits and weights in 32."
)


@dataclass(frozen=True)
class WorkloadLabels:
    """How the pages and the sizing question name and start one workload.

    Only ``optimizer`` is required; each other field left out has a fallback
    where it is read. ``short_knob`` is the knob (and its short word) a run
    picker tells networks apart by; ``sizing_knobs`` what the Sizing page lets
    one change (`SizingOffer`), in widget order; ``default_side``/``default_batch`` the question
    the Sizing page opens on; ``largest_side`` the Models page's default largest
    side; ``starting_grid`` the sides and batches a first sweep on a new machine
    measures; ``sweep_sizes`` the sidebar's first image sizes; ``sides_help``
    which sides the network takes, in a sentence; ``form_knobs`` the knobs the
    sidebar's sweep form offers a list box for (the others keep their defaults).
    """

    optimizer: str
    short_knob: tuple[str, str] | None = None
    sizing_knobs: tuple[SizingOffer, ...] = (PRECISION_OFFER,)
    default_side: int | None = None
    default_batch: int | None = None
    largest_side: int | None = None
    starting_grid: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    sweep_sizes: str | None = None
    sides_help: str = ""
    form_knobs: tuple[str, ...] = ()


def with_default(knob: Knob, default: Any, **changes: Any) -> Knob:
    """``knob`` for another network: another default (and range), the same meaning."""
    return dataclasses.replace(knob, default=default, **changes)


# Knobs more than one network has; a workload takes them as they are or gives its own
# default and range (`with_default`). Past 1024 channels an image or a mask is a typo.
MAX_CHANNELS = 1024
IN_CHANNELS = Knob(
    "in_channels",
    int,
    1,
    "Input channels",
    "channels of each input pixel or voxel",
    unit="input channels",
    low=1,
    high=MAX_CHANNELS,
    shown_when_default=False,
    listed=False,
)
CLASSES = Knob(
    "classes",
    int,
    1,
    "Classes",
    "output classes: the channels of the last layer's output",
    words="output classes",
    unit="classes",
    low=1,
    high=MAX_CHANNELS,
    shown_when_default=False,
    listed=False,
)
PRECISION = Knob(
    "precision",
    str,
    "float32",
    "Precision",
    "Keras precision policy; mixed precision keeps activations in 16 bits and weights in 32",
    choices=PRECISIONS,
    plural=True,
    code=KnobCode(
        "element_bytes", tuple(BYTES_PER_ELEMENT.items()), "bytes per element", "of the precision"
    ),
)
