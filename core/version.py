"""memplan's version: the one place it is written (pyproject.toml reads it from here).

Shown by ``memplan --version``, on every dashboard page's footer and in the sizing
report; CHANGELOG.md says what changed in each release, schema versions included.
"""

__version__ = "0.2.0"
