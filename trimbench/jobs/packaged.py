"""A model shipped inside a Python package (``source: package``): named in a rule's params by package,
subfolder and version (what it is, not where this environment keeps it), and found again by the job in
its own environment (:func:`trimbench.jobs.run.job_from_snakemake`)."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path


def package_folder(package: str, subfolder: str = "") -> Path:
    """The folder a Python package ships its model in, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"package '{package}' is not installed (pip install {package.replace('_', '-')})")
    return Path(next(iter(spec.submodule_search_locations))) / subfolder


@functools.lru_cache
def package_version(package: str) -> str:
    """The installed version of the distribution that ships import package ``package``."""
    from importlib import metadata

    try:
        return metadata.version(package)  # the distribution's name, spelt with _ (normalised alike)
    except metadata.PackageNotFoundError:
        distributions = metadata.packages_distributions().get(package)
        if not distributions:
            raise ImportError(f"package '{package}' is not installed (pip install {package.replace('_', '-')})") \
                from None
        return metadata.version(distributions[0])


def packaged_model(entry: dict) -> dict:
    """A packaged model (``source: package``) as a rule param: what the model is (package, subfolder,
    version), not where this environment keeps it, so that a checkout copied with its ``.venv`` linked
    or copied, or run from another environment with the same version, re-runs nothing, and another
    version re-runs what it made. The job finds the folder in its own environment
    (:func:`packaged_folder`)."""
    return {"package": entry["package"], "subfolder": entry.get("subfolder", ""),
            "version": package_version(entry["package"])}


def packaged_models(registry: dict, **names: str | None) -> dict:
    """A rule's param ``packaged``: each of its inputs whose registry model (``names``: input ->
    registry name, None for no model) is a packaged one -> that model's :func:`packaged_model`; the
    job finds the folder in place of the input (:func:`trimbench.jobs.run.job_from_snakemake`)."""
    return {key: packaged_model(registry[name]) for key, name in names.items()
            if name is not None and registry[name]["source"] == "package"}


def packaged_folder(model: dict) -> Path:
    """The folder of a :func:`packaged_model` in this environment; its version must be the planned one."""
    installed = package_version(model["package"])
    if installed != model["version"]:
        raise ImportError(f"package '{model['package']}' is version {installed} in this job's environment; the "
                          f"run was planned with version {model['version']} (the same environment for snakemake "
                          "and the jobs, or the same pin in envs/*.yaml)")
    return package_folder(model["package"], model["subfolder"])
