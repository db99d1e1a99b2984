"""The planted defects for TRN023 and TRN024 (collected into PLANTS by test_checker_fixtures.py), their log edits;
and, for rules 1.2 training-throughput results, a writer of their logs and the edits that forge them
(test_throughput_results.py, test_checker_throughput_results.py).

The example's runs train for about 2 s, too short for the log's clock to judge a rate (MIN_CHECKED_S);
`stretch_training` moves every line from the first epoch on by the same offset, as a run that spent that
long in its first step would have logged, so the log's clock spans enough to tell.
"""

from __future__ import annotations

import json
import math

from mlperf_logging.mllog import constants as K

from levelfield.checker.checks.throughput import MIN_CHECKED_S, log_rate
from levelfield.ground import mllog_keys as LK
from levelfield.ground.parse import parse_mllog
from tests.node_plants import log_beside_world_size
from tests.submission_edit import edit_mllog, set_value

PREFIX = ":::MLLOG "


def stretch_training(log, seconds: float) -> None:
    """Every line after run_start, `seconds` later (the run's training took that much longer)."""
    out, after = [], False
    for line in log.read_text(encoding="utf-8").splitlines(keepends=True):
        entry = json.loads(line[len(PREFIX) :])
        if after:
            entry["time_ms"] += round(seconds * 1000)
            line = PREFIX + json.dumps(entry) + "\n"
        after = after or entry["key"] == K.RUN_START
        out.append(line)
    log.write_text("".join(out), encoding="utf-8")


def log_rate_of(log) -> float:
    return log_rate(parse_mllog(log.read_bytes(), str(log)))[0]


def plant_trn023(tree, tmp):
    # A rate three times what the (stretched) log's own clock allows.
    log = next(tree.rglob("ctr-dlrm/pytorch/training/result_0.txt"))
    stretch_training(log, 2 * MIN_CHECKED_S)
    log_beside_world_size(log, LK.TRAIN_SAMPLES_PER_S, 3 * log_rate_of(log))


def plant_trn024(tree, tmp):
    # A log that says it is a throughput-only run's (levelfield train --throughput-only --steps 3), filed as a
    # result; the real log, with its own findings besides TRN024, is in test_throughput_only_results.py.
    log = next(tree.rglob("ctr-dlrm/pytorch/training/result_0.txt"))
    log_beside_world_size(log, LK.THROUGHPUT_ONLY, 3)


# --- rules 1.2 training-throughput results: step-window logs and their planted edits ---------------------------


def _edit_entries(log, change) -> None:
    """Rewrite every MLLOG line of `log` as change(entry) (entries with a changed time_ms or value)."""
    out = []
    for line in log.read_text(encoding="utf-8").splitlines(keepends=True):
        entry = change(json.loads(line[len(PREFIX) :]))
        out.append(PREFIX + json.dumps(entry) + "\n")
    log.write_text("".join(out), encoding="utf-8")


def scale_figure(log, factor: float) -> None:
    """levelfield_train_samples_per_s times `factor` (3: tripled; 1/3: edited down), nothing else."""
    edit_mllog(log, LK.TRAIN_SAMPLES_PER_S, lambda e: {**e, "value": e["value"] * factor})


def squeeze_windows(log, factor: float, *, readings: bool) -> None:
    """Every step window squeezed by `factor` (3: each window a third as long, the run three times as fast)
    towards 1 ms after run_start (so that no squeezed stamp falls before it): its lines' time_ms, and with
    `readings` their precise clock readings too. The figures are left as they were. The other lines stamped
    between run_start and the last window move with the windows, so the clock never runs backwards (TRN015):
    each plant gives only the finding it is for."""
    _squeeze_lines_between_windows(log, factor)
    run_start_ms = next(
        json.loads(line[len(PREFIX) :])["time_ms"] for line in _lines(log) if '"key": "run_start"' in line
    )
    anchor_ms = run_start_ms + 1

    def change(entry):
        if entry["key"] not in (LK.STEP_WINDOW_START, LK.STEP_WINDOW_STOP):
            return entry
        entry["time_ms"] = anchor_ms + round((entry["time_ms"] - anchor_ms) / factor)
        if readings:
            entry["value"]["time_s"] = anchor_ms / 1000 + (entry["value"]["time_s"] - anchor_ms / 1000) / factor
        return entry

    _edit_entries(log, change)


def forge_consistently(log, factor: float) -> None:
    """A throughput forged `factor` times up with its evidence: the windows' readings and time_ms squeezed by
    `factor` and both figures set to what the squeezed windows give. Nothing in the log disagrees any more;
    only a reproduction on the same hardware can tell (docs/audit.md)."""
    from levelfield.ground.step_windows import log_figures

    squeeze_windows(log, factor, readings=True)
    figures = log_figures(parse_mllog(log.read_bytes(), str(log)))
    # Cut to whole milliseconds again, as the trainer writes them (the squeeze above kept the readings exact).
    _edit_entries(log, _cut_time_ms)
    edit_mllog(log, LK.TRAIN_SAMPLES_PER_S, set_value(figures.train_samples_per_s))
    edit_mllog(log, LK.STEP_TIME_MS, set_value(figures.step_time_ms))


def _squeeze_lines_between_windows(log, factor: float) -> None:
    """The other lines logged after run_start and up to the last window's stop (a busy host's run may stamp some a
    few ms later than run_start) moved as squeeze_windows moves the windows, so the edited log's clock still never
    runs backwards (TRN015): a forger keeps every line consistent, not the windows alone."""
    entries = [json.loads(line[len(PREFIX) :]) for line in _lines(log)]
    windows = [e["time_ms"] for e in entries if e["key"] in (LK.STEP_WINDOW_START, LK.STEP_WINDOW_STOP)]
    run_start_ms = next(e["time_ms"] for e in entries if e["key"] == "run_start")
    anchor_ms, last_ms = run_start_ms + 1, max(windows)

    def change(entry):
        if entry["key"] not in (LK.STEP_WINDOW_START, LK.STEP_WINDOW_STOP) and anchor_ms < entry["time_ms"] <= last_ms:
            # Floored: never after a window it preceded, whether that window's time_ms is then rounded
            # (squeeze_windows) or cut from its reading (_cut_time_ms).
            entry["time_ms"] = anchor_ms + math.floor((entry["time_ms"] - anchor_ms) / factor)
        return entry

    _edit_entries(log, change)


def _cut_time_ms(entry):
    if entry["key"] in (LK.STEP_WINDOW_START, LK.STEP_WINDOW_STOP):
        # 1 ns up first: a reading squeezed onto a whole millisecond may come out a hair below it in floating point.
        entry["time_ms"] = int(entry["value"]["time_s"] * 1000 + 1e-6)
    return entry


def _lines(log) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines()


def write_throughput_log(path, task_id: str, *, framework: str, index: int, seed: int, step_s: float, profile: str):
    """A rules 1.2 training-throughput result's log as `levelfield train --throughput-only` writes its lines, for
    tasks this CPU cannot afford to train in a test: written by the trainer's own RunLog, its figures by the
    trainer's Throughput from the windows' readings, on a clock that advances `step_s` per step (no step runs;
    the checker and the leaderboard read nothing else). Only the keys the throughput checks read; a full log
    of a real run is test_throughput_results.py's."""
    from levelfield.ground.step_windows import TIMED, WARMUP, window_value
    from levelfield.harness.runlog import RunLog
    from levelfield.harness.throughput import Throughput
    from levelfield.rules import load_suite

    task = load_suite("1.2").task(task_id).for_profile(profile)
    rules = task.throughput_settings(profile)
    batch = task.training.get("global_batch_size", task.hyperparameters["tunable"]["global_batch_size"]["default"])
    log = RunLog(path)
    clock = 1_800_000_000.0 + 1000 * index  # s since 1970, in the range a line's time_ms may hold

    def at(key, value=None, kind="event", metadata=None, reading=None):
        getattr(log, kind)(key, value, metadata, time_ms=int((clock if reading is None else reading) * 1000))

    for key, value in (
        ("submission_benchmark", task_id),
        (LK.FRAMEWORK, framework),
        ("seed", seed),
        (LK.RUN_INDEX, index),
        (LK.RULES_VERSION, "1.2"),
        (LK.PROFILE, profile),
        (LK.THROUGHPUT_ONLY, rules["timed_steps"]),
        (LK.WARMUP_STEPS, rules["warmup_steps"]),
        (LK.WORLD_SIZE, 1),
        ("global_batch_size", batch),
        (LK.PRECISION, task.precisions[0]),
    ):
        at(key, value)
    at("run_start", kind="start")
    # The trainer opens its epoch a few ms after run_start (3 ms in a real log here, more on a busy host): a
    # line stamped between run_start and the windows, which the squeezing plants must move with them.
    clock += 0.003
    at(K.EPOCH_START, kind="start", metadata={"epoch_num": 1})
    timed = Throughput(batch)
    for step in range(rules["warmup_steps"] + rules["timed_steps"]):
        phase = WARMUP if step < rules["warmup_steps"] else TIMED
        start, clock = clock + 0.001, clock + 0.001 + step_s
        at(LK.STEP_WINDOW_START, window_value(phase, step, 1, start), "start", reading=start)
        at(LK.STEP_WINDOW_STOP, window_value(phase, step, 1, clock), "end", reading=clock)
        if phase == TIMED:
            timed.add(1, clock - start)
    clock += 0.001
    at(K.EPOCH_STOP, kind="end", metadata={"epoch_num": 1})
    at(LK.TIMED_STEPS, timed.steps)
    at(LK.TRAIN_SAMPLES_PER_S, timed.samples_per_s())
    at(LK.STEP_TIME_MS, timed.step_time_ms())
    at("run_stop", kind="end", metadata={"status": "aborted", "reason": "throughput only"})
    log.close()
    return path
