"""The ``config:`` entries of the Snakemake profiles a run was started with, kept under a ``--config``
given on the command line.

Snakemake reads a profile's ``config:`` as the default of ``--config``, so any ``--config`` on the
command line replaces the whole list: ``--config plan_margin=2`` on a cluster run would drop the
profile's ``plan_gpu`` and ``plan_max_runtime`` (the partition's limit), the jobs would be priced on
the default GPU, and the dry run would flag none over the limit. :func:`profile_config` reads the
entries of the profiles the command line names (``--profile``, several in order, else
``$SNAKEMAKE_PROFILE``), found and parsed as Snakemake finds and parses them; rules/common.smk puts
the command line's ``--config`` on top of them, key by key.

Light (runs while Snakemake parses the workflow).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path


def named_profiles(argv: Sequence[str], environ: Mapping[str, str] = os.environ) -> list[str]:
    """The profiles of a snakemake command line, in order (``--profile X`` or ``--profile=X``, each
    may be given again); ``$SNAKEMAKE_PROFILE`` where none is."""
    names = []
    for index, arg in enumerate(argv):
        if arg == "--profile" and index + 1 < len(argv):
            names.append(argv[index + 1])
        elif arg.startswith("--profile="):
            names.append(arg.split("=", 1)[1])
    if not names and environ.get("SNAKEMAKE_PROFILE"):
        names.append(environ["SNAKEMAKE_PROFILE"])
    return names


def profile_config(argv: Sequence[str], environ: Mapping[str, str] = os.environ, folders: Sequence = ()) -> dict:
    """The ``config:`` entries of the profiles ``argv`` names, a later profile's over an earlier's (as
    Snakemake merges profiles by top-level key: a later ``config:`` replaces an earlier one), each value
    parsed as Snakemake parses a ``--config`` entry. {} where no profile is named or found.
    ``folders``: where a relative profile path is looked for first, in order. The workflow runs in its
    ``--directory`` by now (Snakemake changed to it before the workflow existed), so the folder
    snakemake was started in is gone from the process but for the shell's ``$PWD``; the checkout
    (``workflow.basedir``) holds ``profiles/``."""
    from snakemake.cli import get_profile_dir, parse_config
    from snakemake.profiles import ProfileConfigFileParser

    entries = None
    for name in named_profiles(argv, environ):
        if not Path(name).is_absolute():
            name = next((str(Path(folder) / name) for folder in folders if folder and (Path(folder) / name).exists()),
                        name)
        found = get_profile_dir(name)
        if found is None:  # Snakemake itself names a profile it cannot find
            continue
        _, path = found
        with open(path) as stream:
            profile = ProfileConfigFileParser().parse(stream)  # the key=value entries snakemake makes of it
        if "config" in profile:
            entries = profile["config"]
    return parse_config(entries) if entries else {}
