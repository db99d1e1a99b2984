"""`levelfield package`: the layout, the MANIFEST, determinism, and refusing what it must not build.

Run folders are rebuilt from the example submission (its files are exactly what
`levelfield train` and `levelfield infer` wrote), so these tests need no framework.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from levelfield.checker.engine import check_tree
from tests.conftest import assert_user_error, cli_command, package_args, package_cli
from tests.submission_edit import files
from tests.test_checker_fixtures import EXAMPLE


def _runs_from_example(dst: Path) -> tuple[Path, Path]:
    """(runs folder, system file) holding the example's runs as the tools wrote them."""
    results = next(EXAMPLE.glob("*/*/results/*"))
    for training in sorted(results.glob("*/*/training")):
        shutil.copytree(training, dst / "runs" / f"{training.parent.name}-training")
    for mode_dir in sorted(results.glob("*/*/*/performance")) + sorted(results.glob("*/*/*/accuracy")):
        framework, scenario = mode_dir.parent.parent.name, mode_dir.parent.name
        target = dst / "runs" / f"{framework}-{scenario}-{mode_dir.name}"
        shutil.copytree(mode_dir, target)
        for gz in target.glob("*.gz"):
            gz.with_suffix("").write_bytes(gzip.decompress(gz.read_bytes()))
            gz.unlink()
    system = dst / f"{results.name}.json"
    shutil.copyfile(next(EXAMPLE.glob("*/*/systems/*.json")), system)
    return dst / "runs", system


def _org_division() -> tuple[str, str]:
    division_dir = next(p for p in EXAMPLE.iterdir() if p.is_dir())
    return next(division_dir.iterdir()).name, division_dir.name


@pytest.fixture
def runs(tmp_path):
    return _runs_from_example(tmp_path)


def _package(runs_dir: Path, system: Path, out: Path, *extra: str):
    return package_cli(runs_dir, system, *_org_division(), out, *extra)


def test_packaging_the_example_runs_reproduces_the_example_byte_for_byte(runs, tmp_path):
    runs_dir, system = runs
    result = _package(runs_dir, system, tmp_path / "sub")
    assert result.returncode == 0, result.stderr
    built = {p.relative_to(tmp_path / "sub"): p.read_bytes() for p in files(tmp_path / "sub")}
    expected = {p.relative_to(EXAMPLE): p.read_bytes() for p in files(EXAMPLE)}
    assert built.keys() == expected.keys()
    assert [k for k in built if built[k] != expected[k]] == []
    # MANIFEST is sha256sum's format, so an auditor can verify it without levelfield
    check = subprocess.run(
        ["sha256sum", "--check", "--quiet", "MANIFEST"], cwd=tmp_path / "sub", capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_an_existing_tree_is_replaced_only_with_force(runs, tmp_path):
    runs_dir, system = runs
    out = tmp_path / "sub"
    out.mkdir()
    (out / "mine.txt").write_text("a vendor's file")
    assert_user_error(_package(runs_dir, system, out), "already exists; not overwriting a submission")
    assert (out / "mine.txt").read_text() == "a vendor's file"
    assert _package(runs_dir, system, out, "--force").returncode == 0
    assert not (out / "mine.txt").exists() and not check_tree(out).failed
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging left behind


def test_two_packages_to_one_folder_one_wins_and_the_tree_is_whole(runs, tmp_path):
    runs_dir, system = runs
    org, division = _org_division()
    args = cli_command(*package_args(runs_dir, system, org, division, tmp_path / "sub"))
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outcomes = sorted((p.wait(timeout=120), p.stderr.read()) for p in procs)
    assert [code for code, _ in outcomes] == [0, 2], outcomes
    assert "Traceback" not in outcomes[1][1]
    assert not check_tree(tmp_path / "sub").failed


def test_a_description_with_placeholders_is_refused(runs, tmp_path):
    runs_dir, system = runs
    data = json.loads(system.read_text())
    data["status"] = "<FILL: available, preview or rdi>"
    system.write_text(json.dumps(data))
    assert_user_error(_package(runs_dir, system, tmp_path / "sub"), f"{system}: $.status: placeholder not filled in")
    assert not (tmp_path / "sub").exists()


def test_an_aborted_inference_run_is_never_packaged(runs, tmp_path):
    runs_dir, system = runs
    result_json = next(runs_dir.glob("*-performance/result.json"))
    data = json.loads(result_json.read_text())
    data["status"] = "aborted"
    result_json.write_text(json.dumps(data))
    assert_user_error(_package(runs_dir, system, tmp_path / "sub"), "an aborted or failed run is never a result")


def test_closed_division_refuses_a_code_folder(runs, tmp_path):
    runs_dir, system = runs
    (tmp_path / "code").mkdir()
    assert_user_error(
        _package(runs_dir, system, tmp_path / "sub", "--code", str(tmp_path / "code")),
        "--code: the closed division runs levelfield's reference code",
    )


def test_no_runs_and_duplicate_runs_are_clear_errors(runs, tmp_path):
    runs_dir, system = runs
    (tmp_path / "empty").mkdir()
    assert_user_error(_package(tmp_path / "empty", system, tmp_path / "sub"), "no runs found")
    twice = next(runs_dir.glob("*-performance"))
    shutil.copytree(twice, runs_dir / "again")
    assert_user_error(_package(runs_dir, system, tmp_path / "sub"), "a submission holds one")


# --- performance repeats -------------------------------------------------------------------------


def _performance_run(runs_dir: Path) -> Path:
    return next(runs_dir.glob("*-performance"))


def test_each_repeat_gets_only_loadgens_summary_and_detail(runs, tmp_path):
    runs_dir, system = runs
    for repeat in _performance_run(runs_dir).glob("run_*"):  # what LoadGen also leaves in a repeat's folder
        (repeat / "mlperf_log_accuracy.json").write_text("")
        (repeat / "mlperf_log_trace.json").write_text("")
    assert _package(runs_dir, system, tmp_path / "sub").returncode == 0
    built = {p.relative_to(tmp_path / "sub").as_posix() for p in files(tmp_path / "sub")}
    assert built == {p.relative_to(EXAMPLE).as_posix() for p in files(EXAMPLE)}
    assert {p.rsplit("/", 1)[-1] for p in built if "/run_" in p} == {"mlperf_log_summary.txt", "mlperf_log_detail.txt"}


def test_an_old_layout_performance_folder_is_refused(runs, tmp_path):
    runs_dir, system = runs
    folder = _performance_run(runs_dir)
    for name in ("mlperf_log_summary.txt", "mlperf_log_detail.txt"):  # one LoadGen run, flat, as before repeats
        shutil.move(folder / "run_1" / name, folder / name)
    for repeat in folder.glob("run_*"):
        shutil.rmtree(repeat)
    assert_user_error(
        _package(runs_dir, system, tmp_path / "sub"), f"{folder}: a performance run folder without run_<i>/ folders"
    )
    assert not (tmp_path / "sub").exists()


def test_a_gap_in_the_repeats_is_refused(runs, tmp_path):
    runs_dir, system = runs
    folder = _performance_run(runs_dir)
    shutil.rmtree(folder / "run_2")
    assert_user_error(
        _package(runs_dir, system, tmp_path / "sub"),
        f"{folder}: the numbering of its repeats has gaps: found run_1, run_3",
        "missing run_2",
    )
    assert not (tmp_path / "sub").exists()


def test_a_repeat_without_its_detail_log_is_refused(runs, tmp_path):
    runs_dir, system = runs
    detail = _performance_run(runs_dir) / "run_3" / "mlperf_log_detail.txt"
    detail.unlink()
    assert_user_error(_package(runs_dir, system, tmp_path / "sub"), f"{detail}: missing")


def test_the_code_reference_names_the_levelfield_the_runs_recorded(runs, tmp_path):
    """Not the packager's own version: a tree packaged by a later release still names the code that
    produced its runs, and the checker holds the code reference to the runs' records (RUL003)."""
    from tests.submission_edit import edit_json, edit_mllog

    runs_dir, system = runs
    for log in runs_dir.rglob("result_*.txt"):
        edit_mllog(log, "levelfield_environment", lambda e: {**e, "value": {**e["value"], "levelfield": "0.0.9"}})
    for result in runs_dir.rglob("result.json"):
        edit_json(result, lambda d: d["environment"].update(levelfield="0.0.9"))
    out = tmp_path / "sub"
    assert _package(runs_dir, system, out).returncode == 0
    ref = json.loads(next(out.glob("*/*/code/levelfield.json")).read_text())
    assert ref["levelfield_version"] == "0.0.9"
    assert check_tree(out, select=["RUL003", "REP001"]).active == []
