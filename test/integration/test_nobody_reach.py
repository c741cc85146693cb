# SPDX-License-Identifier: BSD-3-Clause
"""The suites that drop to nobody (httpd's own pytest suite, through
test/upstream/nobody_reach.py) from awkward checkouts: under a directory
only root may enter, as `mktemp -d` and /root are, and under a path with a
space. A venv inside such a checkout stands for the project's .venv."""
from __future__ import annotations

import os
import pwd
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REACH = Path(__file__).resolve().parents[1] / "upstream" / "nobody_reach.py"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="drops to nobody: needs root")


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["runuser", "-u", "nobody", "--", *argv],
                          capture_output=True, text=True, timeout=60)


def reach(paths: list[Path], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REACH), *map(str, paths), "--", *argv],
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout with a venv and a test file, under a 0700 directory and a
    directory name with a space."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    top = private / "my checkouts" / "stagevar"
    (top / "test").mkdir(parents=True)
    for d in (private / "my checkouts", top, top / "test"):
        d.chmod(0o755)
    (top / "test" / "probe.py").write_text("import sys\nprint('ran from', sys.prefix)\n")
    venv.create(top / ".venv", with_pip=False)
    return top


def test_nobody_cannot_reach_it_as_it_is(checkout: Path) -> None:
    proc = as_nobody(str(checkout / ".venv" / "bin" / "python"), str(checkout / "test" / "probe.py"))
    assert proc.returncode != 0


def test_nobody_runs_the_checkouts_python_on_its_files(checkout: Path) -> None:
    private = checkout.parents[1]
    python = checkout / ".venv" / "bin" / "python"
    proc = reach([checkout / "test", checkout / ".venv"],
                 str(python), str(checkout / "test" / "probe.py"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"ran from {checkout / '.venv'}"
    # Nothing of the user's changed, and no mount outlived the command.
    assert private.stat().st_mode & 0o777 == 0o700
    assert "stagevar-reach" not in Path("/proc/self/mountinfo").read_text()
    assert not [p for p in Path("/tmp").glob("stagevar-reach.*")]


def test_nobody_writes_where_the_suite_writes(checkout: Path) -> None:
    gen = checkout / "test" / "gen"
    gen.mkdir()
    nobody = pwd.getpwnam("nobody")
    os.chown(gen, nobody.pw_uid, nobody.pw_gid)
    proc = reach([checkout / "test"], "sh", "-c", f"echo written > '{gen}/out' && id -un")
    assert (proc.returncode, proc.stdout.strip()) == (0, "nobody"), proc.stderr
    assert (gen / "out").read_text() == "written\n"


def test_a_checkout_closed_itself_is_named_in_one_line(checkout: Path) -> None:
    checkout.chmod(0o700)
    proc = reach([checkout / "test", checkout / ".venv"], "true")
    assert proc.returncode == 77
    assert proc.stderr.count("\n") == 1
    assert f"nobody cannot enter {checkout}," in proc.stderr
    assert f"chmod o+x '{checkout}'" in proc.stderr


def test_reachable_paths_need_no_namespace(tmp_path: Path) -> None:
    """Where nobody reaches everything, the command runs as it is."""
    proc = reach([Path("/usr/bin")], "id", "-un")
    assert (proc.returncode, proc.stdout.strip()) == (0, "nobody"), proc.stderr


def test_usage() -> None:
    proc = reach([], "true")
    assert proc.returncode == 2 and "usage: nobody_reach.py" in proc.stderr
