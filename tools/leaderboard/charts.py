"""The HTML page's figures for one table: time to target, each inference scenario, cost against throughput.

    from levelfield.tools.leaderboard.charts import table_figures
    html = "".join(table_figures(table, colours))     # table: columns.Table; colours: svg.colours_for(...)

Each figure is an HTML <figure>: a caption that wraps (title, unit, how to
read it, the system when the chart holds one) and the SVG. Bars and points
are labelled by `labels`: the framework always, then the processes and the
precision where they differ between the chart's rows, and the system on a
second line where the chart holds several, so no two bars read alike (a row
is one org's system and one framework).

The cost charts are drawn only where the rows carry a cost per sample
(COST_FIELDS, e.g. `energy_j_per_1000_samples`): training rows against their
`train_samples_per_s`, inference scenario entries against their samples/s
mean. With no such field in any row, nothing is drawn.
"""

from __future__ import annotations

from html import escape

from levelfield.ground.loadgen_names import SCENARIO_NAMES
from levelfield.ground.stats import shown_time_to_train
from levelfield.tools.leaderboard.columns import DASH, TRAINING_COLUMNS, Table, metric_unit
from levelfield.tools.leaderboard.scatter import Point, scatter_chart
from levelfield.tools.leaderboard.svg import SEPARATOR, Bar, bar_chart

# (row key, what it is, its unit): a cost per sample that a chart sets against throughput.
COST_FIELDS = (
    ("energy_j_per_1000_samples", "Energy per 1,000 samples", "J per 1,000 samples"),
    ("price_usd_per_million_samples", "Price per million samples", "USD per million samples"),
)
_PROCESSES = next(c for c in TRAINING_COLUMNS if c.key == "processes").text


def _processes(row: dict) -> str:
    return _PROCESSES(row) if "processes" in row else DASH  # inference rows have none


def _precision(row: dict) -> str:
    return row.get("precision") or DASH  # logged by training runs (levelfield_precision)


def _system(row: dict) -> str:
    return f"{row['org']}/{row['system_name']}"


def labels(rows: list[dict]) -> tuple[list[tuple[str, str]], str]:
    """(label, system line) per row, and the one system of them all ("" when several).

    The label is the framework, then each qualifier (processes, precision) whose values differ among
    `rows`; the system line names the row's org/system where `rows` span several systems."""
    qualifiers = [q for q in (_processes, _precision) if len({q(r) for r in rows}) > 1]
    systems = {_system(r) for r in rows}
    out = []
    for row in rows:
        parts = [row["framework"], *(q(row) for q in qualifiers)]
        out.append((SEPARATOR.join(p for p in parts if p != DASH), _system(row) if len(systems) > 1 else ""))
    return out, next(iter(systems)) if len(systems) == 1 else ""


def figure(svg: str, caption: str, system: str = "") -> str:
    on = f" All bars: {escape(system)}." if system else ""
    return f'<figure class="chart-figure"><figcaption>{escape(caption)}{on}</figcaption>\n{svg}\n</figure>'


def training_figure(rows: list[dict], colours: dict[str, str]) -> str:
    named, system = labels(rows)
    bars = [
        Bar(
            label,
            shown_time_to_train(r["time_to_target_s"])[0],
            r["time_to_target_s"]["ci95_low"],
            r["time_to_target_s"]["ci95_high"],
            r["framework"],
            line,
        )
        for r, (label, line) in zip(rows, named, strict=True)
    ]
    return figure(
        bar_chart("Time to target", bars, unit="s", colours=colours),
        "Time to target (s). Bar: olympic mean (or a single run's time); whisker: 95% CI of the successful "
        "runs' mean; lower is better.",
        system,
    )


def throughput_figure(rows: list[dict], colours: dict[str, str]) -> str:
    """Training throughput (issue 35): one bar per throughput result, labelled as the other charts are, with
    the global batch where the rows' batches differ (a figure depends on it)."""
    named, system = labels(rows)
    batches = len({r["global_batch_size"] for r in rows}) > 1
    bars = [
        Bar(
            f"{label}{SEPARATOR}batch {r['global_batch_size']}" if batches else label,
            r["train_samples_per_s"]["mean"],
            r["train_samples_per_s"]["ci95_low"],
            r["train_samples_per_s"]["ci95_high"],
            r["framework"],
            line,
        )
        for r, (label, line) in zip(rows, named, strict=True)
    ]
    return figure(
        bar_chart("Training throughput", bars, unit="samples/s", colours=colours),
        "Training throughput (samples/s). Bar: mean of the repeats; whisker: 95% CI; higher is better.",
        system,
    )


def inference_figures(table: Table, colours: dict[str, str]) -> list[str]:
    figures = []
    for scenario, metric in table.scenarios():
        entries = [(r, r["scenarios"][scenario]) for r in table.inference if scenario in r["scenarios"]]
        named, system = labels([r for r, _ in entries])
        bars = [
            Bar(label, e["mean"], e["ci95_low"], e["ci95_high"], r["framework"], line)
            for (r, e), (label, line) in zip(entries, named, strict=True)
        ]
        name = SCENARIO_NAMES.get(scenario, scenario)
        if metric and metric.endswith("_latency_ms"):  # e.g. p90_latency_ms: "SingleStream p90 latency", ms
            title, unit, better = f"{name} {metric.split('_')[0]} latency", "ms", "lower is better"
        else:
            title, unit, better = f"{name} throughput", metric_unit(metric), "higher is better"
        figures.append(
            figure(
                bar_chart(title, bars, unit=unit, colours=colours),
                f"{title} ({unit}). Bar: mean of the repeats; whisker: 95% CI; {better}.",
                system,
            )
        )
    return figures


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _throughput_scenarios(table: Table) -> list[str]:
    return [s for s, metric in table.scenarios() if metric and not metric.endswith("_latency_ms")]


def cost_figures(table: Table, colours: dict[str, str]) -> list[str]:
    """One scatter per cost field and kind (training; each throughput scenario) that some row carries."""
    groups = []  # (title, x unit, y unit, [(row, x, y)]): training first, then each scenario
    for key, name, unit in COST_FIELDS:
        found = [(r, _number(r.get("train_samples_per_s")), _number(r.get(key))) for r in table.training]
        groups.append((f"Training: {name.lower()} vs throughput", "train samples/s", unit, found))
    for scenario in _throughput_scenarios(table):
        for key, name, unit in COST_FIELDS:
            found = []
            for r in table.inference:
                entry = r["scenarios"].get(scenario)
                if entry is None:
                    continue
                # A cost per scenario entry; a row-level one only where the row has one throughput scenario.
                own = [s for s in _throughput_scenarios(table) if s in r["scenarios"]]
                cost = entry.get(key, r.get(key) if own == [scenario] else None)
                found.append((r, _number(entry.get("mean")), _number(cost)))
            title = f"{SCENARIO_NAMES.get(scenario, scenario)}: {name.lower()} vs throughput"
            groups.append((title, "samples/s", unit, found))
    figures = []
    for title, x_unit, y_unit, found in groups:
        found = [(r, x, y) for r, x, y in found if x is not None and y is not None]
        if not found:
            continue
        named, system = labels([r for r, _, _ in found])
        points = [
            Point(label, x, y, r["framework"], line) for (r, x, y), (label, line) in zip(found, named, strict=True)
        ]
        caption = f"{title}: one dot per result, throughput ({x_unit}) across, {y_unit} up; bottom right is best."
        figures.append(
            figure(scatter_chart(title, points, x_unit=x_unit, y_unit=y_unit, colours=colours), caption, system)
        )
    return figures
