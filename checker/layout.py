"""The submission tree's layout: one definition, used by `levelfield package` to write and the checker to read.

    <root>/MANIFEST                                        sha256sum format, every other file
    <root>/<division>/<org>/systems/<system>.json          hardware declaration (levelfield sysinfo)
    <root>/<division>/<org>/code/levelfield.json           code reference: version, commit, rules version
    <root>/<division>/<org>/code/src/...                   open division only: the submitter's code
    <root>/<division>/<org>/results/<system>/<task>/<framework>/
        environment.json                                   software the runs used (from their logs)
        training/result_<i>.txt                            MLLOG, one per run
        <scenario>/performance/{mlperf_log_summary.txt, mlperf_log_detail.txt, result.json, settings.json}
        <scenario>/accuracy/{... the same, mlperf_log_accuracy.json.gz, accuracy.json}
"""

from __future__ import annotations

import re

MANIFEST = "MANIFEST"
SYSTEMS = "systems"
RESULTS = "results"
CODE = "code"
CODE_REF = "levelfield.json"
CODE_SRC = "src"                   # open division: the submitter's own code lives below code/src/
ENVIRONMENT = "environment.json"
TRAINING = "training"
TRAINING_LOG = re.compile(r"^result_(\d{1,4})\.txt$")
MODES = ("performance", "accuracy")
PERFORMANCE_FILES = ("mlperf_log_summary.txt", "mlperf_log_detail.txt", "result.json", "settings.json")
# LoadGen's accuracy log is stored gzip-compressed (by `levelfield package`, deterministic, mtime 0):
# it holds one entry per eval sample (~2 MB for ctr-dlrm) and compresses ~6x. MLPerf truncates it
# instead, which makes re-scoring impossible; levelfield keeps all of it.
ACCURACY_LOG = "mlperf_log_accuracy.json"
ACCURACY_LOG_STORED = ACCURACY_LOG + ".gz"
ACCURACY_FILES = PERFORMANCE_FILES + (ACCURACY_LOG_STORED, "accuracy.json")
MODE_FILES = {"performance": PERFORMANCE_FILES, "accuracy": ACCURACY_FILES}
# Organisation and system ids become folder names: letters, digits, '.', '_', '-'; no leading dot.
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def system_file(system: str) -> str:
    return f"{system}.json"


def result_dir(base: str, system: str, task: str, framework: str) -> str:
    return f"{base}/{RESULTS}/{system}/{task}/{framework}"
