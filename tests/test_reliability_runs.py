"""Runs lose nothing: a killed or starved run leaves an aborted record or nothing, never a partial file
that `levelfield package` would count, and a full disk is an error, never a half-written result.

What exists elsewhere and is not repeated here: SIGTERM/SIGINT during training (test_trainer.py) and
during LoadGen (test_runner_interrupt.py) leave `run_stop aborted` / result.json "aborted"; an aborted
inference run is never packaged and two concurrent packages to one folder leave one whole tree
(test_package.py). Added here: SIGKILL, which no handler sees, during training, during LoadGen and
during packaging, and a disk that fills up while packaging or training.

How "never counted" is shown: the killed run's folder is put next to the example's own runs and
packaged; the tree built must be the example submission byte for byte, so nothing of the killed run
entered it (and the leaderboard reads only such trees).
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from levelfield.ground.errors import UserError
from levelfield.tools.package import PackageOptions, package
from tests.conftest import cli_command, infer_args, package_args, package_cli, start_long_training, train_cli
from tests.submission_edit import files
from tests.test_checker_fixtures import EXAMPLE
from tests.test_package import _org_division, _runs_from_example
from tests.test_runner_interrupt import LONG_RUN_CONF

STARTUP_LIMIT_S = 240  # importing a framework and generating the data on a busy 2-core machine


def wait_for(condition, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + STARTUP_LIMIT_S
    while not condition():
        assert proc.poll() is None, (what, proc.communicate())
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.05)


def sigkill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def package_with_example_runs(tmp_path: Path, extra_run: Path) -> Path:
    """Package the example's runs plus `extra_run`; the tree must equal the example submission."""
    runs, system = _runs_from_example(tmp_path / "example")
    shutil.copytree(extra_run, runs / "killed", symlinks=True)
    org, division = _org_division()
    out = tmp_path / "sub"
    result = package_cli(runs, system, org, division, out)
    assert result.returncode == 0, result.stderr
    built = {p.relative_to(out): p.read_bytes() for p in files(out)}
    assert built == {p.relative_to(EXAMPLE): p.read_bytes() for p in files(EXAMPLE)}
    return out


def test_sigkill_mid_training_leaves_only_an_inprogress_file_that_is_never_packaged(tmp_path):
    out = tmp_path / "run"
    proc = start_long_training(out)
    partial = out / "result_0.txt.inprogress"
    wait_for(lambda: partial.exists() and '"epoch_start"' in partial.read_text(), proc, "the first epoch")
    sigkill(proc)
    assert sorted(p.name for p in out.iterdir()) == ["result_0.txt.inprogress"]  # no result, no summary
    package_with_example_runs(tmp_path, out)


def test_sigkill_mid_loadgen_leaves_no_result_json_even_over_an_earlier_run(tmp_path):
    """--force over a completed run, killed while LoadGen runs: the earlier result.json is gone too.
    (SingleStream with LONG_RUN_CONF runs for minutes; an Offline run would end before the kill.)"""
    runs, _ = _runs_from_example(tmp_path / "earlier")
    out = tmp_path / "run"
    shutil.copytree(next(runs.glob("jax-offline-performance")), out)  # a completed run's files and repeats
    conf = tmp_path / "user.yaml"
    conf.write_text(LONG_RUN_CONF)
    detail = out / "run_1" / "mlperf_log_detail.txt"  # the first repeat's log
    detail.unlink()
    proc = subprocess.Popen(
        cli_command(
            *infer_args(out, "ctr-dlrm", "jax", "singlestream", "performance", "--user-conf", str(conf), "--force")
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(detail.exists, proc, "LoadGen's start")  # LoadGen opens its detail log when the test starts
    time.sleep(0.5)
    sigkill(proc)
    assert not (out / "result.json").exists() and not (out / "accuracy.json").exists()
    package_with_example_runs(tmp_path, out)


def test_sigkill_mid_package_leaves_no_tree_or_a_whole_one(tmp_path):
    runs, system = _runs_from_example(tmp_path)
    org, division = _org_division()
    out = tmp_path / "sub"
    args = cli_command(*package_args(runs, system, org, division, out))
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: any(p.name.startswith(".sub.") for p in tmp_path.iterdir()), proc, "the staging folder")
    sigkill(proc)
    # Killed while staging: no tree (the staging folder stays behind, hidden, and counts for nothing).
    # Killed after the rename: the whole tree. Never a part of one.
    if out.exists():
        assert {p.relative_to(out) for p in files(out)} == {p.relative_to(EXAMPLE) for p in files(EXAMPLE)}
    again = subprocess.run(args + ["--force"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert {p.relative_to(out): p.read_bytes() for p in files(out)} == {
        p.relative_to(EXAMPLE): p.read_bytes() for p in files(EXAMPLE)
    }


# --- a full disk -------------------------------------------------------------------------------


def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _package_options(tmp_path: Path) -> PackageOptions:
    runs, system = _runs_from_example(tmp_path)
    org, division = _org_division()
    return PackageOptions(runs=[runs], system=system, org=org, division=division, out=tmp_path / "sub")


@pytest.mark.parametrize(
    "failing, message",
    [
        # the atomic writer flushes a metadata file to disk: os.fsync reports ENOSPC
        ("fsync", r"\.json: cannot write \(No space left on device\)"),
        # a run's log is copied: shutil.copyfile's sendfile reports ENOSPC
        ("sendfile", r"/sub/\S+: cannot write \(No space left on device\) while copying \S+/runs/"),
    ],
)
def test_full_disk_while_packaging_is_one_error_naming_the_file_and_leaves_nothing(
    tmp_path, monkeypatch, failing, message
):
    options = _package_options(tmp_path)
    monkeypatch.setattr(os, failing, _no_space)
    with pytest.raises(UserError, match=message):
        package(options)
    assert not options.out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging left


@pytest.fixture(scope="module")
def starved_training(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A smoke training run whose log file is /dev/full: every write to it fails with ENOSPC."""
    out = tmp_path_factory.mktemp("full") / "run"
    out.mkdir()
    os.symlink("/dev/full", out / "result_0.txt.inprogress")
    result = train_cli(out, "--eager", "--seed", "3")
    return out, result


def test_full_disk_while_training_leaves_no_result_file(starved_training):
    out, result = starved_training
    assert result.returncode != 0
    assert not (out / "result_0.txt").exists() and not (out / "summary.json").exists()


def test_full_disk_while_training_is_one_clear_error(starved_training):
    out, result = starved_training
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "Logging error" not in result.stderr
    assert "result_0.txt" in result.stderr and "No space left on device" in result.stderr


def test_a_log_whose_flush_fails_at_close_is_an_error_and_keeps_its_inprogress_name(tmp_path, monkeypatch):
    """The lines were buffered; the disk filled up before close() flushed them to disk."""
    from levelfield.harness.runlog import RunLog

    log = RunLog(tmp_path / "result_0.txt")
    log.event("seed", 1)
    monkeypatch.setattr(os, "fsync", _no_space)
    with pytest.raises(UserError, match=r"result_0\.txt\.inprogress: cannot write \(No space left on device\)"):
        log.close()
    assert not (tmp_path / "result_0.txt").exists() and (tmp_path / "result_0.txt.inprogress").exists()
    assert log.close() == tmp_path / "result_0.txt.inprogress"  # a second close does not raise again


def test_a_log_that_cannot_be_created_is_an_error_naming_it(tmp_path):
    from levelfield.harness.runlog import RunLog

    (tmp_path / "out").write_text("a file where the run folder should be")
    with pytest.raises(UserError, match=r"/out: cannot create the folder \(File exists\)"):
        RunLog(tmp_path / "out" / "result_0.txt")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "result_0.txt.inprogress").mkdir()  # a folder where the log should go
    with pytest.raises(UserError, match=r"result_0\.txt\.inprogress: cannot write \(Is a directory\)"):
        RunLog(tmp_path / "run" / "result_0.txt")
