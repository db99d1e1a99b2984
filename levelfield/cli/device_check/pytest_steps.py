"""The device check's equivalence process: pytest with this plugin, one check step per test module.

    python -m pytest -p levelfield.cli.device_check.pytest_steps -k "not eager" tests/test_equivalence_ctr_dlrm.py

started by the check (execute.py) with SPEC_ENV and EVENTS_FD_ENV set; without them the plugin does
nothing. The equivalence tests compare the frameworks pairwise inside one process (same weights and batch,
outputs side by side), so this one process imports every framework compared; it is the only one of the
check that does. A test module is a step: the plugin reports its start, then its counts once its last test
ended (passed only if every selected test passed), so the check's report follows module by module. No
test starts with less than MIN_STEP_S left before the deadline: it is skipped as "device check: time
limit", its module's step timed out, and pytest still ends cleanly with its counts.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from levelfield.cli.device_check.budget import MIN_STEP_S
from levelfield.cli.device_check.events import EVENTS_FD_ENV, OUTPUT_TAIL_CHARS, SPEC_ENV, cpu_s, finished, send
from levelfield.cli.device_check.plan import Step

TIME_LIMIT = "device check: time limit"


class StepReporter:
    def __init__(self, spec: dict, fd: int):
        self.fd, self.deadline = fd, spec["deadline"]
        self.log = spec["log"]
        self.steps = {Path(step["module"]).name: Step(**step) for step in spec["steps"]}
        self.counts = {name: {"tests": 0, "passed": 0, "failed": 0, "skipped": 0} for name in self.steps}
        self.failed_tests: dict[str, list[str]] = {name: [] for name in self.steps}
        self.failures: dict[str, str] = dict.fromkeys(self.steps, "")  # pytest's report of each failure
        self.timed_out = dict.fromkeys(self.steps, 0)
        self.started: dict[str, tuple[float, float]] = {}  # (wall clock, CPU seconds) at the module's start
        self.reported: set[str] = set()
        self.collection_errors: dict[str, str] = {}

    @staticmethod
    def module(nodeid: str) -> str:
        return Path(nodeid.split("::")[0]).name

    # -- hooks -------------------------------------------------------------------------------------
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        name = self.module(report.nodeid)
        if report.failed and name in self.steps:
            self.collection_errors[name] = report.longreprtext[-OUTPUT_TAIL_CHARS:]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        send(self.fd, "ready")

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        name = self.module(nodeid)
        if name in self.steps and name not in self.started:
            self.started[name] = time.monotonic(), cpu_s()
            send(self.fd, "start", id=self.steps[name].id)

    @pytest.hookimpl(tryfirst=True)  # before the fixtures build every framework's model
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.deadline - time.monotonic() < MIN_STEP_S:
            pytest.skip(TIME_LIMIT)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = self.module(report.nodeid)
        if name not in self.steps:
            return
        counts = self.counts[name]
        if report.when == "setup":
            counts["tests"] += 1
        if report.failed:
            if report.nodeid not in self.failed_tests[name]:  # a failed call and a failed teardown: one test
                counts["failed"] += 1
                self.failed_tests[name].append(report.nodeid)
            self.failures[name] = (self.failures[name] + report.longreprtext)[-OUTPUT_TAIL_CHARS:]
        elif report.skipped:
            counts["skipped"] += 1
            self.timed_out[name] += TIME_LIMIT in str(report.longrepr)
        elif report.when == "call":
            counts["passed"] += 1

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        yield
        name = self.module(item.nodeid)
        if name in self.steps and (nextitem is None or self.module(nextitem.nodeid) != name):
            self.report(name)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        for name in self.steps:
            if name not in self.reported and (name in self.collection_errors or name in self.started):
                self.report(name)
        # A module none of whose tests started, without a collection error, stays unreported: not run.

    # -- one module's result -----------------------------------------------------------------------
    def report(self, name: str) -> None:
        self.reported.add(name)
        step, counts = self.steps[name], self.counts[name]
        wall, cpu = self.started.get(name, (None, None))
        seconds = None if wall is None else time.monotonic() - wall
        figures = {**counts, "failed_tests": self.failed_tests[name]}
        figures["frameworks"] = os.environ.get("LEVELFIELD_TEST_FRAMEWORKS")
        fields = {"figures": figures, "log": self.log, "pid": os.getpid()}
        if cpu is not None:
            fields["cpu_s"] = round(cpu_s() - cpu, 1)
        if name in self.collection_errors:
            fields.update(reason="the module could not be collected", output_tail=self.collection_errors[name])
            status = "failed"
        elif counts["failed"]:
            fields.update(reason=f"{counts['failed']} of {counts['tests']} tests failed")
            fields["output_tail"] = self.failures[name]
            status = "failed"
        elif self.timed_out[name]:
            fields.update(reason=f"time limit: {self.timed_out[name]} of {counts['tests']} tests not started")
            status = "timed_out"
        elif counts["passed"] == 0:
            fields.update(reason="no test of the module ran")
            status = "failed"
        else:
            status = "passed"
        send(self.fd, "result", result=finished(step, status, seconds, **fields))


def pytest_configure(config: pytest.Config) -> None:
    if SPEC_ENV in os.environ and EVENTS_FD_ENV in os.environ:
        spec = json.loads(Path(os.environ[SPEC_ENV]).read_text())
        config.pluginmanager.register(StepReporter(spec, int(os.environ[EVENTS_FD_ENV])), "device-check-steps")
