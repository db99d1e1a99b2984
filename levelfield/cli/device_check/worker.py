"""One framework's process of the device check: every step of that framework, in this process, through the harness.

    python -m levelfield.cli.device_check.worker --spec out/logs/jax.json --events-fd 5

started by the check (execute.py), never by hand. The spec (JSON) names the steps (plan.Step), the output
folder, the rules, --force and the deadline: an absolute time.monotonic() value, which is the same clock in
every process of a Linux host. Each step runs as `levelfield train` and `levelfield infer` run it (the
trainer's `train` and `write_summary`, the runner's `infer`), with its output in logs/<step id>.log and
its run folder in runs/<step id>/; its figures are read back from the files it wrote (figures.py).

What the process shares across steps: the interpreter, the framework's import and its device start-up
(CUDA context, XLA client), every module of levelfield, the on-disk dataset cache's pages, and per task
the eval set (the runner's per-process cache). The Offline and SingleStream runs of a task share one
implementation (`infer(options, impl)`), so the predict programs compiled for the Offline run's batch
shapes are not compiled again for SingleStream's. Compiled again per step: the trainer builds its own
implementation per run (no harness API takes one in), so each training step compiles its train step
(a program of its own task, batch and precision either way), and each `infer` call loads the seed-0
initial weights again (4.5 s of numpy for DLRM's 286M parameters on this project's CPU).

A step that raises is recorded as failed (its traceback in its log) and the next one starts; a step is
not started when less than its estimate (at least MIN_STEP_S) is left before the deadline. A LoadGen run
that failed while LoadGen's thread still runs cannot be unwound: the process reports it and ends, and the
check records its remaining steps as not run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
import traceback
from pathlib import Path

from levelfield.cli.device_check.budget import MIN_STEP_S, needed_s
from levelfield.cli.device_check.events import cpu_s, finished, output_to, send, tail
from levelfield.cli.device_check.figures import FIGURES, UNUSABLE, run_folder
from levelfield.cli.device_check.plan import SEED, Step

EXIT_LOADGEN_RUNNING = 3  # this process ended after a LoadGen run it could not unwind


class Worker:
    def __init__(self, spec: dict, events_fd: int):
        self.out = Path(spec["out"])
        self.force = spec["force"]
        self.rules_dir, self.rules_version = spec["rules_dir"], spec["rules_version"]
        self.deadline = spec["deadline"]
        self.steps = [Step(**step) for step in spec["steps"]]
        self.fd = events_fd
        self.impl = self.impl_key = None  # the implementation the inference steps of one task share
        self.reused = False  # the last inference step ran on the implementation an earlier one built
        self.loadgen_running = False

    def run(self) -> int:
        self.import_frameworks()
        for step in self.steps:
            left = self.deadline - time.monotonic()
            if left < needed_s(step.estimate_s):
                reason = f"time limit: {max(left, 0):.0f} s left of this process's share"
                if step.estimate_s and step.estimate_s > MIN_STEP_S:
                    reason += f", the step is estimated at {step.estimate_s:.0f} s"
                send(self.fd, "result", result=finished(step, "not_run", None, reason=reason))
                continue
            send(self.fd, "start", id=step.id)
            send(self.fd, "result", result=self.run_step(step))
            if self.loadgen_running:
                return EXIT_LOADGEN_RUNNING
            gc.collect()  # the step's implementation and arrays, before the next one allocates its own
        return 0

    def import_frameworks(self) -> None:
        """The harness and every implementation this process runs (the framework with them), before the first
        step: the check reads the process's start-up from the "ready" event."""
        from levelfield.ground.registry import load_implementation
        from levelfield.harness import runner, trainer  # noqa: F401 - imported for the start-up figure

        for task, framework in {(s.task, s.framework) for s in self.steps}:
            try:
                load_implementation(task, framework)
            except Exception:  # reported by the step that needs it, with its traceback
                traceback.print_exc()
        send(self.fd, "ready")

    def run_step(self, step: Step) -> dict:
        log = self.out / "logs" / f"{step.id}.log"
        started, cpu_started = time.monotonic(), cpu_s()
        error = None
        with output_to(log):
            try:
                if step.kind == "inference":
                    self.infer(step)
                else:
                    self.train(step)
            except Exception as e:  # any failure of a step is its result, never the check's end
                traceback.print_exc()
                error = f"{type(e).__name__}: {e}".splitlines()[0]
        seconds = time.monotonic() - started
        fields = {"log": str(log.relative_to(self.out)), "pid": os.getpid(), "cpu_s": round(cpu_s() - cpu_started, 1)}
        if step.kind == "inference":
            fields["reused_implementation"] = self.reused
        try:
            fields["figures"] = FIGURES[step.kind](self.out, step)
        except UNUSABLE as e:
            fields["figures"] = {}
            error = error or f"{type(e).__name__}: {e}"
        if error is None:
            return finished(step, "passed", seconds, **fields)
        return finished(step, "failed", seconds, reason=error, output_tail=tail(log), **fields)

    def train(self, step: Step) -> None:
        from levelfield.harness.options import TrainOptions
        from levelfield.harness.trainer import train, write_summary

        self.release_implementation()
        folder = run_folder(self.out, step)
        options = TrainOptions(
            task_id=step.task,
            framework=step.framework,
            out=folder,
            profile=step.profile,
            runs=1,
            seed=SEED,
            mode=step.mode,
            rules_dir=self.rules_dir,
            rules_version=self.rules_version,
            force=self.force,
            overrides={"precision": step.precision} if step.precision != "fp32" else {},
            throughput_steps=step.timed_steps if step.kind == "throughput" else None,
        )
        write_summary(train(options), folder, self.rules_dir)

    def infer(self, step: Step) -> None:
        from levelfield.harness.options import InferOptions
        from levelfield.harness.run_state import InferAborted
        from levelfield.harness.runner import build_implementation, cached_suite, infer

        options = InferOptions(
            task_id=step.task,
            framework=step.framework,
            scenario=step.scenario,
            mode="performance",
            out=run_folder(self.out, step),
            profile=step.profile,
            compile_mode=step.mode,
            force=self.force,
            rules_dir=self.rules_dir,
            rules_version=self.rules_version,
            progress=False,
        )
        self.reused = self.impl_key == (step.task, step.mode)
        if not self.reused:
            self.release_implementation()
            task = cached_suite(self.rules_version, self.rules_dir).task(step.task).for_profile(step.profile)
            self.impl, self.impl_key = build_implementation(options, task), (step.task, step.mode)
        try:
            infer(options, impl=self.impl)
        except InferAborted as e:
            self.loadgen_running = e.loadgen_running
            raise

    def release_implementation(self) -> None:
        """Drop the shared inference implementation (its model and compiled programs) before another task's."""
        self.impl = self.impl_key = None
        gc.collect()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="One framework's process of `levelfield device-check`.")
    parser.add_argument("--spec", type=Path, required=True, help="the JSON the check wrote for this process")
    parser.add_argument("--events-fd", type=int, required=True, help="the write end of the check's event pipe")
    args = parser.parse_args(argv)
    code = Worker(json.loads(args.spec.read_text()), args.events_fd).run()
    if code == EXIT_LOADGEN_RUNNING:  # LoadGen's thread cannot be joined: leave without interpreter shutdown
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
