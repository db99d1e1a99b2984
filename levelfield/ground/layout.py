"""The submission tree's layout: one definition, used by `levelfield package` to write and the checker to read.

    <root>/MANIFEST                                        sha256sum format, every other file
    <root>/MANIFEST.sig                                    optional: Ed25519 signature over MANIFEST
                                                           (levelfield sign; not listed in MANIFEST)
    <root>/<division>/<org>/systems/<system>.json          hardware declaration (levelfield sysinfo)
    <root>/<division>/<org>/code/levelfield.json           code reference: version, commit, rules version
    <root>/<division>/<org>/code/src/...                   open division only: the submitter's code
    <root>/<division>/<org>/code/plugins.json              the plugins whose frameworks the results ran:
                                                           distribution, version, SHA-256 of its files
    <root>/<division>/<org>/code/plugins/<distribution>/... those files, as the distribution's RECORD names
                                                           them (docs/plugins.md; never executed)
    <root>/<division>/<org>/results/<system>/<task>/<framework>/
        environment.json                                   software the runs used (from their logs)
        training/result_<i>.txt                            MLLOG, one per run
        throughput/result_<i>.txt                          rules 1.2: a training-throughput result, MLLOG,
                                                           one per repeat (levelfield train --throughput-only)
        <scenario>/performance/{result.json, settings.json}                 the repeats' summary and settings
        <scenario>/performance/run_<i>/{mlperf_log_summary.txt, mlperf_log_detail.txt}
                                                           LoadGen's files of repeat i = 1..N (N: the
                                                           profile's inference_repeats)
        <scenario>/accuracy/{mlperf_log_summary.txt, mlperf_log_detail.txt, result.json, settings.json,
                             mlperf_log_accuracy.json.gz, accuracy.json}   one LoadGen run, flat

A performance result is N timed LoadGen runs (`levelfield infer` writes them
into run_1/ .. run_N/, as MLPerf names its performance/run_1/); its
result.json holds every repeat's metric and their mean, stdev and 95% CI. An
accuracy run is one LoadGen run, its files flat in accuracy/. A training-throughput
result (rules 1.2) is its own kind beside the time-to-train result: one log per
repeat, each with its warm-up and timed step windows, in throughput/; never
mixed with training/, whose logs are times to a target.
"""

from __future__ import annotations

import re

MANIFEST = "MANIFEST"
SIGNATURE = "MANIFEST.sig"  # levelfield/ground/signing.py
SYSTEMS = "systems"
RESULTS = "results"
CODE = "code"
CODE_REF = "levelfield.json"
CODE_SRC = "src"  # open division: the submitter's own code lives below code/src/
PLUGINS_FILE = "plugins.json"  # code/plugins.json: each plugin a result ran (rules/schemas/plugins.schema.json)
PLUGINS = "plugins"  # code/plugins/<distribution>/: that plugin's installed files
ENVIRONMENT = "environment.json"
TRAINING = "training"
THROUGHPUT = "throughput"  # rules 1.2: training-throughput results, result_<i>.txt like training/
TRAINING_LOG = re.compile(r"^result_(\d{1,4})\.txt$")
PERFORMANCE, ACCURACY = "performance", "accuracy"
MODES = (PERFORMANCE, ACCURACY)
SUMMARY_LOG = "mlperf_log_summary.txt"
DETAIL_LOG = "mlperf_log_detail.txt"
RESULT = "result.json"
SETTINGS = "settings.json"
ACCURACY_JSON = "accuracy.json"  # the runner's score of an accuracy run
# One LoadGen run's own files: a performance repeat's run_<i>/ holds exactly these.
LOADGEN_FILES = (SUMMARY_LOG, DETAIL_LOG)
# A performance repeat's folder: run_1, run_2, ... (no run_0, no leading zeros; at most 4 digits).
REPEAT_FOLDER = re.compile(r"^run_([1-9]\d{0,3})$")
PERFORMANCE_FILES = (RESULT, SETTINGS)  # directly in performance/, beside the run_<i>/ folders
# LoadGen's accuracy log is stored gzip-compressed (by `levelfield package`, deterministic, mtime 0):
# it holds one entry per eval sample (~2 MB for ctr-dlrm) and compresses ~6x. MLPerf truncates it
# instead, which makes re-scoring impossible; levelfield keeps all of it.
ACCURACY_LOG = "mlperf_log_accuracy.json"
ACCURACY_LOG_STORED = ACCURACY_LOG + ".gz"
ACCURACY_FILES = LOADGEN_FILES + PERFORMANCE_FILES + (ACCURACY_LOG_STORED, ACCURACY_JSON)
MODE_FILES = {PERFORMANCE: PERFORMANCE_FILES, ACCURACY: ACCURACY_FILES}  # files directly in <mode>/
# Organisation and system ids become folder names: letters, digits, '.', '_', '-'; no leading dot.
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def system_file(system: str) -> str:
    return f"{system}.json"


def result_dir(base: str, system: str, task: str, framework: str) -> str:
    return f"{base}/{RESULTS}/{system}/{task}/{framework}"


def repeat_folder(index: int) -> str:
    """The folder of performance repeat `index` (1-based): `run_<index>`."""
    return f"run_{index}"


def repeat_index(name: str) -> int | None:
    """i of a folder named run_<i>, or None for any other name."""
    match = REPEAT_FOLDER.match(name)
    return int(match.group(1)) if match else None
