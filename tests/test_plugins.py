"""Plugins (docs/plugins.md): a distribution built and installed here, run like a built-in, packaged, checked,
ranked and reproduced; broken ones refused in one line each.

The example plugin is docs/plugins.md's own code (its `<!-- file: ... -->` blocks), so the page stays true.
Each plugin is built and installed the real way, offline (`pip install --no-index --no-build-isolation
--no-deps --target SITE`: setuptools builds the wheel, pip installs it with its RECORD and entry points), into
a throwaway folder that only this test's subprocesses see, through PYTHONPATH. The project's .venv never
holds it: nothing to uninstall, no other test sees a plugin, and removing PYTHONPATH is "not installed".

The end to end run is ctr-dlrm, smoke profile, SingleStream (the fastest scenario there), performance and
accuracy, from the initial weights: the test's rules copy lowers ctr-dlrm's 1.2 reference value so that an
untrained model's accuracy run passes (the plumbing is tested, not the model). About 60 s here in all, most
of it the two installs and the CLI's start-up.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, assert_user_error, run_cli
from levelfield.ground import plugins as P
from levelfield.ground.errors import UserError
from levelfield.ground.fsutil import sha256_file
from levelfield.ground.registry import admit_framework, module_name, plugin, plugins
from levelfield.reference.interface import INTERFACE_VERSION, Implementation, plugin_problems
from levelfield.rules import load_suite
from tests.submission_edit import edit_json, first, reseal

pytestmark = pytest.mark.slow  # builds and installs two distributions

DIST, FRAMEWORK, TASK = "levelfield-numpy-example", "numpy-example", "ctr-dlrm"
FILE_BLOCK = re.compile(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```", re.S)
SMOKE = ("--profile", "smoke", "--rules-version", "1.2", "--quiet")


def _install(source: Path, site: Path) -> Path:
    """Build `source` and install it into `site`, offline, with this interpreter's setuptools and pip."""
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation", "--no-deps"]
        + ["--target", str(site), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return site


def _on(site: Path | None) -> dict:
    """The environment of a subprocess that sees the plugins installed in `site` (None: no plugin)."""
    return {"PYTHONPATH": str(site) if site else ""}


def _errors(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("levelfield: error:")]


@pytest.fixture(scope="module")
def example_site(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("example-src")
    blocks = FILE_BLOCK.findall((REPO / "docs" / "plugins.md").read_text())
    assert [name for name, _ in blocks] == [
        "pyproject.toml",
        "src/levelfield_numpy_example/__init__.py",
        "src/levelfield_numpy_example/dlrm.py",
    ]
    for name, text in blocks:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text)
    return _install(source, tmp_path_factory.mktemp("example-site"))


BROKEN_PYPROJECT = """\
[build-system]
requires = ["setuptools>=69"]
build-backend = "setuptools.build_meta"

[project]
name = "levelfield-broken-example"
version = "0.1.0"

[project.entry-points."levelfield.implementations"]
"ctr-dlrm:broken-import" = "levelfield_broken_example.missing:Anything"
"ctr-dlrm:old-interface" = "levelfield_broken_example:OldInterface"
"ctr-dlrm:no-predict" = "levelfield_broken_example:NoPredict"
"ctr-dlrm:wrong-name" = "levelfield_broken_example:WrongName"
"ctr-dlrm:pytorch" = "levelfield_broken_example:Complete"
"ctr-dlrm-numpy" = "levelfield_broken_example:Complete"
"""
BROKEN_MODULE = """\
from levelfield.reference.interface import Implementation


class Complete(Implementation):
    task_id, framework, interface_version = "ctr-dlrm", "pytorch", 1
    version = load = export = predict = set_train_data = train_steps = determinism_settings = lambda *a: None


class OldInterface(Complete):
    framework, interface_version = "old-interface", 0


class NoPredict(Implementation):
    task_id, framework, interface_version = "ctr-dlrm", "no-predict", 1
    version = load = export = set_train_data = train_steps = determinism_settings = lambda *a: None


class WrongName(Complete):
    framework = "numpy-example"
"""


@pytest.fixture(scope="module")
def broken_site(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("broken-src")
    (source / "pyproject.toml").write_text(BROKEN_PYPROJECT)
    package = source / "src" / "levelfield_broken_example"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(BROKEN_MODULE)
    (package / "missing.py").write_text("import levelfield_no_such_module  # noqa: F401\n")
    return _install(source, tmp_path_factory.mktemp("broken-site"))


@pytest.fixture(scope="module")
def rules(tmp_path_factory) -> Path:
    """The shipped rules with ctr-dlrm's 1.2 reference value at 0.01: an untrained model's accuracy passes."""
    target = tmp_path_factory.mktemp("rules") / "rules"
    shutil.copytree(REPO / "rules", target, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    task = target / "1.2" / "tasks" / f"{TASK}.yaml"
    text, replaced = re.subn(r"(?m)^(  reference_value): [0-9.]+", r"\1: 0.01", task.read_text())
    assert replaced == 1
    task.write_text(text)
    return target


def _system(folder: Path, division: str) -> Path:
    """This machine's description (the demo's), filed by org acme in `division`."""
    from levelfield.cli.commands.demo import describe_system

    folder.mkdir(parents=True, exist_ok=True)
    written, _ = describe_system(folder)
    path = folder / "box.json"
    written.rename(path)
    edit_json(path, lambda d: d.update(submitter="acme", division=division))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory, example_site, rules) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    for mode in ("performance", "accuracy"):
        args = ("infer", "--task", TASK, "--framework", FRAMEWORK, "--scenario", "singlestream", "--mode", mode)
        result = run_cli(*args, *SMOKE, "--rules-dir", str(rules), "--out", str(runs / mode), env=_on(example_site))
        assert result.returncode == 0, result.stderr
    return runs


def _package(runs: Path, system: Path, division: str, out: Path, site: Path | None) -> subprocess.CompletedProcess:
    args = ("--runs", str(runs), "--system", str(system), "--org", "acme", "--division", division)
    return run_cli("package", *args, "--out", str(out), env=_on(site))


@pytest.fixture(scope="module")
def tree(tmp_path_factory, runs, example_site) -> Path:
    folder = tmp_path_factory.mktemp("tree")
    result = _package(runs, _system(folder / "systems", "open"), "open", folder / "sub", example_site)
    assert result.returncode == 0, result.stderr
    return folder / "sub"


def _check(tree: Path, rules: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_cli("check", str(tree), "--profile", "smoke", "--rules-dir", str(rules), *extra)


# -- the example plugin, end to end --------------------------------------------------------------------------


def test_the_run_records_the_plugin_and_the_tree_holds_its_code(runs, tree, example_site):
    result = json.loads((runs / "performance" / "result.json").read_text())
    assert result["framework"] == FRAMEWORK and result["result_validity"] == "VALID"
    recorded = result["environment"]["plugin"]
    assert recorded["distribution"] == DIST and recorded["version"] == "0.1.0"
    declared = json.loads((tree / "open/acme/code/plugins.json").read_text())
    assert declared == {"plugins": [{**recorded, "frameworks": [FRAMEWORK]}]}
    copied = tree / "open/acme/code/plugins" / DIST
    assert (copied / "levelfield_numpy_example" / "dlrm.py").is_file()
    assert not list(copied.rglob("*.pyc")) and not list(copied.rglob("RECORD")) and not list(copied.rglob("INSTALLER"))
    files = {p.relative_to(copied).as_posix(): sha256_file(p) for p in copied.rglob("*") if p.is_file()}
    assert P.code_digest(files) == recorded["sha256"]


def test_an_open_division_plugin_result_checks_clean_and_is_ranked(tree, rules):
    checked = _check(tree, rules)
    assert checked.returncode == 0, checked.stdout
    board = run_cli("leaderboard", str(tree), "--profile", "smoke", "--rules-dir", str(rules))
    assert board.returncode == 0, board.stderr
    rows = [line for line in board.stdout.splitlines() if line.startswith("|") and FRAMEWORK in line]
    assert rows and "singlestream" in board.stdout.lower(), board.stdout


def test_importing_the_checker_and_listing_import_no_plugin_code(tree, rules, example_site):
    code = (
        "import sys\nfrom levelfield.cli.main import main\n"
        f"assert main(['list']) == 0\nassert main(['check', {str(tree)!r}, '--profile', 'smoke', "
        f"'--rules-dir', {str(rules)!r}]) == 0\n"
        "print('imported:', sorted(m for m in sys.modules if m.startswith('levelfield_numpy') or m in "
        "('torch', 'tensorflow', 'jax')))\n"
    )
    env = {**os.environ, **_on(example_site)}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "imported: []" in result.stdout
    assert f"| {TASK}" in result.stdout and f"plugin {DIST} 0.1.0" in result.stdout


def test_the_closed_division_refuses_a_plugin(runs, tree, rules, tmp_path, example_site):
    system = _system(tmp_path / "systems", "closed")
    refused = _package(runs, system, "closed", tmp_path / "closed", example_site)
    assert_user_error(refused, f"framework '{FRAMEWORK}'", "closed division of rules 1.2 admits only pytorch")
    assert len(_errors(refused)) == 1
    # The same tree filed as closed, its MANIFEST resealed: the checker names the framework and the allowed ones.
    closed = tmp_path / "sub"
    shutil.copytree(tree, closed)
    (closed / "open").rename(closed / "closed")
    edit_json(first(closed, "systems/box.json"), lambda d: d.update(division="closed"))
    reseal(closed)
    checked = _check(closed, rules, "--format", "json")
    found = [f for f in json.loads(checked.stdout)["findings"] if f["code"] == "PLG001"]
    assert checked.returncode == 1 and len(found) == 1, checked.stdout
    assert FRAMEWORK in found[0]["message"] and found[0]["expected"] == "one of pytorch, tensorflow, jax, onnxruntime"


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        ("levelfield_numpy_example/dlrm.py", "PLG002"),  # the plugin's code edited after packaging
        ("singlestream/accuracy/result.json", "PLG003"),  # a run recording another build of the plugin
    ],
)
def test_edited_plugin_code_or_another_plugin_record_is_a_finding(tree, rules, tmp_path, edit, code):
    copy = tmp_path / "sub"
    shutil.copytree(tree, copy)
    path = first(copy, edit)
    if code == "PLG002":
        path.write_text(path.read_text() + "# edited\n")
    else:
        edit_json(path, lambda d: d["environment"]["plugin"].update(version="0.2.0"))
    reseal(copy)
    checked = _check(copy, rules, "--format", "json")
    assert code in {f["code"] for f in json.loads(checked.stdout)["findings"]}, checked.stdout


def test_reproduce_replays_with_the_recorded_plugin_and_refuses_otherwise(tree, rules, example_site, tmp_path):
    listed = run_cli("reproduce", str(tree), "--rules-dir", str(rules), env=_on(example_site))
    (result_id,) = re.findall(r"^(inf-[0-9a-f]+)\s", listed.stdout, re.M)
    args = ("reproduce", str(tree), "--result", result_id, "--rules-dir", str(rules), "--accuracy-only")
    replayed = run_cli(*args, "--out", str(tmp_path / "ok"), env=_on(example_site))
    assert replayed.returncode == 0 and "REPRODUCED" in replayed.stdout, replayed.stdout + replayed.stderr

    absent = run_cli(*args, "--out", str(tmp_path / "absent"), env=_on(None))
    assert_user_error(absent, f"ran plugin {DIST} 0.1.0", "installed here: not installed")
    assert len(_errors(absent)) == 1

    other = tmp_path / "other-site"
    shutil.copytree(example_site, other)
    dlrm = other / "levelfield_numpy_example" / "dlrm.py"
    dlrm.write_text(dlrm.read_text() + "# another build\n")
    differs = run_cli(*args, "--out", str(tmp_path / "other"), env=_on(other))
    assert_user_error(differs, f"installed here: {DIST} 0.1.0 (sha256 ")
    assert len(_errors(differs)) == 1


def test_training_an_inference_only_plugin_and_rules_without_plugins_are_refused(example_site, tmp_path):
    train = ("train", "--task", TASK, "--framework", FRAMEWORK, "--profile", "smoke", "--rules-version", "1.2")
    refused = run_cli(*train, "--division", "open", "--out", str(tmp_path / "t"), env=_on(example_site))
    assert_user_error(refused, f"{TASK}/{FRAMEWORK} serves inference only")
    infer = ("infer", "--task", TASK, "--framework", FRAMEWORK, "--scenario", "singlestream", "--mode", "performance")
    old_rules = run_cli(*infer, "--rules-version", "1.1", "--out", str(tmp_path / "i"), env=_on(example_site))
    assert_user_error(old_rules, "rules 1.1 admit no plugin's framework in any division (only pytorch")
    assert len(_errors(old_rules)) == 1


# -- broken plugins: one line each, naming the distribution -----------------------------------------------------


@pytest.mark.parametrize(
    ("framework", "problem"),
    [
        ("broken-import", "failed to import: ModuleNotFoundError: No module named 'levelfield_no_such_module'"),
        ("old-interface", f"written against interface version 0, this levelfield drives version {INTERFACE_VERSION}"),
        ("no-predict", "breaks the Implementation interface: does not implement predict"),
        ("wrong-name", "its framework is 'numpy-example', its entry point names 'wrong-name'"),
    ],
)
def test_a_broken_plugin_is_one_line_naming_its_distribution(broken_site, tmp_path, framework, problem):
    args = ("infer", "--task", TASK, "--framework", framework, "--scenario", "singlestream", "--mode", "performance")
    result = run_cli(*args, *SMOKE, "--out", str(tmp_path / "run"), env=_on(broken_site))
    assert_user_error(result, "plugin levelfield-broken-example 0.1.0 (entry point ", problem)
    assert len(_errors(result)) == 1, result.stderr
    assert not (tmp_path / "run").exists()


def test_a_plugin_never_hides_or_replaces_a_built_in(broken_site, monkeypatch):
    listed = run_cli("list", env=_on(broken_site))
    assert listed.returncode == 0, listed.stderr
    refused = [line for line in listed.stderr.splitlines() if line.startswith("levelfield: plugin refused:")]
    assert len(refused) == 2, listed.stderr  # the clash and the malformed name, one line each
    (clash,) = [line for line in refused if "'pytorch'" in line]
    assert "levelfield-broken-example 0.1.0" in clash and module_name(TASK, "pytorch") in clash
    row = [line for line in listed.stdout.splitlines() if line.startswith(f"| {TASK} ") and "| pytorch " in line]
    assert len(row) == 1 and module_name(TASK, "pytorch") in row[0], listed.stdout  # the built-in's row, as ever
    monkeypatch.syspath_prepend(str(broken_site))
    with pytest.raises(UserError, match="which is levelfield's own"):
        plugin(TASK, "pytorch")  # asked for as a plugin, the clash is the answer
    # Asked for as a framework, the id is the rules' own; load_implementation's built-in branch never looks
    # at plugins (not imported here: it would load torch for nothing).
    admit_framework(load_suite("1.2"), TASK, "pytorch")


# -- the parts, in-process --------------------------------------------------------------------------------------


def test_one_framework_id_from_two_distributions_is_refused_in_one_line(monkeypatch):
    def declared(distribution: str) -> P.Declaration:
        return P.Declaration(f"{TASK}:vendor-x", "m:C", distribution, "1.0", TASK, "vendor-x")

    monkeypatch.setattr("levelfield.ground.registry.declarations", lambda: [declared("a-dist"), declared("b-dist")])
    served, refused = plugins()
    assert served == [] and len(refused) == 1
    assert "declared by more than one distribution" in refused[0][1] and "a-dist" in refused[0][1]
    with pytest.raises(UserError, match="b-dist"):
        plugin(TASK, "vendor-x")


def test_the_interface_problems_of_a_class():
    class Good(Implementation):
        task_id, framework, interface_version = TASK, "vendor-x", INTERFACE_VERSION
        version = load = export = predict = set_train_data = train_steps = determinism_settings = lambda *a: None

    class Renamed(Good):
        name = "other"

    assert plugin_problems(Good, TASK, "vendor-x") == []
    assert plugin_problems(object, TASK, "vendor-x") == [
        f"{object!r} is not a subclass of levelfield.reference.interface.Implementation"
    ]
    assert plugin_problems(Renamed, TASK, "vendor-x") == ["overrides name (the harness reads '<task_id>/<framework>')"]
    assert "declares no interface_version" in plugin_problems(type("Bare", (Implementation,), {}), TASK, "x")[0]


def test_the_digest_covers_the_wheels_files_not_the_installers(example_site, tmp_path, monkeypatch):
    copy = tmp_path / "site"
    shutil.copytree(example_site, copy)
    monkeypatch.syspath_prepend(str(copy))
    P.distribution_code.cache_clear()
    before = P.distribution_code(DIST)
    (info,) = copy.glob("*.dist-info")
    (info / "INSTALLER").write_text("another installer\n")
    (info / "direct_url.json").write_text('{"url": "file:///elsewhere", "dir_info": {}}')
    P.distribution_code.cache_clear()
    assert P.distribution_code(DIST).sha256 == before.sha256
    (copy / "levelfield_numpy_example" / "__init__.py").write_text('"""changed"""\n')
    P.distribution_code.cache_clear()
    assert P.distribution_code(DIST).sha256 != before.sha256
    P.distribution_code.cache_clear()
