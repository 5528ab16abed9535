"""pyproject.toml pins what runs here; envs/*.yaml must carry the same pins for --sdm conda."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)\s*==\s*([^;\s]+)")


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(requirements) -> dict[str, str]:
    found = {}
    for requirement in requirements:
        match = PIN.match(requirement.strip())
        if match:
            found[normalise(match.group(1))] = match.group(2)
    return found


def project_pins() -> dict[str, str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    return pins(requirements)


def env_pins(path: Path) -> dict[str, str]:
    env = yaml.safe_load(path.read_text())
    pip = next((d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d), [])
    return pins(pip)


ENVS = sorted((REPO / "envs").glob("*.yaml"))


@pytest.mark.parametrize("env", ENVS, ids=[p.name for p in ENVS])
def test_env_pins_agree_with_pyproject(env):
    ours = project_pins()
    theirs = env_pins(env)
    assert theirs, f"{env.name} pins nothing"
    unknown = sorted(set(theirs) - set(ours))
    assert not unknown, f"{env.name} pins packages pyproject.toml does not: {unknown}"
    differ = {name: (theirs[name], ours[name]) for name in theirs if theirs[name] != ours[name]}
    assert not differ, f"{env.name} vs pyproject.toml: {differ}"


def test_every_pyproject_requirement_is_pinned():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    loose = [r for r in project["dependencies"] if "==" not in r]
    assert not loose, f"unpinned requirements: {loose}"


def test_rules_name_existing_envs():
    for rule_file in (REPO / "rules").glob("*.smk"):
        for env in re.findall(r'"\.\./(envs/[^"]+)"', rule_file.read_text()):
            assert (REPO / env).is_file(), f"{rule_file.name} names missing {env}"


def test_faiss_builds_are_extras_of_one_release_and_make_env_installs_one():
    """faiss-cpu and faiss-gpu both install the module faiss: each is an extra (never a base
    requirement, which would install the CPU build beside the GPU one), pinned to the same release;
    `make env` installs the one FAISS names (cpu by default), and the cluster page says how."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert pins(extras["cpu"]).keys() == {"faiss-cpu"} and pins(extras["gpu"]).keys() == {"faiss-gpu"}
    assert pins(extras["cpu"])["faiss-cpu"] == pins(extras["gpu"])["faiss-gpu"] == "1.15.1"
    assert not any(normalise(r).startswith("faiss") for r in project["dependencies"])
    makefile = (REPO / "Makefile").read_text()
    assert "FAISS ?= cpu" in makefile and 'pip install -e ".[dev,$(FAISS)]"' in makefile
    assert "make env FAISS=gpu" in (REPO / "docs" / "cluster.md").read_text()
