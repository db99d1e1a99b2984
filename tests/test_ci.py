"""The README's Quickstart and `.ci/run` must not drift apart."""

from __future__ import annotations

import re

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
