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
