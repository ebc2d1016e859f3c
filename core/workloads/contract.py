"""What a workload module provides, as a `typing.Protocol`, and the check the registry runs.

`Workload` lists every module-level name the registry and its consumers read of a
network (docs/workloads.md says what each is for). `check_workload` holds a module
to all of it when the registry registers it: each member present, of its type, each
function callable as the contract calls it, ``Config`` and ``KNOBS`` in step, and
``LABELS`` naming only declared knobs. A module that falls short is refused in one
line naming the member, so a new network fails at import, not on a page.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Mapping
from types import ModuleType
from typing import Any, Protocol

from core.workloads.base import LayerOutput, WorkloadConfig
from core.workloads.knobs import Knob, WorkloadLabels, check_declared


class Workload(Protocol):
    """One network memplan measures and predicts: what its module holds at module level."""

    NAME: str  # the registry key, what --workload takes
    TITLE: str  # what pages call it
    DIMS: int  # 2 or 3 image dimensions
    Config: type  # its frozen config dataclass (a `WorkloadConfig`)
    KNOBS: tuple[Knob, ...]  # its knobs, in Config's field order after image and batch
    LABELS: WorkloadLabels  # how pages and the Sizing question name and start it
    NETWORK_KNOBS: tuple[str, ...]  # the knob names, from KNOBS
    SHAPE_COLUMNS: tuple[str, ...]  # the runs columns of the image sides
    MAX_IMAGE_SIDE: int
    TORCH_BUILDER: str  # the module that builds it in PyTorch, loaded by name

    def config_columns(self, config: Any) -> dict[str, Any]: ...

    def config_from_row(self, row: Mapping[str, Any]) -> WorkloadConfig: ...

    def parse_image_shape(self, text: str) -> tuple[int, ...]: ...

    def square_sides(self, low: int, high: int, **knobs: Any) -> list[int]: ...

    def layer_outputs(self, config: Any) -> list[LayerOutput]: ...

    def build_model(self, config: Any) -> Any: ...  # the compiled Keras model

    def synthetic_batch(self, config: Any, rng: Any) -> tuple[Any, Any]: ...


def members(protocol: type = Workload) -> tuple[str, ...]:
    """The protocol's members: its annotated names, then its functions, in declaration order."""
    functions = [
        name
        for name, value in vars(protocol).items()
        if inspect.isfunction(value) and name[0] != "_"
    ]
    return (*protocol.__annotations__, *functions)


def check_workload(module: ModuleType) -> None:
    """Raise `TypeError` naming the first member of `Workload` that ``module`` lacks or breaks."""
    name = getattr(module, "NAME", module.__name__)
    hints = typing.get_type_hints(Workload)
    for member in members():
        if not hasattr(module, member):
            raise TypeError(
                f"workload {name} ({module.__name__}) has no {member}: every workload module "
                "provides each member of core.workloads.contract.Workload (docs/workloads.md)"
            )
        problem = _problem(getattr(module, member), member, hints.get(member))
        if problem:
            raise TypeError(f"workload {name} ({module.__name__}): {member} {problem}")
    _check_declarations(module)


def _problem(value: Any, member: str, hint: Any) -> str | None:
    """What is wrong with ``value`` as the contract's ``member``, in words; None if nothing."""
    if hint is None:  # a function of the protocol
        return _call_problem(value, getattr(Workload, member))
    origin = typing.get_origin(hint) or hint
    if not isinstance(value, origin):
        return f"is {type(value).__name__}, not {getattr(origin, '__name__', origin)}"
    item_types = [arg for arg in typing.get_args(hint) if arg is not Ellipsis]
    if origin is tuple and any(not isinstance(item, item_types[0]) for item in value):
        return f"holds something other than {item_types[0].__name__}"
    return None


def _call_problem(function: Any, declared: Any) -> str | None:
    """Why ``function`` cannot be called as the protocol's ``declared`` is; None if it can."""
    if not callable(function):
        return f"is {type(function).__name__}, not a function"
    wanted = [
        parameter.name
        for parameter in list(inspect.signature(declared).parameters.values())[1:]
        if parameter.kind is parameter.POSITIONAL_OR_KEYWORD
    ]
    try:
        inspect.signature(function).bind(*wanted)
    except TypeError as error:
        return f"cannot be called as {declared.__name__}({', '.join(wanted)}): {error}"
    except ValueError:  # a builtin without a signature: trust it
        return None
    return None


def _check_declarations(module: ModuleType) -> None:
    """The members agree: Config and KNOBS, NETWORK_KNOBS, the image sides, LABELS' knobs."""
    check_declared(module.Config, module.KNOBS)
    name = module.NAME
    declared = tuple(knob.name for knob in module.KNOBS)
    if declared != module.NETWORK_KNOBS:
        raise TypeError(
            f"workload {name}: NETWORK_KNOBS {module.NETWORK_KNOBS} != KNOBS {declared}"
        )
    if getattr(module.Config, "workload", None) != name:
        raise TypeError(f"workload {name}: Config.workload is not {name!r}")
    if len(module.SHAPE_COLUMNS) != module.DIMS:
        raise TypeError(f"workload {name}: {module.DIMS} dimensions, SHAPE_COLUMNS has other")
    labels = module.LABELS
    named = [offer.knob for offer in labels.sizing_knobs] + list(labels.form_knobs)
    named += [labels.short_knob[0]] if labels.short_knob else []
    unknown = [knob for knob in named if knob not in declared]
    if unknown:
        raise TypeError(
            f"workload {name}: LABELS names {', '.join(unknown)}, not among its KNOBS "
            f"({', '.join(declared)})"
        )
