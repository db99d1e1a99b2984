"""Each MLPerf Inference round's scoring rules, as that round's own submission checker applies them.

    name, how = pick_round(root, option=None, loadgen_versions=["4.1 @ 2ed9555be0"])
    rnd = load_round(name)                                   # rules/mlcommons/inference_v4.1.yaml
    rnd.benchmark("resnet50")                                # "resnet" (the round's model_mapping)
    rnd.figure("resnet", "SingleStream", detail_values)      # Figure(field, "latency_ms", 0.386829)
    rnd.judge_accuracy("resnet", accuracy_txt)               # [Judged("acc", 76.078, ...)], each met or not

The numbers live in the rules files (one per round, transcribed from MLCommons'
submission checker with its commit and line numbers beside each table); this
module only applies them, the way the checker's code does (docs/mlcommons.md):
the figure is the detail log's value of the round's key for the benchmark and
the scenario LoadGen logged, latencies divided from ns to ms; accuracy is every
metric of the benchmark read from accuracy.txt with the checker's regular
expression (re.match, line by line) and compared with reference x fraction.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

import levelfield.rules
from levelfield.ground.errors import UserError

RULES_DIR = Path(levelfield.rules.__file__).parent / "mlcommons"
SHARED_FILE = RULES_DIR / "inference.yaml"
ROUND_FILE = "inference_{name}.yaml"
ROUND_NAME = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?$")  # "4.1", "v4.1", "4.1.0"
PATH_ROUND = re.compile(r"^inference_results_v(\d+\.\d+)$")  # MLCommons' results repositories
LOADGEN_VERSION = re.compile(r"^\s*(\d+)\.(\d+)")  # "4.1 @ 2ed9555be0", "5.1.0 @ 091d51f041"
# The checker's hash line (check_accuracy_dir): once every metric is met and this line is seen it stops reading.
HASH_LINE = re.compile(r"^hash=([\w\d]+)$")


@dataclass(frozen=True)
class Bound:
    metric: str  # the checker's name for it (acc, ROUGE1, TOKENS_PER_SAMPLE)
    value: float  # reference x fraction, computed as the checker computes it
    text: str  # how the rules file states it: "76.46 x 0.99"


@dataclass(frozen=True)
class Figure:
    field: str  # the detail-log key read
    metric: str  # levelfield's name, unit in the name: latency_ms, samples_per_s, tokens_per_s
    value: float | None  # None: the key is absent or not a finite number


@dataclass(frozen=True)
class Judged:
    metric: str
    kind: str  # "minimum" or "maximum"
    bound: Bound
    value: float | None  # the last value read before the checker would stop; None: no line matched
    line: int | None  # its line in accuracy.txt
    met: bool


@dataclass
class Round:
    name: str
    file: str  # the rules file, relative to rules/
    checker: dict  # repository, path, commit
    scenarios: tuple[str, ...]
    result_field: dict[str, str]
    overwrite: dict[str, dict[str, str]]
    models: tuple[str, ...]
    model_mapping: dict[str, str]
    minimum: dict[str, list[Bound]]
    maximum: dict[str, list[Bound]]
    patterns: dict[str, re.Pattern] = field(repr=False)
    units: dict[str, dict] = field(repr=False)

    def benchmark(self, folder: str, extra_mapping: dict | None = None) -> str | None:
        """The round's benchmark a results/<system>/<folder>/ stands for, as the checker's get_mlperf_model maps
        it (the name itself, the round's model_mapping, then the submitter's model_mapping.json); None when none."""
        if folder in self.models:
            return folder
        for mapping in (self.model_mapping, extra_mapping or {}):
            if isinstance(mapping.get(folder), str) and mapping[folder] in self.models:
                return mapping[folder]
        return None

    def field_for(self, benchmark: str, scenario: str) -> str | None:
        """The detail-log key of the benchmark's figure in `scenario` (the one LoadGen logged)."""
        return self.overwrite.get(benchmark, {}).get(scenario) or self.result_field.get(scenario)

    def figure(self, benchmark: str, scenario: str, values: dict) -> Figure | None:
        """The official figure from a detail log's {key: value}; None when the round reads nothing for `scenario`."""
        key = self.field_for(benchmark, scenario)
        if key is None:
            return None
        unit = self.units[key]
        raw = values.get(key)
        finite = isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw)
        # float() then a division by the int, as the checker does (res = float(...); res /= MS_TO_NS).
        value = float(raw) / unit["divide_by"] if finite and "divide_by" in unit else float(raw) if finite else None
        return Figure(key, unit["metric"], value)

    def judge_accuracy(self, benchmark: str, text: str) -> list[Judged]:
        """Every bound of the benchmark judged on accuracy.txt's text, line by line as check_accuracy_dir reads it:
        each line matched by a metric's pattern is compared with its bound; reading stops once every minimum is
        met and the hash line is seen. Empty when the round sets no bound for the benchmark."""
        bounds = [("minimum", b) for b in self.minimum.get(benchmark, [])]
        bounds += [("maximum", b) for b in self.maximum.get(benchmark, [])]
        seen: list[tuple[float | None, int | None, bool]] = [(None, None, True) for _ in bounds]
        hash_seen = False
        for lineno, line in enumerate(text.split("\n"), start=1):
            hash_seen = hash_seen or HASH_LINE.match(line) is not None
            for i, (kind, bound) in enumerate(bounds):
                match = self.patterns[bound.metric].match(line)
                if match is None:
                    continue
                try:
                    value = float(match.group(1))
                except ValueError:  # "1.2.3" matches [\d.]+; the checker's float() would raise
                    value = math.nan
                ok = value >= bound.value if kind == "minimum" else value <= bound.value
                seen[i] = (value, lineno, seen[i][2] and ok)
            minima = [s for (kind, _), s in zip(bounds, seen, strict=True) if kind == "minimum"]
            if hash_seen and all(value is not None and ok for value, _, ok in minima):
                break
        return [
            Judged(b.metric, kind, b, value, line, ok and (value is not None or kind == "maximum"))
            for (kind, b), (value, line, ok) in zip(bounds, seen, strict=True)
        ]


@functools.cache
def figure_keys() -> frozenset[str]:
    """Every detail-log key a round's figure may be read from: those with a unit in the shared rules file."""
    shared = yaml.safe_load(SHARED_FILE.read_text(encoding="utf-8"))
    return frozenset(shared["result_units"])


def known_rounds() -> list[str]:
    return sorted(
        (p.stem.removeprefix("inference_") for p in RULES_DIR.glob(ROUND_FILE.format(name="v*"))), key=_version_key
    )


def _version_key(name: str) -> tuple[int, int]:
    match = ROUND_NAME.match(name)
    return (int(match[1]), int(match[2])) if match else (-1, -1)


def _bounds(table: dict | None) -> dict[str, list[Bound]]:
    out = {}
    for model, entries in (table or {}).items():
        out[model] = []
        for e in entries:
            if "value" in e:
                out[model].append(Bound(e["metric"], e["value"], repr(e["value"])))
                continue
            reference = e["reference"] - e["minus"] if "minus" in e else e["reference"]
            text = f"({e['reference']} - {e['minus']})" if "minus" in e else f"{e['reference']}"
            out[model].append(Bound(e["metric"], reference * e["fraction"], f"{text} x {e['fraction']}"))
    return out


@functools.cache
def load_round(name: str) -> Round:
    """The round's rules; ValueError when the rules files contradict each other (a key without a unit, a metric
    without a pattern): a mistake in levelfield's rules, caught by the tests."""
    shared = yaml.safe_load(SHARED_FILE.read_text(encoding="utf-8"))
    path = RULES_DIR / ROUND_FILE.format(name=name)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    checker = shared["checkers"][data["checker"]]
    where = f"rules/mlcommons/{path.name}"
    rnd = Round(
        name=data["round"],
        file=where,
        checker={k: checker[k] for k in ("repository", "path", "commit")},
        scenarios=tuple(data["scenarios"]),
        result_field=dict(data["result_field"]),
        overwrite={m: dict(v) for m, v in (data.get("result_field_overwrite") or {}).items()},
        models=tuple(data["models"]),
        model_mapping=dict(data.get("model_mapping") or {}),
        minimum=_bounds(data.get("accuracy_target")),
        maximum=_bounds(data.get("accuracy_upper_limit")),
        patterns={k: re.compile(v) for k, v in checker["accuracy_patterns"].items()},
        units=shared["result_units"],
    )
    keys = set(rnd.result_field.values()) | {k for v in rnd.overwrite.values() for k in v.values()}
    if missing := sorted(keys - set(rnd.units)):
        raise ValueError(f"{where}: result keys without a unit in rules/mlcommons/inference.yaml: {missing}")
    metrics = {b.metric for table in (rnd.minimum, rnd.maximum) for bounds in table.values() for b in bounds}
    if missing := sorted(metrics - set(rnd.patterns)):
        raise ValueError(f"{where}: accuracy metrics without a pattern in its checker's accuracy_patterns: {missing}")
    if rnd.name != name:
        raise ValueError(f"{where}: states round {rnd.name}, expected {name}")
    return rnd


def normalise(text: str) -> str | None:
    """ "v4.1" from "4.1", "v4.1" or "4.1.0"; None when `text` names no round."""
    match = ROUND_NAME.match(text.strip())
    return f"v{int(match[1])}.{int(match[2])}" if match else None


def pick_round(root: Path, option: str | None, loadgen_versions: list[str]) -> tuple[str | None, str]:
    """(round, how it was found): --mlcommons-ruleset, else a folder of the path named inference_results_vX.Y,
    else the newest LoadGen version of the tree's detail logs (a round accepts logs of an older LoadGen, as
    MLCommons did for NVIDIA's v4.1 resnet50 Offline by LoadGen 4.0, never of a newer one). UserError when the
    option names no round levelfield holds: a typo must not fall back silently."""
    if option is not None:
        name = normalise(option)
        if name is None or name not in known_rounds():
            raise UserError(
                f"--mlcommons-ruleset {option}: not an MLPerf Inference round levelfield holds rules for "
                f"(expected one of {', '.join(known_rounds())}; rules/mlcommons/inference_vX.Y.yaml)"
            )
        return name, f"--mlcommons-ruleset {option}"
    for part in reversed(Path(root).resolve().parts):
        if match := PATH_ROUND.match(part):
            return normalise(match[1]), f"the path's folder {part}"
    found = {(int(m[1]), int(m[2])) for v in loadgen_versions if (m := LOADGEN_VERSION.match(v))}
    if found:
        major, minor = max(found)
        listed = ", ".join(sorted(set(loadgen_versions)))
        return f"v{major}.{minor}", f"the newest LoadGen version of the detail logs ({listed})"
    return None, "no --mlcommons-ruleset, no inference_results_vX.Y folder in the path, no LoadGen version logged"
