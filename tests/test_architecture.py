"""The layers of docs/architecture.md hold: import-linter's contracts (pyproject.toml) pass, and break.

import-linter (grimp) finds a package by walking its folder, but levelfield's
subpackages live in top-level folders that setup.cfg maps into the one
namespace (`checker/` is `levelfield.checker`). So the test copies the sources
into that installed shape first, then lints the copy with the repository's
own contracts. The same copy with one forbidden import added must fail.
The copy must hold no import cycle either, counting the imports inside
functions and under `if TYPE_CHECKING:` (grimp on the same copy).
"""

from __future__ import annotations

import configparser
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = REPO / "pyproject.toml"

# Runs import-linter on the copy: without the editable install's finder (which would serve the
# working tree's levelfield instead) and from the copy's folder (import-linter searches the cwd first).
_LINT = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("__editable__")]
sys.path.insert(0, sys.argv.pop(1))
from importlinter.cli import lint_imports_command
lint_imports_command()
"""

# Lists the import cycles among levelfield's modules in the copy, as JSON: per cycle, its modules' imports of
# each other as [importer, imported, line]. Every import statement counts, those inside functions and under
# `if TYPE_CHECKING:` too: a cycle that only a lazy or type-only import closes is still two modules that
# cannot be read, moved or tested one without the other.
_CYCLES = """
import json, sys
sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("__editable__")]
sys.path.insert(0, sys.argv[1])
import grimp
graph = grimp.build_graph("levelfield", exclude_type_checking_imports=False, cache_dir=None)
seen, cycles = set(), []
for module in sorted(graph.modules):
    if module in seen:
        continue
    # the modules that import `module` and that it imports, directly or not: its cycle
    group = {module} | (graph.find_upstream_modules(module) & graph.find_downstream_modules(module))
    seen |= group
    if len(group) > 1:
        cycles.append(sorted(
            [importer, imported, graph.get_import_details(importer=importer, imported=imported)[0]["line_number"]]
            for importer in group
            for imported in graph.find_modules_directly_imported_by(importer) & group
        ))
print(json.dumps(cycles))
"""


def package_dirs() -> dict[str, Path]:
    """setup.cfg's package_dir: installed package name -> repository folder."""
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    pairs = (line.split("=", 1) for line in cfg["options"]["package_dir"].strip().splitlines())
    return {name.strip(): REPO / folder.strip() for name, folder in pairs}


def installed_shape(dest: Path) -> Path:
    """The repository's Python files laid out as installed (`dest/levelfield/checker/...`); returns dest."""
    folders = package_dirs()
    for package, folder in folders.items():
        nested = [f for name, f in folders.items() if name != package and f.is_relative_to(folder)]
        for source in folder.rglob("*.py"):
            if any(source.is_relative_to(f) for f in nested):
                continue  # a folder mapped to a package of its own is copied by its own entry
            target = dest.joinpath(*package.split("."), source.relative_to(folder))
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    return dest


def lint(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _LINT, str(tree), "--no-cache", str(PYPROJECT)],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
    )


def import_cycles(tree: Path) -> list[list]:
    done = subprocess.run(
        [sys.executable, "-c", _CYCLES, str(tree)], cwd=tree, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return installed_shape(tmp_path_factory.mktemp("installed"))


def test_the_copy_holds_every_mapped_package(tree):
    for package in package_dirs():
        assert (tree.joinpath(*package.split(".")) / "__init__.py").is_file(), package


def test_the_import_contracts_hold(tree):
    done = lint(tree)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"Contracts: \d+ kept, 0 broken", done.stdout)


# The contracts' names (pyproject.toml), as far as import-linter prints them on one line.
LAYERS = "CLI above the stages above task code above rules above the ground floor"
COMMON = "Every task's common/ imports no framework"
NO_FRAMEWORK = "Nothing outside task code and the launcher imports a framework"
TASK_DATA = "The checker and the tools read only datasets and common/ of reference/"

# (file in the installed shape, the import added to it (a new file when it does not exist), the contract
# whose name must show as broken)
FORBIDDEN = [
    ("levelfield/ground/stats.py", "import levelfield.checker.engine", LAYERS),
    ("levelfield/ground/submission/loader.py", "import levelfield.rules.loader", LAYERS),
    ("levelfield/rules/loader.py", "import levelfield.reference.datasets", LAYERS),
    ("levelfield/harness/runner.py", "import levelfield.cli.main", LAYERS),
    ("levelfield/harness/trainer.py", "import levelfield.tools.leaderboard.rows", LAYERS),
    ("levelfield/harness/runner.py", "import levelfield.checker.engine", LAYERS),
    ("levelfield/checker/report.py", "import levelfield.tools.leaderboard.rows", LAYERS),
    ("levelfield/checker/engine.py", "import levelfield.harness.trainer", LAYERS),
    ("levelfield/tools/leaderboard/rows.py", "import levelfield.checker.engine", LAYERS),
    ("levelfield/tools/package.py", "import levelfield.harness.runner", LAYERS),
    # A new top-level module or package has no layer until it is given one (the contract is exhaustive).
    ("levelfield/stage_of_its_own.py", "import levelfield.ground.stats", LAYERS),
    # Task code, wherever it sits in reference/, is below the harness.
    ("levelfield/reference/fmnist_resnet/common/metric.py", "import levelfield.harness.trainer", LAYERS),
    ("levelfield/reference/image_resnet50_standard/common/metric.py", "import levelfield.harness.trainer", LAYERS),
    ("levelfield/reference/frameworks/pytorch/pipeline.py", "import levelfield.harness.trainer", LAYERS),
    # A new module of reference/ is task code the moment it exists.
    ("levelfield/reference/new_helper.py", "import levelfield.harness.runner", LAYERS),
    ("levelfield/reference/ctr_dlrm/common/metric.py", "import torch", COMMON),
    ("levelfield/reference/seq_transformer_standard/common/dataset.py", "import jax.numpy", COMMON),
    ("levelfield/harness/trainer.py", "import torch", NO_FRAMEWORK),
    ("levelfield/ground/stats.py", "import jax", NO_FRAMEWORK),
    ("levelfield/cli/commands/infer.py", "import tensorflow", NO_FRAMEWORK),
    # A new module of the CLI is held like the rest of it; only the launcher meets the frameworks.
    ("levelfield/cli/new_command.py", "import torch", NO_FRAMEWORK),
    ("levelfield/checker/checks/accuracy.py", "import levelfield.reference.interface", TASK_DATA),
    ("levelfield/tools/leaderboard/rows.py", "import levelfield.reference.ctr_dlrm.jax.implementation", TASK_DATA),
]


@pytest.mark.parametrize(
    "path, statement, contract", FORBIDDEN, ids=[f"{f[0].split('/', 1)[1]}:{f[1].split()[-1]}" for f in FORBIDDEN]
)
def test_a_forbidden_import_breaks_its_contract(tree, tmp_path, path, statement, contract):
    broken = tmp_path / "broken"
    shutil.copytree(tree, broken)
    module = broken / path
    before = module.read_text() if module.exists() else ""
    module.write_text(before + f"\n{statement}  # added by the test\n")
    done = lint(broken)
    assert done.returncode != 0
    _, _, broken_section = done.stdout.partition("Broken contracts")
    assert contract in broken_section, done.stdout


def test_no_import_cycle(tree):
    cycles = import_cycles(tree)
    assert cycles == [], "\n\n".join("\n".join(f"{a} -> {b} (line {line})" for a, b, line in c) for c in cycles)


# (file in the installed shape, the code added to it, a module the cycle must then hold besides that file's)
CYCLES = [
    (
        "levelfield/checker/context.py",
        "def _later():\n    import levelfield.checker.engine\n",
        "levelfield.checker.engine",
    ),
    (
        "levelfield/harness/options.py",
        "if TYPE_CHECKING:\n    from levelfield.harness.runner import infer\n",
        "levelfield.harness.runner",
    ),
]


@pytest.mark.parametrize("path, code, other", CYCLES, ids=["function-level", "type-only"])
def test_an_import_that_closes_a_loop_is_a_cycle(tree, tmp_path, path, code, other):
    looped = tmp_path / "looped"
    shutil.copytree(tree, looped)
    module = looped / path
    module.write_text(module.read_text() + f"\n\n{code}")
    name = path.removesuffix(".py").replace("/", ".")
    [cycle] = import_cycles(looped)
    assert {name, other} <= {m for a, b, _ in cycle for m in (a, b)}, cycle


def test_task_modules_are_resolved_by_the_registry_only():
    """No module builds a `levelfield.reference.<task>` path from strings but the registry."""
    built = re.compile(r"""f["']levelfield\.reference\.\{""")
    offenders = [
        str(path.relative_to(REPO))
        for folder in package_dirs().values()
        for path in folder.rglob("*.py")
        if built.search(path.read_text()) and path.name != "registry.py"
    ]
    assert offenders == []
