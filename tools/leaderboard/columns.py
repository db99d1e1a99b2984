"""What the human views (Markdown, HTML) show: tables per task, their columns, headers with units, number format.

    from levelfield.tools.leaderboard.columns import tables
    for table in tables(doc):
        table.title, table.training_columns(), table.inference_columns()
        [column.text(row) for column in table.training_columns()]

One list of columns serves Markdown and HTML, so both show the same cells.
Optional columns (energy, device memory, cost, the process tree's memory, CPU
use, the host's load) appear only when some row of the table has a value: a
CPU-only table is not padded with empty columns. A result whose runs shared the
host with other work above the rules' threshold is marked `loaded` in the
host-load column (rules 1.2's checks.host_load_max_others_share; SYS009).
An inference scenario shows `mean [CI low-high]` of its repeats and, beside
it, its Welch mark against the best framework on the system; a training-
throughput row (rules 1.2) the same of its repeats' samples/s, in its own
table beside the time-to-train one, never in it.
CSV and JSON carry every field, unrounded (render_csv.py, document.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from levelfield.ground.loadgen_names import SCENARIO_NAMES
from levelfield.ground.stats import shown_time_to_train

DASH = "–"  # an empty cell: the value does not exist (not zero)
# The fields that make one table; document.py sorts the rows by them first, so a table's rows are adjacent.
TABLE_KEY = ("rules_version", "division", "task")


def number(value: float | None, digits: int = 4) -> str:
    """`digits` significant digits, thousands separated from 10,000 up; DASH for None."""
    if value is None:
        return DASH
    if abs(value) >= 10_000:
        return f"{value:,.0f}"
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def p_value(p: float | None) -> str:
    if p is None:
        return DASH
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


# The Welch tests' table (frameworks on one system), the same in every format: its headers, and one row per test.
COMPARISON_HEADERS = ["system", "faster", "slower", "olympic difference s", "t", "df", "p", "verdict"]


def comparison_cells(test: dict) -> list[str]:
    """One Welch test's row, unescaped (each renderer escapes for its format)."""
    verdict = DASH if test["within_noise"] is None else ("within noise" if test["within_noise"] else "significant")
    return [
        f"{test['org']}/{test['system']}",
        test["faster"],
        test["slower"],
        number(test["olympic_difference_s"]),
        number(test["t"], 3),
        number(test["df"], 3),
        p_value(test["p_value"]),
        verdict,
    ]


@dataclass(frozen=True)
class Column:
    key: str  # stable name, used for HTML classes
    header: str  # what a reader sees, units included
    text: Callable[[dict], str]
    optional: bool = False  # shown only when some row has a value
    numeric: bool = False  # right-aligned
    noise: Callable[[dict], bool] | None = None  # a Welch mark: True where the row is within noise (HTML)


def _accelerators(row: dict) -> str:
    return f"{row['accelerator_count']} x {row['accelerator']}" if row["accelerator_count"] else "none"


def _processes(row: dict) -> str:
    """`per node x nodes`: "2 x 1 node", "4 x 2 nodes" (DASH where the logs hold no process count)."""
    total, nodes = row["processes"], row["process_nodes"]
    if total is None or not nodes:
        return DASH
    plural = "node" if nodes == 1 else "nodes"
    return f"{total // nodes} x {nodes} {plural}" if total % nodes == 0 else f"{total} over {nodes} {plural}"


def _framework(row: dict) -> str:
    return f"{row['framework']} {row['framework_version']}" if row.get("framework_version") else row["framework"]


def _runs(row: dict) -> str:
    return f"{row['runs']} ({row['failed_runs']} failed)" if row["failed_runs"] else str(row["runs"])


def _time_to_target(row: dict) -> str:
    """The olympic mean, or a lone run's time labelled as such (levelfield.ground.stats.shown_time_to_train)."""
    value, kind = shown_time_to_train(row["time_to_target_s"])
    return number(value) if kind != "single run" else f"{number(value)} (single run)"


def _ci(row: dict) -> str:
    t = row["time_to_target_s"]
    return DASH if t["ci95_low"] is None else f"[{number(t['ci95_low'])}, {number(t['ci95_high'])}]"


def welch_mark(mark: dict | None, top_key: str, top_word: str) -> str:
    """A Welch mark: the top row (`top_word`), within noise of it (≈), or slower beyond noise."""
    if mark is None:
        return DASH
    if mark[top_key]:
        return top_word
    if mark["within_noise"] is None:
        return f"untestable vs {mark['framework']}"
    if mark["within_noise"]:
        return f"≈ {mark['framework']}, within noise ({p_value(mark['p_value'])})"
    return f"slower than {mark['framework']} ({p_value(mark['p_value'])})"


def vs_fastest(row: dict) -> str:
    """The training mark: fastest, within noise of the fastest (≈), or slower beyond noise."""
    return welch_mark(row.get("vs_fastest"), "fastest", "fastest")


def _within_noise(mark: dict | None) -> bool:
    return bool(mark and mark.get("within_noise"))


def _get(*keys: str) -> Callable[[dict], object]:
    def get(row: dict):
        for key in keys:
            row = row.get(key) if isinstance(row, dict) else None
        return row

    return get


def _num(*keys: str, digits: int = 4) -> Callable[[dict], str]:
    get = _get(*keys)
    return lambda row: number(get(row), digits)


LOADED = "loaded"  # the mark of a result measured beside other work (rules: checks.host_load_max_others_share)


def percent(value: float | None) -> str:
    """A share of the host's CPU time as a whole percent; DASH for None."""
    return DASH if value is None else f"{value:.0%}"


def _share(*keys: str) -> Callable[[dict], str]:
    get = _get(*keys)
    return lambda row: percent(get(row))


def host_load(row: dict) -> str:
    """The busiest run's other processes as a percent of the host's CPU time, marked LOADED above the rules'
    threshold."""
    text = percent(row.get("others_cpu_share_max"))
    return f"{text} {LOADED}" if row.get("host_loaded") else text


SYSTEM_COLUMNS = [
    Column("id", "id", _get("id")),
    Column("submitter", "submitter", _get("org")),
    Column("system", "system", _get("system_name")),
    Column("accelerators", "accelerators", _accelerators),
    Column("cpu", "CPU", lambda r: r["cpu"] or DASH),
    Column("framework", "framework", _framework),
    Column("compile-mode", "compile mode", lambda r: r["compile_mode"] or DASH),
]

# A training row also shows, beside the hardware, the processes the result trained on.
_AFTER_CPU = [c.key for c in SYSTEM_COLUMNS].index("cpu") + 1
_TRAINING_SYSTEM_COLUMNS = [
    *SYSTEM_COLUMNS[:_AFTER_CPU],
    Column("processes", "processes (per node x nodes)", _processes),
    Column("precision", "precision", lambda r: r.get("precision") or DASH, optional=True),
    *SYSTEM_COLUMNS[_AFTER_CPU:],
]

# The global batch of a training or throughput row (a figure depends on it).
BATCH_COLUMN = Column(
    "batch", "batch", lambda r: DASH if r["global_batch_size"] is None else str(r["global_batch_size"]), numeric=True
)

TRAINING_COLUMNS = _TRAINING_SYSTEM_COLUMNS + [
    BATCH_COLUMN,
    Column("time-to-target", "time to target s (olympic mean)", _time_to_target, numeric=True),
    Column("ci95", "95% CI s", _ci, numeric=True),
    Column("runs", "runs", _runs, numeric=True),
    # Throughput beside the time to target: what practitioners compare first (older logs lack it).
    Column("samples-per-s", "train samples/s", _num("train_samples_per_s"), optional=True, numeric=True),
    Column("step-time", "step ms", _num("step_time_ms"), optional=True, numeric=True),
    Column(
        "vs-fastest", "vs fastest on system (Welch)", vs_fastest, noise=lambda r: _within_noise(r.get("vs_fastest"))
    ),
    Column("first-step", "time to first step s", _num("time_to_first_step_s"), numeric=True),
    Column("peak-host-memory", "peak host memory MiB", _num("peak_host_memory_mib"), numeric=True),
    *[  # the cost of a result, shown where its runs recorded it (issue 37)
        Column(
            "peak-tree-memory",
            "peak memory, process tree MiB",
            _num("peak_tree_memory_mib"),
            optional=True,
            numeric=True,
        ),
        Column("cpu-use", "CPU use, % of host", _share("process_cpu_share"), optional=True, numeric=True),
        Column("host-load", "other processes, % of host CPU (max)", host_load, optional=True, numeric=True),
    ],
    Column("peak-device-memory", "peak device memory MiB", _num("peak_device_memory_mib"), optional=True, numeric=True),
    Column("energy", "GPU energy per run J", _num("energy_per_run_j"), optional=True, numeric=True),
    Column("cpu-energy", "CPU energy per run J", _num("cpu_energy_per_run_j"), optional=True, numeric=True),
    Column("cost", "cost per run USD", _num("cost_per_run_usd", digits=3), optional=True, numeric=True),
    Column("price", "price per run USD (logged)", _num("price_per_run_usd", digits=3), optional=True, numeric=True),
]

# An inference row's cost over its scenarios (per-scenario energy and price: scenario_columns).
INFERENCE_COST_COLUMNS = [
    Column(
        "peak-tree-memory", "peak memory, process tree MiB", _num("peak_tree_memory_mib"), optional=True, numeric=True
    ),
    Column("host-load", "other processes, % of host CPU (max)", host_load, optional=True, numeric=True),
]


def spread_ci(figures: dict) -> str:
    """`mean [low-high]` of a spread (the mean alone without a CI, e.g. one repeat)."""
    return mean_ci(figures)


def vs_fastest_throughput(row: dict) -> str:
    """A throughput row's mark: fastest among its peers, within noise of the fastest (≈), or slower."""
    return welch_mark(row.get("vs_fastest"), "fastest", "fastest")


def _steps(row: dict) -> str:
    """`warm-up + timed` steps of each repeat."""
    if row["timed_steps"] is None:
        return DASH
    return f"{row['warmup_steps'] if row['warmup_steps'] is not None else DASH} + {row['timed_steps']}"


def _scaling(row: dict) -> str:
    """`--scaling` results: N-process samples/s over N x the 1-process figure, and that figure."""
    scaling = row.get("scaling")
    if not scaling or scaling["efficiency"] is None:
        return DASH
    return f"{scaling['efficiency']:.2f} ({scaling['reference_samples_per_s']:.4g})"


THROUGHPUT_COLUMNS = _TRAINING_SYSTEM_COLUMNS + [
    BATCH_COLUMN,
    Column("precision", "precision", lambda r: r["precision"] or DASH),
    Column("steps", "steps (warm-up + timed)", _steps, numeric=True),
    Column("repeats", "repeats", lambda r: str(r["repeats"]), numeric=True),
    Column(
        "samples-per-s", "train samples/s mean [95% CI]", lambda r: spread_ci(r["train_samples_per_s"]), numeric=True
    ),
    Column("step-time", "step ms mean [95% CI]", lambda r: spread_ci(r["step_time_ms"]), numeric=True),
    Column(
        "vs-fastest",
        "vs fastest on system, batch, precision (Welch)",
        vs_fastest_throughput,
        noise=lambda r: _within_noise(r.get("vs_fastest")),
    ),
    Column(
        "scaling-efficiency", "scaling efficiency vs 1 process (its samples/s)", _scaling, optional=True, numeric=True
    ),
    Column("peak-host-memory", "peak host memory MiB", _num("peak_host_memory_mib"), numeric=True),
    Column("peak-device-memory", "peak device memory MiB", _num("peak_device_memory_mib"), optional=True, numeric=True),
]


def metric_unit(metric: str | None) -> str:
    """`p90_latency_ms` -> `p90 ms`, `samples_per_s` -> `samples/s` (the unit a header shows)."""
    if metric is None:
        return ""
    if metric.endswith("_latency_ms"):
        return metric[: -len("_latency_ms")] + " ms"
    return metric.replace("_per_", "/")


def scenario_header(scenario: str, metric: str | None) -> str:
    return f"{SCENARIO_NAMES.get(scenario, scenario)} {metric_unit(metric)}".strip()


def mean_ci(entry: dict | None) -> str:
    """`mean [low-high]` of a scenario's repeats (the mean alone when there is no CI, e.g. one repeat)."""
    if entry is None or entry["mean"] is None:
        return DASH
    if entry["ci95_low"] is None:
        return number(entry["mean"])
    return f"{number(entry['mean'])} [{number(entry['ci95_low'])}-{number(entry['ci95_high'])}]"


def scenario_columns(scenario: str, metric: str | None) -> list[Column]:
    """A scenario's two inference columns: its metric (mean and 95% CI of the repeats) and its Welch mark."""
    name = SCENARIO_NAMES.get(scenario, scenario)

    def entry(row: dict) -> dict | None:
        return row["scenarios"].get(scenario)

    def mark(row: dict) -> dict | None:
        return (entry(row) or {}).get("vs_best")

    def cost(key: str, digits: int = 4) -> Callable[[dict], str]:
        return lambda r: number((entry(r) or {}).get(key), digits)

    return [
        Column(
            f"scenario-{scenario}",
            f"{scenario_header(scenario, metric)} mean [95% CI]",
            lambda r: mean_ci(entry(r)),
            numeric=True,
        ),
        Column(
            f"vs-best-{scenario}",
            f"{name} vs best on system (Welch)",
            lambda r: welch_mark(mark(r), "best", "best"),
            optional=True,
            noise=lambda r: _within_noise(mark(r)),
        ),
        Column(
            f"gpu-energy-{scenario}",
            f"{name} GPU energy J per 1,000 samples",
            cost("gpu_energy_per_1000_samples_j"),
            optional=True,
            numeric=True,
        ),
        Column(
            f"cpu-energy-{scenario}",
            f"{name} CPU energy J per 1,000 samples",
            cost("cpu_energy_per_1000_samples_j"),
            optional=True,
            numeric=True,
        ),
        Column(
            f"price-{scenario}",
            f"{name} USD per million samples",
            cost("price_usd_per_million_samples", digits=3),
            optional=True,
            numeric=True,
        ),
    ]


@dataclass
class Table:
    """One task of one division under one rules version: its training, throughput and inference rows."""

    rules_version: str
    division: str
    task: str
    training: list[dict] = field(default_factory=list)
    inference: list[dict] = field(default_factory=list)
    throughput: list[dict] = field(default_factory=list)  # rules 1.2 training-throughput results
    comparisons: list[dict] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{self.task} · {self.division} division · rules {self.rules_version}"

    @property
    def anchor(self) -> str:
        return f"{self.task}-{self.division}-{self.rules_version}".replace(".", "_")

    def training_columns(self) -> list[Column]:
        return _present(TRAINING_COLUMNS, self.training)

    def throughput_columns(self) -> list[Column]:
        return _present(THROUGHPUT_COLUMNS, self.throughput)

    def scenarios(self) -> list[tuple[str, str | None]]:
        """(scenario, metric name) of every scenario some row has, in the rules' order."""
        found: dict[str, str | None] = {}
        for row in self.inference:
            for scenario, entry in row["scenarios"].items():
                if found.get(scenario) is None:
                    found[scenario] = entry["metric"]
        order = list(SCENARIO_NAMES)
        return sorted(found.items(), key=lambda item: order.index(item[0]) if item[0] in order else len(order))

    def inference_columns(self) -> list[Column]:
        columns = list(SYSTEM_COLUMNS)
        for scenario, metric in self.scenarios():
            columns += scenario_columns(scenario, metric)
        metric = next((r["accuracy_metric"] for r in self.inference if r["accuracy_metric"]), None)
        columns.append(
            Column(
                "accuracy", f"accuracy ({metric})" if metric else "accuracy", _num("accuracy", digits=4), numeric=True
            )
        )
        columns += INFERENCE_COST_COLUMNS
        return _present(columns, self.inference)


def _present(columns: list[Column], rows: list[dict]) -> list[Column]:
    return [c for c in columns if not c.optional or any(c.text(r) != DASH for r in rows)]


def tables(doc: dict) -> list[Table]:
    """The document's rows grouped into tables, ordered by rules version, division, task."""
    out: dict[tuple, Table] = {}

    def table(row: dict) -> Table:
        key = tuple(row[k] for k in TABLE_KEY)
        return out.setdefault(key, Table(*key))

    for row in doc["training"]:
        table(row).training.append(row)
    for row in doc.get("throughput", []):
        table(row).throughput.append(row)
    for row in doc["inference"]:
        table(row).inference.append(row)
    for test in doc["comparisons"]:
        table(test).comparisons.append(test)
    return [out[k] for k in sorted(out)]
