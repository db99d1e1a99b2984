"""The README's Quickstart and `.ci/run` must not drift apart."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

from conftest import REPO


def quickstart_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = re.search(r"^## Quickstart\n(.*?)^## ", text, re.S | re.M)
    assert section, "README.md has no '## Quickstart' section"
    return [
        line.strip()
        for block in re.findall(r"```sh\n(.*?)```", section.group(1), re.S)
        for line in block.strip().splitlines()
        if line.strip()
    ]


def test_quickstart_is_exactly_two_commands():
    assert quickstart_commands() == ["make demo", "make test"]


def test_ci_runs_the_readme_test_command():
    test_command = quickstart_commands()[1]
    ci = (REPO / ".ci/run").read_text()
    commands = [line.strip() for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert test_command in commands, f".ci/run does not run the README's test command {test_command!r}"
    assert "set -euo pipefail" in commands, ".ci/run must stop on the first failure (pytest exit 5 included)"


def test_makefile_installs_cpu_torch_before_the_extras():
    makefile = (REPO / "Makefile").read_text()
    lock_at = makefile.index("pip install --require-hashes --no-deps -r $(LOCK)")
    torch_at = makefile.index("pip install -c $(LOCK_PINS) torch==$(TORCH_VERSION) jax==$(JAX_VERSION)")
    extras_at = makefile.index("pip install -c $(LOCK_PINS) -e '.[all,dev]'")
    assert lock_at < torch_at < extras_at
    assert re.search(r"^TORCH_VERSION := 2\.13\.0$", makefile, re.M)


def _test_passes() -> list[list[str]]:
    """The pytest command lines of `make test`'s recipe, as argv after `-m pytest`."""
    makefile = (REPO / "Makefile").read_text()
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe, "the Makefile has no test target"
    return [shlex.split(line.split("-m pytest", 1)[1]) for line in recipe.group(1).splitlines() if "-m pytest" in line]


def test_make_test_runs_every_test_once_in_its_two_passes():
    """The parallel pass and the serial pass select complementary markers, and the serial pass collects tests
    (a pass with none exits 5 and fails CI). Collected from the modules that mention the marker only: a whole
    collection imports every framework."""
    passes = _test_passes()
    assert [p[p.index("-m") + 1] for p in passes] == ["not serial", "serial"]
    assert passes[0][passes[0].index("--dist") + 1] == "loadfile"
    marked = sorted(
        str(p.relative_to(REPO)) for p in (REPO / "tests").glob("test_*.py") if "mark.serial" in p.read_text()
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "serial", *marked],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert int(re.search(r"(\d+)(?:/\d+)? tests? (?:collected|selected)", done.stdout).group(1)) > 0


def test_the_parallel_pass_keeps_each_module_on_one_worker(tmp_path):
    """The parallel pass's own options, on two workers, over two small modules: each module's tests must all
    run in one worker, or its module- and session-scoped fixtures (a trained model, a packaged tree) are built
    once per worker. (pytest 9 ignores how --dist loadgroup tags a test with its group, so a grouping by marks
    passed the marks' test and split every module; this runs the scheduler itself.)"""
    argv = _test_passes()[0]
    argv = [a for a in argv if a not in ("-m", "not serial")]
    argv[argv.index("-n") + 1] = "2"  # `logical` on a 1-CPU machine would be one worker: nothing to tell
    for module in ("a", "b"):
        (tmp_path / f"test_{module}.py").write_text(
            "import os\nimport pytest\n\n"
            "@pytest.mark.parametrize('i', range(8))\n"
            "def test_worker(i):\n"
            f"    with open('{module}.workers', 'a') as f:\n"
            "        f.write(os.environ['PYTEST_XDIST_WORKER'] + '\\n')\n"
        )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *argv, "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    for module in ("a", "b"):
        workers = (tmp_path / f"{module}.workers").read_text().split()
        assert len(workers) == 8 and len(set(workers)) == 1, (module, workers)


def test_the_two_hosts_of_two_modules_take_turns(tmp_path):
    """tests/two_hosts.py's addresses are fixed: while one process holds the turn, another cannot take it."""
    from two_hosts import TURN_LOCK, turn

    probe = (
        "import fcntl, sys\n"
        f"f = open({str(TURN_LOCK)!r}, 'a')\n"
        "try:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept BlockingIOError:\n    sys.exit(3)\n"
    )
    with turn():
        held = subprocess.run([sys.executable, "-c", probe], timeout=60)
    free = subprocess.run([sys.executable, "-c", probe], timeout=60)
    assert (held.returncode, free.returncode) == (3, 0)
