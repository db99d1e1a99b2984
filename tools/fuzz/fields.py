"""The classified field table: for every field the fuzzer can reseal, must an edit be caught, and by what?

    rule = classify("training/result_N.txt seed value")
    expect, codes = judge(rule, original=2000, new=-1)    # ("fail", {"TRN006", "TRN017", ...})

A field is named by a label: the file's role in the tree (its path below
<task>/<framework>/, or code/..., systems/<system>.json, with run_<i> and
result_<i> written as N), then for an MLLOG line its key, then the path of
the field ("(root)" for the whole document). The first pattern of FIELDS that
matches the label (fnmatch: `*` crosses `/` and spaces) classifies it:

- MUST: every edit that changes the value must be caught, by one of `codes`
  (or by STR003/STR010 when the new value cannot be read or is out of shape).
- TYPED: the value must stay in `domain` (STR003/STR010 catch what does not);
  any value inside it is free, for the reason in `why`.

`python -m levelfield.tools.fuzz.fields` prints the table; `... --update docs/reliability.md` writes it
between the document's fields markers.
"""

from __future__ import annotations

import fnmatch
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from levelfield.ground.cluster_managers import LAUNCHERS

MUST, TYPED = "must", "typed"
# A value that cannot be read (NaN, 1e999, a 5,000-digit integer) is STR003's; one of the wrong type or
# range STR010's. Either is the right answer for any field.
SHAPE_CODES = frozenset({"STR003", "STR010"})
DROPPED = object()  # the key was removed


def _int_in(low: int, high: float = math.inf) -> Callable[[object], bool]:
    return lambda v: type(v) is int and low <= v <= high


def _number_in(low: float, high: float = math.inf) -> Callable[[object], bool]:
    return lambda v: type(v) in (int, float) and math.isfinite(v) and low <= v <= high


DOMAINS: dict[str, Callable[[object], bool]] = {
    "string": lambda v: isinstance(v, str),
    "non-empty string": lambda v: isinstance(v, str) and v != "",
    "boolean": lambda v: isinstance(v, bool),
    "integer >= 0": _int_in(0),
    "integer >= 1": _int_in(1),
    "number >= 0": _number_in(0),
    "number > 0": lambda v: _number_in(0)(v) and v > 0,
    "seed in [0, 2^31)": _int_in(0, 2**31 - 1),
    # LoadGen prints some counts as doubles ("1.3087e+06"): an integral finite number is one of its integers
    "LoadGen integer >= 0": lambda v: _number_in(0)(v) and float(v).is_integer(),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "array or object": lambda v: isinstance(v, (list, dict)),
    "array or string": lambda v: isinstance(v, (list, str)),
    "object or null": lambda v: v is None or isinstance(v, dict),
    "string or null": lambda v: v is None or isinstance(v, str),
    "launcher name": lambda v: v in LAUNCHERS,
    # the cost of a result (levelfield/ground/meter.py): shares of the host's CPU time, metered energy
    "share in [0, 1]": _number_in(0, 1),
    "share in [0, 1] or null": lambda v: v is None or _number_in(0, 1)(v),
    "number >= 0 or null": lambda v: v is None or _number_in(0)(v),
    "number > 0 or null": lambda v: v is None or (_number_in(0)(v) and v > 0),
    "integer >= 1 or null": lambda v: v is None or _int_in(1)(v),
    "number >= 0 or 'not measured'": lambda v: v == "not measured" or _number_in(0)(v),
    "integer >= 0 or 'not exposed'": lambda v: v == "not exposed" or _int_in(0)(v),
}


@dataclass(frozen=True)
class FieldRule:
    pattern: str
    kind: str  # MUST | TYPED
    codes: frozenset[str] = frozenset()  # MUST: who catches an edit; TYPED: who catches a value out of domain
    domain: str = ""  # TYPED: a DOMAINS key
    why: str = ""


def must(pattern: str, codes: str, why: str) -> FieldRule:
    return FieldRule(pattern, MUST, frozenset(codes.split()), why=why)


def typed(pattern: str, domain: str, why: str, codes: str = "") -> FieldRule:
    return FieldRule(pattern, TYPED, frozenset(codes.split()), domain=domain, why=why)


_LOADGEN_BOOKKEEPING = "LoadGen's bookkeeping (when and where it logged); no figure is read from it"
_RUNNER_SELF = "the runner's measurement of its own work (sizing, warm-up, wall time); no figure is computed from it"
_NOTE = "a note for people; the claim it explains is checked where it is made"
_ACCURACY_MODE = "accuracy mode runs every sample once and measures no latency; no figure of it is published"
_DIAGNOSTIC = "LoadGen's diagnostics of its own run; the checks read the result_* figures instead"
_COST = "what the run cost as the meter read it (memory, CPU time, energy); shown beside the result, no score uses it"
_LOAD = (
    "the host's load as the meter read it: shown beside the result and marked above the rules' threshold (SYS009); "
    "other processes' share above the host's is REP005's"
)

# Ordered: the first match wins, so specific patterns come before general ones.
FIELDS: tuple[FieldRule, ...] = (
    # --- the packager's record and the system description -----------------------------------------------
    must("code/levelfield.json rules_version", "RUL001 RUL002", "selects the rules every check applies"),
    must("code/levelfield.json *", "RUL002 RUL003", "names the levelfield release and commit that made every run"),
    typed("systems/<system>.json generated_at", "string", "when `levelfield sysinfo` wrote the file", "SYS001"),
    typed(
        "systems/<system>.json software/*_driver",
        "string or null",
        "what NVML reports on a GPU system; no run records drivers (not run here: no GPU)",
        "SYS001",
    ),
    must("systems/<system>.json software/*", "SYS001 SYS006", "the software the leaderboard shows next to the result"),
    must(
        "systems/<system>.json number_of_nodes",
        "SYS001 SYS008",
        "the hosts the result ran on: every run's levelfield_nodes (1 when not logged)",
    ),
    typed(
        "systems/<system>.json host_processor_core_count",
        "integer >= 1",
        "declared per processor; the observed cores per node are compared (SYS005)",
        "SYS001",
    ),
    must(
        "systems/<system>.json *",
        "SYS001 SYS002 SYS003 SYS005 TRN003",
        "the hardware declaration the result is filed under (its name and status also in every log)",
    ),
    # --- LoadGen's accuracy log -----------------------------------------------------------------------------
    typed(
        "*/mlperf_log_accuracy.json.gz */seq_id",
        "integer >= 0",
        "LoadGen's query sequence number; scoring reads qsl_idx and data",
        "ACC001",
    ),
    must("*/mlperf_log_accuracy.json.gz *", "ACC001 ACC002 ACC003", "the predictions the accuracy is re-scored from"),
    must("* (root)", "", "a whole document or MLLOG line replaced by another value is no longer the file"),
    # --- the environment a result ran in ------------------------------------------------------------------
    typed(
        "*levelfield_git/dirty",
        "boolean",
        "true marks a modified checkout (REP003 warns); a false cannot be verified from the tree",
        "REP003",
    ),
    typed("*levelfield_git/dirty_files*", "array or string", "the modified files, listed for people (REP003)"),
    typed(
        "*host/gpus/*/clocks_mhz*",
        "integer >= 0 or 'not exposed'",
        "a GPU's clocks when the record was taken (they follow load and temperature): outside the digest",
        "STR010",
    ),
    must(
        "*distributions_digest",
        "REP001 REP004",
        "the digest of the installed distributions: of its own list (REP004), the same in every run (REP001)",
    ),
    must("environment.json *", "REP001 RUL003 SYS006", "the software stack of every run of the result"),
    # --- training logs --------------------------------------------------------------------------------------
    typed(
        "*.txt * key",
        "string",
        "a renamed line is a line no check reads; a check reports a line it needs as missing (TRN001, INF001, ...)",
    ),
    typed("training/result_N.txt * metadata/file", "non-empty string", "where the trainer logged from"),
    typed("training/result_N.txt * metadata/lineno", "integer >= 1", "where the trainer logged from"),
    must("training/result_N.txt * namespace", "", "MLLOG's envelope: mllog writes an empty namespace"),
    must("training/result_N.txt * event_type", "", "each key has one event type (interval start, end or point)"),
    must("training/result_N.txt * metadata", "", "every line names the call that logged it"),
    must("training/result_N.txt * time_ms", "TRN012 TRN015", "the clock of the run: time to train is read from it"),
    must("training/result_N.txt * metadata/epoch_num", "TRN014 TRN019", "epochs to target is read from the eval lines"),
    must("training/result_N.txt run_stop metadata/status", "TRN004 TRN005 TRN018", "the run's claim of success"),
    typed("training/result_N.txt run_stop metadata/reason", "string", _NOTE),
    must(
        "training/result_N.txt submission_* value",
        "TRN003",
        "the task, organisation, division, platform and availability the run is filed as",
    ),
    must("training/result_N.txt levelfield_framework value", "TRN003", "the framework the run is filed as"),
    must("training/result_N.txt levelfield_run_index value", "TRN003 TRN017", "i of result_<i>.txt"),
    typed(
        "training/result_N.txt seed value",
        "seed in [0, 2^31)",
        "the submitter's draw: any unique seed in range is a legitimate seed (reproduction tells the rest)",
        "TRN006 TRN017",
    ),
    must(
        "training/result_N.txt levelfield_framework_version value",
        "TRN020",
        "the framework release, also in the log's environment",
    ),
    must("training/result_N.txt levelfield_compile_mode value", "TRN020", "one compile mode per result"),
    must(
        "training/result_N.txt levelfield_determinism *",
        "TRN020",
        "one set of determinism switches and thread counts per result, its mode the run's compile mode",
    ),
    must("training/result_N.txt levelfield_device value", "TRN020", "one device per result"),
    must("training/result_N.txt levelfield_precision value", "TRN008 TRN016 TRN020", "one precision per result"),
    must(
        "training/result_N.txt levelfield_world_size value",
        "SYS008 TRN017 TRN020",
        "the processes of the run, over every node",
    ),
    must(
        "training/result_N.txt levelfield_nodes value",
        "SYS008 TRN017 TRN020",
        "the hosts the run spanned: the system's number_of_nodes",
    ),
    typed(
        "training/result_N.txt levelfield_launcher value/name",
        "launcher name",
        "who started the processes (a workload manager, torchrun or levelfield): shown for auditors and read by "
        "`reproduce`, which replays on one host with --nproc whoever started them; the processes and hosts it "
        "placed are checked (SYS008, TRN022)",
        "TRN017",
    ),
    typed(
        "training/result_N.txt levelfield_launcher value/*_id",
        "string or null",
        "the workload manager's job and step ids, for people to find the job's records; no figure is read from them",
        "TRN017",
    ),
    typed(
        "training/result_N.txt levelfield_launcher *",
        "object",
        "who started the processes and the manager's ids (the fields above)",
        "TRN017",
    ),
    must(
        "training/result_N.txt levelfield_local_batch_size value",
        "TRN017 TRN022",
        "each process's share of the global batch: global_batch_size / levelfield_world_size",
    ),
    must(
        "training/result_N.txt levelfield_train_samples_per_s value",
        "TRN017 TRN023",
        "the timed steps' throughput, within what the log's own clock allows",
    ),
    typed(
        "training/result_N.txt levelfield_step_time_ms value",
        "number > 0",
        "shown beside the result (a median of the timed calls); the score is run_start to run_stop",
        "TRN017",
    ),
    must(
        "training/result_N.txt model_bn_span value",
        "TRN022",
        "the samples batch norm normalised over: a span the task's rules allow",
    ),
    must("training/result_N.txt levelfield_quality_metric value", "TRN020", "the rules' metric of the task"),
    must("training/result_N.txt levelfield_quality_target value", "TRN005", "the rules' target of the task"),
    must("training/result_N.txt levelfield_profile value", "TRN010", "the profile the result is judged by"),
    must("training/result_N.txt levelfield_rules_version value", "RUL001 TRN010", "the rules the run followed"),
    must("training/result_N.txt levelfield_submittable value", "TRN010 TRN017", "whether the profile is submittable"),
    must("training/result_N.txt levelfield_dataset_digest *", "REP002", "the data the run trained and evaluated on"),
    must("training/result_N.txt levelfield_environment *", "REP001 RUL003 TRN020", "the software stack of the run"),
    must("training/result_N.txt levelfield_system_fingerprint *", "SYS005 SYS007", "the hardware the run observed"),
    typed(
        "training/result_N.txt levelfield_time_to_first_step_s value",
        "number >= 0",
        "shown beside the result; the score is run_start to run_stop",
        "TRN017",
    ),
    typed(
        "training/result_N.txt levelfield_peak_device_memory*mib value",
        "number >= 0",
        "device memory shown beside the result; no score is computed from it",
        "TRN017",
    ),
    typed(
        "training/result_N.txt levelfield_peak_*mib value",
        "number > 0",
        "memory shown beside the result; no score is computed from it",
        "TRN017",
    ),
    typed("training/result_N.txt levelfield_*_cpu_share value", "share in [0, 1]", _LOAD, "TRN017"),
    typed("training/result_N.txt levelfield_*energy_j value", "number >= 0 or 'not measured'", _COST, "TRN017"),
    typed("training/result_N.txt levelfield_process_cpu_s value", "number >= 0", _COST, "TRN017"),
    typed("training/result_N.txt levelfield_tree_processes value", "integer >= 1", _COST, "TRN017"),
    typed(
        "training/result_N.txt levelfield_sample_interval_ms value",
        "integer >= 1",
        "how often the meter sampled; one interval per result (REP005)",
        "TRN017",
    ),
    must(
        "training/result_N.txt levelfield_price_usd value",
        "SYS010 TRN017",
        "the system description's hourly price over the run's own clock: priced again from both",
    ),
    must("training/result_N.txt eval_accuracy value", "TRN005 TRN018", "the evidence that the run reached the target"),
    must(
        "training/result_N.txt *_samples value",
        "TRN008 TRN010",
        "the data sizes the rules fix (an epoch is train_samples samples)",
    ),
    must(
        "training/result_N.txt * value",
        "TRN001 TRN008 TRN016",
        "hyperparameters, interval events and markers: the rules fix them and every run of a result logs the same",
    ),
    # --- LoadGen's detail logs ---------------------------------------------------------------------------
    must("*/mlperf_log_detail.txt * namespace", "", "LoadGen writes one namespace"),
    must("*/mlperf_log_detail.txt * event_type", "", "LoadGen writes point-in-time events only"),
    must("*/mlperf_log_detail.txt * metadata", "", "every LoadGen line says where it was logged"),
    must("*/mlperf_log_detail.txt * metadata/is_error", "INF002", "an error line fails the run"),
    typed("*/mlperf_log_detail.txt * metadata/is_warning", "boolean", "a warning does not change a verdict"),
    typed("*/mlperf_log_detail.txt * time_ms", "number >= 0", _LOADGEN_BOOKKEEPING),
    typed("*/mlperf_log_detail.txt * metadata/file", "non-empty string", _LOADGEN_BOOKKEEPING),
    typed("*/mlperf_log_detail.txt * metadata/*", "LoadGen integer >= 0", _LOADGEN_BOOKKEEPING),
    must("*/mlperf_log_detail.txt loadgen_version value", "INF005", "the rules pin LoadGen's version"),
    typed(
        "*/mlperf_log_detail.txt loadgen_file_sha1 *",
        "object",
        "LoadGen's record of its sources; the version is pinned (INF005), the digests are not pinned in rules 1.0",
    ),
    typed("*/mlperf_log_detail.txt loadgen_* value", "string", "LoadGen's build record; its version is pinned"),
    typed("*/mlperf_log_detail.txt test_datetime value", "string", _LOADGEN_BOOKKEEPING),
    typed("*/mlperf_log_detail.txt *_name value", "string", "the names the SUT and QSL gave themselves"),
    typed("*/mlperf_log_detail.txt *generic_message value", "string", _NOTE),
    typed("*/mlperf_log_detail.txt power_* value", "string", "power measurement markers; no power is measured here"),
    typed("*/mlperf_log_detail.txt get_sut_name_duration_ns value", "LoadGen integer >= 0", _DIAGNOSTIC),
    typed("*/mlperf_log_detail.txt logger_* value", "LoadGen integer >= 0", _DIAGNOSTIC),
    typed("*/mlperf_log_detail.txt generated_* value", "LoadGen integer >= 0", _DIAGNOSTIC),
    must(
        "*/mlperf_log_detail.txt loaded_qsl_set value",
        "INF012",
        "the working set: distinct samples of the eval set, as many as the rules fix",
    ),
    typed(
        "*/mlperf_log_detail.txt loaded_qsl_set value/*",
        "LoadGen integer >= 0",
        "which samples of the eval set LoadGen drew (from the rules' seed); INF012 holds them distinct and in the set",
        "INF012",
    ),
    must("*/mlperf_log_detail.txt num_errors value", "INF002", "LoadGen's error count fails the run"),
    must(
        "*/mlperf_log_detail.txt qsl_reported_* value",
        "INF012 INF016",
        "the dataset and performance sample counts the rules fix",
    ),
    must(
        "*/mlperf_log_detail.txt *_scenario value",
        "INF009 INF016",
        "the scenario LoadGen ran",
    ),
    must("*/mlperf_log_detail.txt *_test_mode value", "INF009 INF016", "the mode LoadGen ran"),
    must(
        "*/mlperf_log_detail.txt *accuracy_log_* value",
        "INF016 INF019",
        "the rules fix LoadGen's accuracy-log sampling",
    ),
    must("*/mlperf_log_detail.txt *_rng_seed value", "INF010 INF016", "the rules fix LoadGen's seeds"),
    must(
        "*/mlperf_log_detail.txt *_performance_issue_* value",
        "INF015 INF016",
        "the rules fix LoadGen's query stream",
    ),
    must(
        "*/mlperf_log_detail.txt *_sample_concatenate_permutation value",
        "INF015 INF016",
        "the rules fix LoadGen's query stream",
    ),
    must(
        "*/mlperf_log_detail.txt *_performance_sample_count* value",
        "INF012 INF016",
        "the rules fix how many samples LoadGen loads",
    ),
    must(
        "*/mlperf_log_detail.txt *_accuracy_sample_count* value",
        "INF012 INF016",
        "an accuracy run answers every sample of the eval set",
    ),
    typed(
        "*/mlperf_log_detail.txt *_print_timestamps value", "boolean", "whether LoadGen prints timestamps: logging only"
    ),
    typed(
        "*/mlperf_log_detail.txt requested_*_qps value",
        "number > 0",
        "the runner's sizing (Offline's query size, Server's load); what LoadGen achieved is checked",
    ),
    typed(
        "*/mlperf_log_detail.txt requested_*_expected_latency_ns value",
        "LoadGen integer >= 0",
        "the runner's sizing hint for a stream; the latencies LoadGen measured are checked",
    ),
    typed(
        "*/accuracy/mlperf_log_detail.txt effective_* value",
        "number >= 0",
        _ACCURACY_MODE + "; run lengths and rates do not apply to it",
    ),
    must(
        "*/mlperf_log_detail.txt requested_* value",
        "INF011 INF012 INF013 INF014 INF015 INF016",
        "the settings LoadGen was asked for: the rules fix them",
    ),
    typed(
        "offline/performance/run_N/mlperf_log_detail.txt effective_* value",
        "number >= 0",
        "Offline is one query the runner sizes; LoadGen derives these from it; a minimum below the profile's is "
        "INF011's, and the run length LoadGen achieved is checked (INF003)",
        "INF011",
    ),
    must(
        "*/performance/run_N/mlperf_log_detail.txt effective_* value",
        "INF011 INF012 INF013 INF014 INF015",
        "the settings LoadGen ran with: the rules fix them",
    ),
    must(
        "*/performance/run_N/mlperf_log_detail.txt result_validity value",
        "INF001 INF006 INF007",
        "LoadGen's verdict",
    ),
    must(
        "*/performance/run_N/mlperf_log_detail.txt result_* value",
        "INF003 INF006 INF017 INF018",
        "LoadGen's figures: the result and its constraints are read from them, and result.json and the summary "
        "repeat them",
    ),
    typed("*/performance/run_N/mlperf_log_detail.txt early_stopping_result value", "string", _NOTE),
    must(
        "*/performance/run_N/mlperf_log_detail.txt early_stopping_* value",
        "INF003",
        "LoadGen's early-stopping verdict",
    ),
    # --- the runner's files ----------------------------------------------------------------------------
    must("*/accuracy/accuracy.json *", "ACC003", "the accuracy the runner scored; the checker re-scores the log"),
    must("*/result.json accuracy*", "ACC003", "the accuracy the runner scored; the checker re-scores the log"),
    typed("*.json sizing*/size", "integer >= 1", _RUNNER_SELF),
    typed("*.json sizing*/calls", "integer >= 1", _RUNNER_SELF),
    typed("*.json sizing*_ms", "number >= 0", _RUNNER_SELF),
    typed("*.json sizing*batch_size", "integer >= 1", _RUNNER_SELF),
    typed("*.json sizing*qps", "number > 0", _RUNNER_SELF),
    typed("*.json sizing*/samples", "integer >= 0", _RUNNER_SELF),
    typed("*.json sizing*/samples_per_s", "number >= 0", _RUNNER_SELF),
    typed("*.json sizing/loadgen_probe", "object or null", _RUNNER_SELF),
    typed("*.json sizing*_share", "share in [0, 1] or null", _RUNNER_SELF),
    typed("*.json sizing/host_load_reruns/*/run", "integer >= 1", _RUNNER_SELF),
    typed("*.json sizing/host_load_reruns/*/result_validity", "string or null", _RUNNER_SELF),
    typed("*.json sizing*", "array or object", _RUNNER_SELF),
    typed("*/result.json warmup_s", "number >= 0", _RUNNER_SELF),
    typed("*/result.json *loadgen_run_s", "number >= 0", _RUNNER_SELF),
    typed("*/result.json predict_calls", "integer >= 0", _RUNNER_SELF),
    typed("*/result.json sut", "string", "which SUT wrapper ran (fast or plain); both answer LoadGen alike"),
    typed("*/result.json weights", "string", "the weights file the runner loaded, as a label"),
    typed("*/result.json compile_mode", "non-empty string", "recorded only here; the training logs carry their own"),
    typed("*/result.json device", "non-empty string", "recorded only here; the training logs carry their own"),
    typed("*/result.json *invalid_reasons*", "array", "LoadGen's reasons, copied for people; the verdict is checked"),
    typed("*/settings.json user_overrides*", "array", "which settings came from --user-conf; each setting is checked"),
    typed("*/settings.json batch_size", "integer >= 1", "the SUT's batch size is the submitter's to choose"),
    typed(
        "*/settings.json *_qps",
        "number > 0",
        "the runner's sizing (Offline's query size, Server's load); what LoadGen achieved is checked",
    ),
    typed("*/settings.json expected_latency_ms", "number > 0", "the runner's sizing hint for a stream"),
    typed(
        "*/accuracy/settings.json repeats", "integer >= 1", "an accuracy run runs once; repeats apply to performance"
    ),
    must(
        "*/result.json runs/*/resources/price_usd_per_million_samples",
        "SYS010",
        "the system description's hourly price over the repeat's window and samples: priced again from them",
    ),
    typed("*/result.json runs/*/resources/*_cpu_share", "share in [0, 1] or null", _LOAD, "STR010"),
    typed("*/result.json runs/*/resources/*energy_j", "number >= 0 or 'not measured'", _COST, "STR010"),
    typed("*/result.json runs/*/resources/peak_tree_rss_mib", "number > 0 or null", _COST, "STR010"),
    typed("*/result.json runs/*/resources/peak_*_mib", "number >= 0 or null", _COST, "STR010"),
    typed("*/result.json runs/*/resources/sample_interval_ms", "integer >= 1 or null", _COST, "STR010"),
    typed("*/result.json runs/*/resources/tree_processes", "integer >= 1 or null", _COST, "STR010"),
    typed("*/result.json runs/*/resources/*_s", "number >= 0", _COST, "STR010"),
    typed("*/result.json runs/*/resources/*", "integer >= 0", _COST + " (counts: samples, processes)", "STR010"),
    must("*/result.json environment*", "REP001 RUL003", "the software stack of the run"),
    must("*/result.json system_fingerprint*", "SYS005 SYS007", "the hardware the run observed"),
    must("*/result.json rules_version", "RUL001", "the rules the run followed: the tree's"),
    must(
        "*/result.json precision",
        "INF017 INF020 ACC001 ACC003",
        "the precision the run computed in (rules 1.2): the rules' list, the other mode's run, the gate's threshold",
    ),
    must("*/result.json *", "INF006 INF008 INF017", "the run's identity and figures, as its logs and settings say"),
    must("*/settings.json *", "INF016", "the settings of the run, as LoadGen logged them and the rules fix them"),
)


def classify(label: str) -> FieldRule:
    """The first rule whose pattern matches the field's label."""
    for rule in FIELDS:
        if fnmatch.fnmatchcase(label, rule.pattern):
            return rule
    raise LookupError(f"no rule of fields.FIELDS classifies {label!r}")


def same(a: object, b: object) -> bool:
    """Whether two JSON values are the same value (1 and 1.0 are; 1 and true are not)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def judge(rule: FieldRule, original: object, new: object) -> tuple[str, frozenset[str]]:
    """("fail", codes of which one must be reported) or ("any", frozenset()) for an edit of a field."""
    if new is not DROPPED and same(original, new):
        return "any", frozenset()  # not an edit
    if rule.kind == MUST:
        return "fail", rule.codes | SHAPE_CODES
    if rule.kind == TYPED and (new is DROPPED or not DOMAINS[rule.domain](new)):
        return "fail", rule.codes | SHAPE_CODES
    return "any", frozenset()


def table_markdown() -> str:
    """The classified field table, as docs/reliability.md shows it."""
    rows = ["| field (file, MLLOG key, path) | an edit | caught by | why |", "| --- | --- | --- | --- |"]
    for rule in FIELDS:
        if rule.kind == MUST:
            edit = "must be caught"
            codes = ", ".join(sorted(rule.codes | SHAPE_CODES))
        else:
            edit = f"free within: {rule.domain}"
            codes = ", ".join(sorted(rule.codes | SHAPE_CODES)) + " (outside)"
        rows.append(f"| `{rule.pattern}` | {edit} | {codes} | {rule.why} |")
    return "\n".join(rows) + "\n"


BEGIN, END = "<!-- fields:begin -->\n", "<!-- fields:end -->"


def update_document(path: Path) -> None:
    """Replace the table between the fields markers of `path` (docs/reliability.md) with the code's."""
    text = path.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    path.write_text(text[:start] + table_markdown() + text[end:], encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--update"] and len(sys.argv) == 3:
        update_document(Path(sys.argv[2]))
    else:
        print(table_markdown(), end="")
