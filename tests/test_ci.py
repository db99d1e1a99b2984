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
    assert passes[0][passes[0].index("--dist") + 1] == "loadgroup"
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


def test_a_module_stays_on_one_worker(request):
    """conftest's hook gives every collected test its module's xdist group unless the module names one: a test
    grouped with another module would build that module's fixtures a second time on another worker."""
    groups = {}
    for item in request.session.items:
        marks = [m.args[0] if m.args else m.kwargs.get("name") for m in item.iter_markers("xdist_group")]
        assert len(marks) == 1, (item.nodeid, marks)
        groups.setdefault(item.module.__name__, set()).add(marks[0])
    assert groups[__name__] == {__name__}
    for module, names in groups.items():
        assert len(names) == 1, (module, names)  # one group per module, so one worker
