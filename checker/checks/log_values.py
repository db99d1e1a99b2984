"""Each training log's values in their domains: a number the trainer cannot have written is an edit.

The TRN checks of training.py hold a log's values to the rules (target,
hyperparameters, sample counts); this one holds the values no rule sets to
the only values the trainer can write: a seed it can draw, process and node
counts of at least one, times and memory that are finite and not negative,
the starter of the processes it can name, shares of the host's CPU time
between 0 and 1, energy that is a number or "not measured", a scaling
efficiency above 0 against a 1-process reference of the shape it logs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from mlperf_logging.mllog import constants as K

from levelfield.checker.checks.training import training_logs
from levelfield.checker.findings import WARNING, Finding, check
from levelfield.ground import mllog_keys as LK
from levelfield.ground.cluster_managers import LAUNCHER_DOMAIN, valid_launcher_record
from levelfield.ground.meter import NOT_MEASURED
from levelfield.ground.parse import finite_number, plain_int
from levelfield.ground.scaling import REFERENCE_DOMAIN, valid_reference_record

if TYPE_CHECKING:
    from levelfield.checker.context import Context
    from levelfield.ground.submission.records import Submission


def _share(v: object) -> bool:
    return finite_number(v) and 0 <= v <= 1


def _energy(v: object) -> bool:
    return v == NOT_MEASURED or (finite_number(v) and v >= 0)


_SHARE = ("a finite number in [0, 1]", _share)
_ENERGY = (f"a finite number >= 0 or {NOT_MEASURED!r}", _energy)

# key -> (the domain in words, the test); keys absent from a log are TRN001's (required) or optional.
DOMAINS: dict[str, tuple[str, Callable[[object], bool]]] = {
    K.SEED: (f"an integer in [0, {LK.SEED_LIMIT})", lambda v: plain_int(v) and 0 <= v < LK.SEED_LIMIT),
    LK.RUN_INDEX: ("an integer >= 0", lambda v: plain_int(v) and v >= 0),
    LK.WORLD_SIZE: ("an integer >= 1", lambda v: plain_int(v) and v >= 1),
    LK.NODES: ("an integer >= 1", lambda v: plain_int(v) and v >= 1),
    LK.LOCAL_BATCH_SIZE: ("an integer >= 1", lambda v: plain_int(v) and v >= 1),
    LK.SUBMITTABLE: ("true or false", lambda v: isinstance(v, bool)),
    LK.TIME_TO_FIRST_STEP_S: ("a finite number >= 0", lambda v: finite_number(v) and v >= 0),
    LK.PEAK_RSS_MIB: ("a finite number > 0", lambda v: finite_number(v) and v > 0),
    LK.PEAK_DEVICE_MEMORY_MIB: ("a finite number >= 0", lambda v: finite_number(v) and v >= 0),
    LK.DEVICE_MEMORY_USED_MIB: ("a finite number >= 0", lambda v: finite_number(v) and v >= 0),
    LK.ENERGY_J: _ENERGY,
    LK.CPU_ENERGY_J: _ENERGY,
    LK.SAMPLE_INTERVAL_MS: ("an integer >= 1", lambda v: plain_int(v) and v >= 1),
    LK.PEAK_TREE_RSS_MIB: ("a finite number > 0", lambda v: finite_number(v) and v > 0),
    LK.TREE_PROCESSES: ("an integer >= 1", lambda v: plain_int(v) and v >= 1),
    LK.PROCESS_CPU_S: ("a finite number >= 0", lambda v: finite_number(v) and v >= 0),
    LK.PROCESS_CPU_SHARE: _SHARE,
    LK.HOST_CPU_SHARE: _SHARE,
    LK.OTHERS_CPU_SHARE: _SHARE,
    LK.PEAK_DEVICE_MEMORY_USED_MIB: ("a finite number >= 0", lambda v: finite_number(v) and v >= 0),
    LK.PRICE_USD: ("a finite number >= 0", lambda v: finite_number(v) and v >= 0),
    LK.TRAIN_SAMPLES_PER_S: ("a finite number > 0", lambda v: finite_number(v) and v > 0),
    LK.STEP_TIME_MS: ("a finite number > 0", lambda v: finite_number(v) and v > 0),
    LK.LAUNCHER: (LAUNCHER_DOMAIN, valid_launcher_record),
    LK.SCALING_EFFICIENCY: ("a finite number > 0", lambda v: finite_number(v) and v > 0),
    LK.SCALING_REFERENCE: (REFERENCE_DOMAIN, valid_reference_record),
}


@check("TRN017", "log-value-out-of-domain", area="training")
def log_value_out_of_domain(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a training log holds a value the trainer cannot have written: a seed outside [0, 2^31),
    a run index below 0, a process or node count below 1, a submittable flag that is not a boolean, a time,
    memory, price or energy figure that is negative or not a finite number (energy may say "not measured"),
    a share of the host's CPU time outside [0, 1], a sample interval below 1 ms, a levelfield_launcher
    that names no starter levelfield knows (slurm, openmpi, torchrun, levelfield) or lacks a workload
    manager's job id, or a scaling efficiency (`--scaling`) that is not above 0 or a 1-process reference
    not of the shape the trainer logs.
    Why: the trainer writes these from what it measured or drew; a value outside the domain is an edit
    (or a corrupted file), and the figures shown next to the time to train would be made up.
    Bad: seed -1; levelfield_peak_rss_mib "1.0" (a string); levelfield_launcher {"name": "pbs", ...}.
    Fix: submit the logs `levelfield train` wrote, unedited.
    """
    for _training, log in training_logs(sub):
        for key, (domain, ok) in DOMAINS.items():
            for line in log.all(key):
                if not ok(line.value):
                    yield Finding.at(
                        log.path, f"{key} outside its domain", line=line.lineno, found=line.value, expected=domain
                    )


@functools.cache
def _mlperf_and_levelfield_keys() -> frozenset[str]:
    """MLPerf's own vocabulary (mllog's constants) and levelfield's (mllog_keys.LOG_KEYS): read once."""
    mlperf = {getattr(K, name) for name in dir(K) if name.isupper() and isinstance(getattr(K, name), str)}
    return frozenset(mlperf | set(LK.LOG_KEYS))


def known_log_keys(ctx: Context) -> frozenset[str]:
    """Every key a training log may carry under these rules: MLPerf's, levelfield's and the rules'
    hyperparameter keys."""
    return _mlperf_and_levelfield_keys() | set(ctx.suite.hyperparameter_log_keys.values())


@check("TRN026", "unknown-log-key", area="training", severity=WARNING)
def unknown_log_key(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a training log holds a key that is neither MLPerf's (mlperf_logging's constants), levelfield's
    (levelfield.ground.mllog_keys) nor one of the rules' hyperparameter keys. Reported once per key and log.
    Why: no check reads such a key, so whatever it claims is unverified, and a misspelt optional key (a
    hyperparameter logged as `opt_learning_rate_warmup_epoch`) would otherwise pass silently while the
    real one is missing. A warning: an extra key changes no score, but an auditor should see it.
    Bad: `my_vendor_flag`, `opt_base_learnig_rate` in result_0.txt.
    Fix: log only what `levelfield train` writes; put notes in the system description's notes field.
    """
    known = known_log_keys(ctx)
    for _training, log in training_logs(sub):
        reported = set()
        for line in log.lines:
            key = line.key
            if isinstance(key, str) and key not in known and key not in reported:
                reported.add(key)
                yield Finding.at(
                    log.path,
                    "key unknown to MLPerf, levelfield and the rules",
                    line=line.lineno,
                    found=key,
                    expected="a key `levelfield train` writes",
                )
