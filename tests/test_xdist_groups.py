"""`make test` runs the suite with pytest-xdist's `--dist loadgroup`: the tests of a module marked
`xdist_group` share its module fixtures (a workflow run of minutes, a SLURM cluster's run) only if
they all run on one worker. pytest 9.2 broke that silently with xdist 3.8 (the group is written into
`item._nodeid`, which 9.2 no longer reads) and every worker ran the shared run again: this checks it
on a generated module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MODULE = '''
import os
import pytest

pytestmark = pytest.mark.xdist_group(__name__)


@pytest.fixture(scope="module")
def shared_run():
    with open(os.environ["SETUPS_FILE"], "a") as setups:
        setups.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")


@pytest.mark.parametrize("case", range(6))
def test_reads_the_shared_run(shared_run, case):
    pass
'''


def test_a_groups_module_fixture_is_set_up_once_over_two_workers(tmp_path: Path):
    (tmp_path / "test_grouped.py").write_text(MODULE)
    (tmp_path / "test_alone.py").write_text("".join(f"def test_alone_{i}():\n    pass\n\n\n" for i in range(6)))
    setups = tmp_path / "setups.txt"
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup",
                             "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path)],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={"SETUPS_FILE": str(setups), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert len(setups.read_text().split()) == 1, (setups.read_text(), result.stdout[-2000:])
