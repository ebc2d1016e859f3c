"""The frameworks a run trains with: their names, titles, installed versions and install hints.

A run records its framework (``runs.framework``, schema 8: one of FRAMEWORKS) and
that framework's version (``runs.framework_version``), read from package metadata
without importing the framework (TensorFlow's import alone is ~630 MiB of resident
memory). TensorFlow is the default, and what every run stored before schema 8
trained. The profiled child trains the workload's Keras model for a TensorFlow run
and its native PyTorch model (`core.workloads.torch_training`) for a torch run.
"""

from __future__ import annotations

import importlib.metadata

from core.errors import ConfigError

TENSORFLOW = "tensorflow"
TORCH = "torch"
FRAMEWORKS: tuple[str, ...] = (TENSORFLOW, TORCH)
DEFAULT_FRAMEWORK = TENSORFLOW
# How labels name each framework ("PyTorch 2.13").
TITLES: dict[str, str] = {TENSORFLOW: "TensorFlow", TORCH: "PyTorch"}
# The distribution names each is published under; the first one installed wins.
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    TENSORFLOW: ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tf-nightly"),
    TORCH: ("torch",),
}
# What a version reads where the package is absent.
NOT_INSTALLED = "not installed"
# How to add a framework that scripts/start.sh leaves out (torch is ~3 GB with its CUDA
# libraries from the default index; the requirements file asks for the CPU-only build).
INSTALL_HINTS: dict[str, str] = {
    TENSORFLOW: "pip install -r requirements.txt",
    TORCH: "pip install -r requirements-torch.txt",
}


def installed_version(*distributions: str) -> str:
    """The version of the first of ``distributions`` installed, else NOT_INSTALLED."""
    for name in distributions:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return NOT_INSTALLED


def version(framework: str) -> str:
    """The installed version of ``framework`` ("2.13.0+cpu"), else NOT_INSTALLED."""
    return installed_version(*DISTRIBUTIONS[framework])


def check_installed(framework: str) -> None:
    """`ConfigError` saying how to install ``framework`` when this Python does not have it."""
    if version(framework) == NOT_INSTALLED:
        raise ConfigError(
            f"--framework {framework} needs {TITLES[framework]}, which is not installed in "
            f"this environment; install it with `{INSTALL_HINTS[framework]}` "
            "(from the repository root) and run again"
        )


def title(framework: str, version_text: str | None) -> str:
    """The framework and its minor version in words: "PyTorch 2.13", "TensorFlow unknown"."""
    minor = ".".join(version_text.split(".")[:2]) if version_text else "unknown"
    return f"{TITLES.get(framework, framework)} {minor}"


def checked(framework: str) -> str:
    """``framework`` if it is one of FRAMEWORKS; `ConfigError` naming the known ones if not
    (a framework from a link's query string, say)."""
    if framework not in FRAMEWORKS:
        raise ConfigError(f"unknown framework {framework!r}; known: {', '.join(FRAMEWORKS)}")
    return framework


def flag(framework: str) -> list[str]:
    """The ``--framework`` words a command shown to the user needs: none for the default."""
    return [] if framework == DEFAULT_FRAMEWORK else ["--framework", framework]
