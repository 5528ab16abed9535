"""Every command the README and the docs/ pages print runs here as printed: snakemake commands as
dry runs from a copy of the checkout (offline, no cluster), the others as far as they can run
without their inputs. A new form of command there needs a rule here, or the test fails. And every
relative link between those pages reaches a file (and its heading, where it names one)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

#: commands that need a finished run: what they are checked by instead
NEEDS_RESULTS = {
    "snakemake --report results/report.html": "tests/workflow/test_workflow.py (the report of a finished run)",
}
VENV_BIN = Path(sys.executable).parent
#: the pages whose commands and links are checked: the front page and everything behind it
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def readme_commands() -> list[str]:
    """The commands of the pages' ```bash blocks, each once: continuation lines joined, comments
    dropped."""
    commands = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"^ *```bash\n(.*?)^ *```", text, flags=re.MULTILINE | re.DOTALL):
            for command in re.sub(r"\\\n\s*", " ", block).splitlines():
                words = shlex.split(command, comments=True)
                if words and shlex.join(words) not in commands:
                    commands.append(shlex.join(words))
    return commands


COMMANDS = readme_commands()


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> tuple[Path, dict]:
    """A copy of the checkout (links to its files, none of its results) and the environment the
    README asks for: the venv activated, the cluster profile installed by `make slurm-profile`."""
    copy = tmp_path_factory.mktemp("checkout")
    for entry in REPO.iterdir():
        if entry.name not in (".snakemake", "results", ".git"):
            (copy / entry.name).symlink_to(entry)
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
           "XDG_CONFIG_HOME": str(tmp_path_factory.mktemp("config-home"))}
    subprocess.run(["make", "-s", "slurm-profile"], cwd=REPO, env=env, check=True, capture_output=True, timeout=60)
    return copy, env


def checked(command: str) -> tuple[list[str], list[str]]:
    """What runs for ``command``, and what its output must show (besides exit status 0)."""
    words = shlex.split(command)
    if words[:3] == ["python", "-m", "trimbench.resume"]:  # no run, no lock here: it runs the command checked
        inner, shown = checked(shlex.join(words[3:]))
        if inner == ["true"]:  # a make run checked by its target's presence: resume must take it as given
            return ["python", "-c", f"from trimbench.jobs.resume import resumable; print(resumable({words[3:]!r}))"], [
                repr(words[3:])]
        return [*words[:3], *inner], shown
    if words[0] == "snakemake" or words[:3] == ["python", "-m", "trimbench.jobs.warm"]:
        dry = [] if {"-n", "--dry-run", "--unlock"} & set(words) else ["-n"]
        return [*words, *dry], []
    if words[0] == "python" and "--help" in words:
        return words, ["usage:"]
    if words[:2] == ["python", "-m"]:  # it needs its inputs: the options it is given must be its own
        return [*words[:3], "--help"], [word for word in words if word.startswith("--")]
    if words[0] == "make":
        # make's variables (CONFIG=..., GPU=...) go with the target to the dry run
        variables = [word for word in words[1:] if "=" in word]
        (target,) = [word for word in words[1:] if "=" not in word]
        recipe = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)*)", (REPO / "Makefile").read_text(),
                           flags=re.MULTILINE)
        assert recipe, f"no target {target} in the Makefile"
        # `make -n` still runs recipe lines that call $(MAKE) (the demo's, which `make demo` runs
        # in full anyway): there, the target's presence is what is checked.
        return (["make", "-n", target, *variables] if "$(MAKE)" not in recipe.group(1) else ["true"]), []
    if words[0].startswith("cluster/") and words[0].endswith(".sh"):
        return ["bash", "-n", words[0]], []
    raise AssertionError(f"README command {command!r}: no rule in tests/workflow/test_readme.py checks this form")


def test_the_readme_gives_commands_of_every_kind():
    assert len(COMMANDS) > 25 and any("--profile slurm" in c for c in COMMANDS)
    assert all(command in COMMANDS for command in NEEDS_RESULTS)


@pytest.mark.parametrize("command", [c for c in COMMANDS if c not in NEEDS_RESULTS])
def test_readme_command_runs_as_printed(checkout, command):
    copy, env = checkout
    run, shown = checked(command)
    result = subprocess.run(run, cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{' '.join(run)}\n{output[-4000:]}"
    assert all(text in output for text in shown), (command, shown, output[-2000:])


def test_the_demos_prioritized_rules_are_rules_of_the_workflow():
    """`make demo`'s --prioritize names rules (Snakemake takes an unknown name for a file and
    prioritises nothing): each is a rule of the workflow, and the names are the Makefile's."""
    scheduling = re.search(r"^DEMO_SCHEDULING := (.*)$", (REPO / "Makefile").read_text(), re.MULTILINE)
    words = shlex.split(scheduling.group(1))
    prioritized = words[words.index("--prioritize") + 1:]
    assert prioritized and not any(word.startswith("-") for word in prioritized)
    listed = subprocess.run([str(VENV_BIN / "snakemake"), "--list-rules"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.split()
    assert set(prioritized) <= set(listed), set(prioritized) - set(listed)
