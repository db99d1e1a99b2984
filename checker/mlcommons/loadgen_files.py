"""Readers of the text files of an MLCommons Inference tree (LoadGen summaries, accuracy.txt, verify_*.txt).

    summary, problems = parse_summary(raw)          # Summary, [(lineno, why)]
    accuracy, problems = parse_accuracy_txt(raw)    # {"metrics": {...}, "hash": "..."}, [(lineno, why)]
    verdict, lineno = parse_verify(raw)             # ("PASS" | "FAIL" | None, line of the verdict)
    accuracy_log_state(raw)                         # "json", "mlcommons-truncated" or why it is neither

Every reader returns what it could read and what it could not, never raising on
bad input (the caller turns problems into MLI001 findings with their line).
The summary is the human-readable file LoadGen writes next to its detail log;
its wording differs between LoadGen versions ("90th" or "90.0th percentile",
"1 warning" or "N warnings encountered"), so its lines are matched loosely and
only the ones that state the result are required.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from levelfield.ground.parse import decode, parse_json

# The metric line of the summary's first section, one per scenario (LoadGen 1.x-5.x wordings):
# "Samples per second: 756960", "Completed samples per second    : 632229.06",
# "Scheduled samples per second : 1.2e+06" (Server before 3.0), "90th percentile latency (ns) : 386822",
# "90.0th percentile latency (ns) : 386822".
METRIC_LINE = re.compile(
    r"^(?P<label>(?:Completed |Scheduled )?[Ss]amples per second"
    r"|(?P<percentile>\d+(?:\.\d+)?)th percentile latency \(ns\))\s*:\s*(?P<value>\S+)\s*$"
)
FIELD_LINE = re.compile(r"^\s*(?P<name>[^:]+?)\s*:\s*(?P<value>.*?)\s*$")
# "8 warnings encountered. See detailed log.", "1 warning encountered...", "No warnings encountered during test."
COUNT_LINE = re.compile(r"^(?P<count>\d+|No) (?P<kind>warning|error)s? encountered")
SECTION_RULE = "=" * 10
# LoadGen prints a double in its detail log with C++ iostream's default precision: 6 significant digits.
DETAIL_SIGNIFICANT_DIGITS = 6
HASH = re.compile(r"^hash=(?P<hash>[0-9a-f]{64})\s*$")
# "accuracy=76.076%, good=38038, total=50000"; "mAP=37.234%"; "{'exact_match': 83.4, 'f1': 90.8}"
ACCURACY_PAIR = re.compile(r"['\"]?(?P<name>[A-Za-z_][\w.-]*)['\"]?\s*[=:]\s*(?P<value>[-+]?\d+(?:\.\d+)?)")
VERDICT = re.compile(r"^TEST (?P<verdict>PASS|FAIL)\s*$")
# MLCommons' truncate_accuracy_log.py keeps a published mlperf_log_accuracy.json's first and last 4,096
# characters with this marker between them, so the file is not JSON and its full hash is in accuracy.txt.
TRUNCATION_KEEP_CHARS = 4096
TRUNCATION_MARKER = b"\n\n...\n\n"


@dataclass
class Summary:
    """What a LoadGen summary states; None where it does not say."""

    scenario: str | None = None
    mode: str | None = None
    metric_label: str | None = None
    metric_text: str | None = None  # as printed, so its precision is known
    metric_line: int | None = None
    percentile: float | None = None  # stream scenarios: 0.9 for "90th percentile latency (ns)"
    validity: str | None = None
    validity_line: int | None = None
    satisfied: dict[str, bool] = field(default_factory=dict)  # "Min duration satisfied": True
    warnings: int | None = None
    errors: int | None = None

    @property
    def metric(self) -> float | None:
        try:
            value = float(self.metric_text) if self.metric_text is not None else None
        except ValueError:
            return None
        return value if value is not None and math.isfinite(value) else None


def parse_summary(raw: bytes, *, performance: bool = True) -> tuple[Summary, list[tuple[int, str]]]:
    """The summary's result lines; problems when a performance summary lacks its scenario, metric or
    validity (an accuracy-mode summary states only its warnings and errors)."""
    out, problems = Summary(), []
    text, error = decode(raw)
    if error:
        return out, [(0, error)]
    section = 0  # 1: MLPerf Results Summary, 2: Additional Stats, 3: Test Parameters Used
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.startswith(SECTION_RULE):
            continue
        if line.strip() in ("MLPerf Results Summary", "Additional Stats", "Test Parameters Used"):
            section += 1
            continue
        if count := COUNT_LINE.match(line.strip()):
            value = 0 if count["count"] == "No" else int(count["count"])
            setattr(out, count["kind"] + "s", value)
            continue
        if section != 1:
            continue
        if metric := METRIC_LINE.match(line.strip()):
            out.metric_label, out.metric_text, out.metric_line = metric["label"], metric["value"], lineno
            if metric["percentile"]:
                out.percentile = float(metric["percentile"]) / 100
            if out.metric is None:
                problems.append((lineno, f"metric {metric['value']!r} is not a finite number"))
            continue
        if not (fields := FIELD_LINE.match(line)):
            continue
        name, value = fields["name"].strip(), fields["value"]
        if name == "Scenario":
            out.scenario = value
        elif name == "Mode":
            out.mode = value
        elif name == "Result is":
            out.validity, out.validity_line = value, lineno
        elif name.endswith("satisfied") and value in ("Yes", "No"):
            out.satisfied[name] = value == "Yes"
    if performance:
        for what, value in (("Scenario", out.scenario), ("a metric", out.metric_text), ("Result is", out.validity)):
            if value is None:
                problems.append((0, f"no '{what}' line in the MLPerf Results Summary section"))
    return out, problems


def printed_half_unit(text: str) -> float:
    """Half a unit of the last digit `text` prints ("632229.06": 0.005, "1.2e+06": 50000)."""
    try:
        exponent = Decimal(text).as_tuple().exponent
    except InvalidOperation:
        return 0.0
    return 0.5 * 10.0**exponent if isinstance(exponent, int) else 0.0


def detail_half_unit(value: float) -> float:
    """Half a unit of the last digit LoadGen printed `value` with in its detail log: 6 significant digits
    for a double; an integer of more digits was logged as an integer, exactly."""
    if value == 0 or isinstance(value, int) and len(str(abs(value))) > DETAIL_SIGNIFICANT_DIGITS:
        return 0.0
    return 0.5 * 10.0 ** (math.floor(math.log10(abs(value))) - (DETAIL_SIGNIFICANT_DIGITS - 1))


def parse_accuracy_txt(raw: bytes, *, needs_metric: bool = True) -> tuple[dict, list[tuple[int, str]]]:
    """{"metrics": {name: value}, "hash": sha256 hex of the full accuracy log}; the first metric printed is
    the result's (accuracy=, mAP=, ...). TEST01's accuracy.txt holds only the hash (needs_metric=False)."""
    out: dict = {"metrics": {}, "hash": None}
    text, error = decode(raw)
    if error:
        return out, [(0, error)]
    for line in text.split("\n"):
        if match := HASH.match(line.strip()):
            out["hash"] = match["hash"]
            continue
        for pair in ACCURACY_PAIR.finditer(line):
            out["metrics"].setdefault(pair["name"], float(pair["value"]))
    problems = []
    if out["hash"] is None:
        problems.append((0, "no 'hash=<64 hex digits>' line (the SHA-256 of the full mlperf_log_accuracy.json)"))
    if needs_metric and not out["metrics"]:
        problems.append((0, "no accuracy metric (a line like 'accuracy=76.076%, good=38038, total=50000')"))
    return out, problems


def parse_verify(raw: bytes) -> tuple[str | None, int | None]:
    """The compliance test's verdict, from the last `TEST PASS` or `TEST FAIL` line, and that line."""
    text, error = decode(raw)
    if error:
        return None, None
    verdict = None
    for lineno, line in enumerate(text.split("\n"), start=1):
        if match := VERDICT.match(line.strip()):
            verdict = (match["verdict"], lineno)
    return verdict or (None, None)


def accuracy_log_state(raw: bytes) -> str:
    """ "json" (a JSON list, as LoadGen writes it: `[` and `]` in a performance run), "mlcommons-truncated"
    (MLCommons' publication cut, see TRUNCATION_MARKER), else why it is neither."""
    marker_end = TRUNCATION_KEEP_CHARS + len(TRUNCATION_MARKER)
    if (
        len(raw) == marker_end + TRUNCATION_KEEP_CHARS
        and raw[TRUNCATION_KEEP_CHARS:marker_end] == TRUNCATION_MARKER
        and raw.lstrip().startswith(b"[")
    ):
        return "mlcommons-truncated"
    data, error = parse_json(raw)
    if error:
        return (
            f"neither JSON nor MLCommons' truncation of it (first and last {TRUNCATION_KEEP_CHARS} characters): {error}"
        )
    if not isinstance(data, list):
        return f"a JSON {type(data).__name__}, not the list of samples LoadGen writes"
    return "json"
