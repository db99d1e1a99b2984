"""Hostile trees and files: every unsafe entry is a coded finding, nothing outside the tree is read or
printed, bombs are refused early, and nothing the checker reads is ever executed.

The trees are working copies of submissions/example damaged by the fuzz tool's own cases
(`levelfield.tools.fuzz`), so `make fuzz` and these tests exercise the same inputs. In-process checks
reuse the parse results of the files an input leaves untouched (tools/fuzz/reuse.py: the damaged
files are always parsed for real); the tests that run the CLI run it as shipped.
"""

from __future__ import annotations

import ast
import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from levelfield.checker.context import Context
from levelfield.checker.engine import check_tree, run_check
from levelfield.ground.parse import MAX_GUNZIP_BYTES, MAX_JSON_DEPTH
from levelfield.ground.submission.loader import load_submission
from levelfield.ground.submission.tree import MAX_FILE_BYTES, read_tree
from levelfield.rules import load_suite
from levelfield.tools.fuzz.cases import TREE_CLASSES, make_case
from levelfield.tools.fuzz.mutate import UNSAFE_PATHS, gzip_bomb
from levelfield.tools.fuzz.run import prepared
from levelfield.tools.fuzz.workspace import Symlink, Workspace, Write
from tests.conftest import REPO, assert_user_error, infer_cli, run_cli
from tests.test_checker_fixtures import EXAMPLE

ACCURACY_LOG = "closed/levelfield/results/example-box/ctr-dlrm/jax/offline/accuracy/mlperf_log_accuracy.json.gz"
RESULT_JSON = "closed/levelfield/results/example-box/ctr-dlrm/jax/offline/performance/result.json"
TRAINING_LOG = "closed/levelfield/results/example-box/ctr-dlrm/jax/training/result_0.txt"


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Workspace:
    with prepared(EXAMPLE, tmp_path_factory.mktemp("fuzz")) as (workspace, _):
        yield workspace


def checked(ws: Workspace, edits, *, reseal: bool = False):
    ws.apply(edits)
    try:
        if reseal:
            ws.reseal()
        return check_tree(ws.root)
    finally:
        ws.restore()


# --- path and size safety ------------------------------------------------------------------------

# Each class with the code that must report it. 50,001 files take ~10 s to create and check, so
# too-many-files runs end to end in `make fuzz` only, and below against a lowered limit.
PATH_CLASSES = sorted(cls for cls, codes in TREE_CLASSES.items() if codes and cls != "too-many-files")


@pytest.mark.parametrize("cls", PATH_CLASSES)
def test_each_unsafe_entry_is_a_coded_finding(ws, cls):
    case = make_case(random.Random(f"safety:{cls}"), ws, cls)
    report = checked(ws, case.edits, reseal=case.resealed)
    codes = {f.code for f in report.active}
    assert report.failed and "CHK001" not in codes, (case.describe(), codes)
    assert case.codes <= codes, (case.describe(), sorted(codes))
    assert ws.secret not in json.dumps([f.as_dict() for f in report.findings])


def test_too_many_files_is_str005_and_the_rest_is_not_read():
    tree = read_tree(EXAMPLE, max_files=20)
    assert tree.truncated and len(tree.files) == 20
    suite = load_suite()
    findings = run_check("STR005", load_submission(tree, suite), Context(suite))
    assert [(f.code, f.path) for f in findings] == [("STR005", ".")]


@pytest.mark.parametrize("cls", sorted(UNSAFE_PATHS))
def test_each_unsafe_manifest_path_is_str008(ws, cls):
    case = make_case(random.Random(f"safety:{cls}"), ws, cls)
    report = checked(ws, case.edits)
    assert [f.line for f in report.active if f.code == "STR008"] == [len(ws.base_files["MANIFEST"].splitlines()) + 1]


def _outside_everything(ws: Workspace) -> list:
    """One tree holding every way to point outside it: links to a file, by absolute and relative path,
    a linked folder, and MANIFEST entries naming the secret by `..` and by absolute path."""
    depth = TRAINING_LOG.count("/")
    manifest = (
        ws.base_files["MANIFEST"]
        + (f"{'0' * 64}  ../{ws.outside.name}/secret.txt\n{'0' * 64}  {ws.secret_file}\n").encode()
    )
    return [
        Symlink(TRAINING_LOG, str(ws.secret_file)),
        Symlink(TRAINING_LOG.replace("result_0", "result_1"), "../" * depth + f"{ws.outside.name}/secret.txt"),
        Symlink("closed/levelfield/results/example-box/ctr-dlrm/pytorch", str(ws.outside / "folder")),
        Write("MANIFEST", manifest),
    ]


def test_no_file_outside_the_tree_is_read_or_printed(ws):
    """The secret beside the tree never reaches the output of `levelfield check`, in either format."""
    ws.apply(_outside_everything(ws))
    try:
        for fmt in ("text", "json"):
            out = run_cli("check", str(ws.root), "--format", fmt)
            assert out.returncode == 1, out.stderr
            assert "Traceback" not in out.stderr
            assert ws.secret not in out.stdout + out.stderr
            assert "STR004" in out.stdout and "STR008" in out.stdout
    finally:
        ws.restore()


AUDIT = """
import json, sys
from pathlib import Path
opened = []
def hook(event, args):
    if event in ("open", "os.scandir", "os.listdir") and args and isinstance(args[0], (str, bytes, Path)):
        opened.append(str(args[0]))
sys.addaudithook(hook)
from levelfield.checker.context import Context
from levelfield.checker.engine import check_tree, run_check
from levelfield.ground.submission.loader import load_submission
report = check_tree(Path(sys.argv[1]), select=["STR"])
print(json.dumps({"opened": opened, "codes": sorted({f.code for f in report.active})}))
"""


def test_the_checker_opens_no_path_outside_the_tree(ws):
    """Python's audit hooks see every open(); none names the secret's folder or a file only it holds."""
    ws.apply(_outside_everything(ws))
    try:
        done = subprocess.run(
            [sys.executable, "-c", AUDIT, str(ws.root)], capture_output=True, text=True, timeout=300, check=True
        )
    finally:
        ws.restore()
    seen = json.loads(done.stdout)
    assert {"STR004", "STR008"} <= set(seen["codes"])
    assert any(name == "MANIFEST" for name in seen["opened"]), "the hook saw no open at all"
    leaks = [p for p in seen["opened"] if ws.outside.name in p or Path(p).name in ("secret.txt", "secret.json")]
    assert leaks == []


# --- bombs ---------------------------------------------------------------------------------------


def test_json_nesting_bomb_is_a_finding_in_every_json_file_kind(ws):
    bomb = b"[" * 100_000 + b"]" * 100_000
    entry = b':::MLLOG {"key": "seed", "value": ' + b"[" * 5000 + b"]" * 5000 + b"}\n"
    report = checked(
        ws,
        [
            Write(RESULT_JSON, bomb),
            Write(TRAINING_LOG, ws.base_files[TRAINING_LOG] + entry),
            Write(ACCURACY_LOG, gzip.compress(bomb, mtime=0)),
        ],
        reseal=True,
    )
    deep = {(f.path, f.code) for f in report.active if f"deeper than {MAX_JSON_DEPTH}" in f.message}
    assert deep == {(RESULT_JSON, "STR003"), (TRAINING_LOG, "STR003"), (ACCURACY_LOG, "STR003")}


def test_gzip_bomb_is_refused_at_the_inflate_limit(ws):
    bomb = gzip_bomb(MAX_GUNZIP_BYTES + 1)
    assert len(bomb) < MAX_GUNZIP_BYTES // 500  # a small file that inflates past the limit
    report = checked(ws, [Write(ACCURACY_LOG, bomb)], reseal=True)
    assert [(f.code, f.path) for f in report.active if "inflates to more than" in f.message] == [
        ("STR003", ACCURACY_LOG)
    ]


def _alias_bomb(path: Path, body: str) -> Path:
    """'Billion laughs': nine aliases of nine aliases ..., 9**9 strings once expanded."""
    lines = ["version: 1", 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    path.write_text("\n".join(lines + [body]) + "\n")
    return path


def test_yaml_alias_bomb_as_waivers_is_a_clean_error_naming_the_file(tmp_path):
    bomb = _alias_bomb(tmp_path / "waivers.yaml", "waivers: [{code: TRN006, reason: *i}]")
    # Refused at the first alias (line 3), before any value is built: the error names that line.
    assert_user_error(
        run_cli("check", str(EXAMPLE), "--waivers", str(bomb), timeout_s=120), f"{bomb}:3: invalid YAML: alias *a"
    )


def test_yaml_alias_bomb_as_user_settings_is_a_clean_error_naming_the_file(tmp_path):
    bomb = _alias_bomb(tmp_path / "user.yaml", "'*': {min_duration_ms: *i}")
    result = infer_cli(
        tmp_path / "run", "ctr-dlrm", "jax", "offline", "performance", "--user-conf", str(bomb), timeout_s=300
    )
    assert_user_error(result, f"{bomb}:3: invalid YAML: alias *a")
    assert not (tmp_path / "run").exists()


def test_oversize_file_is_never_read(ws):
    """A sparse file over the limit is refused by its size: the checker reports it without reading it."""
    case = make_case(random.Random("oversize"), ws, "oversize-file")
    report = checked(ws, case.edits)
    assert [f.path for f in report.active if f.code == "STR005"] == [case.target]
    assert case.edits[0].size > MAX_FILE_BYTES


# --- nothing is executed -------------------------------------------------------------------------

BANNED_CALLS = {"eval", "exec", "compile", "__import__", "breakpoint"}
BANNED_MODULES = {"pickle", "_pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle", "joblib", "subprocess"}
UNSAFE_YAML = {
    "load",
    "load_all",
    "full_load",
    "full_load_all",
    "unsafe_load",
    "unsafe_load_all",
    "Loader",
    "FullLoader",
    "UnsafeLoader",
    "CLoader",
    "CFullLoader",
    "CUnsafeLoader",
}


def execution_risks(source: str, filename: str) -> list[str]:
    """Every eval/exec-like call, pickle-like or subprocess import, unsafe yaml use, and pickled np.load."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        where = f"{filename}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in BANNED_CALLS:
            found.append(f"{where}: {node.func.id}()")
        elif isinstance(node, ast.Import):
            found += [f"{where}: import {a.name}" for a in node.names if a.name.split(".")[0] in BANNED_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in BANNED_MODULES:
            found.append(f"{where}: from {node.module} import")
        elif isinstance(node, ast.ImportFrom) and node.module == "yaml":
            found += [f"{where}: from yaml import {a.name}" for a in node.names if a.name in UNSAFE_YAML]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "yaml"
            and node.attr in UNSAFE_YAML
        ):
            found.append(f"{where}: yaml.{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "load"
            and any(
                k.arg == "allow_pickle" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
                for k in node.keywords
            )
        ):
            found.append(f"{where}: load(allow_pickle=...)")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in ("system", "popen", "execv", "execve", "spawnv")
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ):
            found.append(f"{where}: os.{node.attr}")
    return found


def test_the_scan_finds_each_kind_of_risk():
    """The scan below must be able to fail: each banned form in a snippet is reported."""
    snippet = (
        "import pickle\nfrom subprocess import run\nimport yaml\nimport numpy as np\nimport os\n"
        "eval('1')\nexec('x = 1')\nyaml.load(s, Loader=yaml.Loader)\nnp.load(p, allow_pickle=True)\n"
        "os.system('ls')\nyaml.safe_load(s)\nnp.load(p, allow_pickle=False)\n"
    )
    found = execution_risks(snippet, "snippet.py")
    assert sorted(f.split(": ", 1)[1] for f in found) == sorted(
        [
            "import pickle",
            "from subprocess import",
            "eval()",
            "exec()",
            "yaml.load",
            "yaml.Loader",
            "load(allow_pickle=...)",
            "os.system",
        ]
    )


CHECKER_MODULES = """
import sys
from pathlib import Path
from levelfield.checker.engine import check_tree, load_waivers
check_tree(Path(sys.argv[1]))
print("\\n".join(sorted(m.__file__ for n, m in list(sys.modules.items())
                        if n.startswith("levelfield") and getattr(m, "__file__", None))))
"""


def test_checker_and_loaders_execute_nothing():
    """Every levelfield module loaded by a check of the example (checker, rules loader, the numpy task
    code it re-scores with) and the readers of user files is free of eval, exec, pickle, unsafe yaml."""
    done = subprocess.run(
        [sys.executable, "-c", CHECKER_MODULES, str(EXAMPLE)], capture_output=True, text=True, timeout=300, check=True
    )
    loaded = {Path(line) for line in done.stdout.split()}
    assert (
        REPO / "levelfield" / "ground" / "parse.py" in loaded
        and REPO / "levelfield" / "ground" / "validation.py" in loaded
    )
    files = loaded | {
        REPO / "tools" / "package.py",
        REPO / "reference" / "weights.py",
        REPO / "levelfield" / "harness" / "loadgen_config.py",
    }
    risks = [risk for path in sorted(files) for risk in execution_risks(path.read_text(), str(path.relative_to(REPO)))]
    assert risks == []
