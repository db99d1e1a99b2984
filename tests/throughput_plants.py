"""The planted defects for TRN023 and TRN024 (collected into PLANTS by test_checker_fixtures.py), their log edits.

The example's runs train for about 2 s, too short for the log's clock to judge a rate (MIN_CHECKED_S);
`stretch_training` moves every line from the first epoch on by the same offset, as a run that spent that
long in its first step would have logged, so the log's clock spans enough to tell.
"""

from __future__ import annotations

import json

from mlperf_logging.mllog import constants as K

from levelfield.checker.checks.throughput import MIN_CHECKED_S, log_rate
from levelfield.ground import mllog_keys as LK
from levelfield.ground.parse import parse_mllog
from tests.node_plants import log_beside_world_size

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
