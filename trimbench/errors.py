"""The errors that explain themselves: each names its culprit (the config key, the dataset, the
file) in its message, so a job logs that message alone, without a traceback
(:func:`trimbench.jobs.run.run_here`), and the workflow stops with it before any job starts.

The bottom floor of the package: it imports nothing of trimbench, so every layer may raise them.
Each keeps the builtin base it had before the common one (``ValueError``, ``RuntimeError``), so an
``except ValueError`` around a config or data read still catches it.
"""

from __future__ import annotations


class ExplainedError(Exception):
    """An error whose message names its culprit and what to do: shown as it is, with no traceback."""


class ConfigError(ExplainedError, ValueError):
    """A problem with the configuration, the registries or a file they name."""


class DataError(ExplainedError, ValueError):
    """A dataset that cannot be read as its registry entry says."""


class ArtifactError(ExplainedError, RuntimeError):
    """A cached file that cannot be used; names the file and the rule that makes it."""


class NotFiniteError(ExplainedError, RuntimeError):
    """A NaN or infinite number where a training's loss or an encoding must be finite: names the
    model and the step or the text, so a diverged model never finishes as results."""
