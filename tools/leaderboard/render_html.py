"""The leaderboard as one static HTML page: tables plus inline SVG charts, nothing fetched from the network.

    from levelfield.tools.leaderboard.render_html import render_html
    Path("leaderboard.html").write_text(render_html(doc))

Self-contained on purpose: no CDN, no web fonts, no scripts; a Content-Security-
Policy meta tag forbids every fetch, so the page renders the same offline, in
an archive, or attached to an email. Every string from a submission is
HTML-escaped. Rows carry their stable id (`<tr id="trn-...">`), so a link to
a result survives re-rendering.
"""

from __future__ import annotations

import re
from html import escape

from levelfield.ground.loadgen_names import SCENARIO_NAMES
from levelfield.ground.stats import shown_time_to_train
from levelfield.tools.leaderboard.columns import (
    COMPARISON_HEADERS,
    Column,
    Table,
    comparison_cells,
    metric_unit,
    tables,
)
from levelfield.tools.leaderboard.mlcommons import COLUMNS as MLC_COLUMNS
from levelfield.tools.leaderboard.mlcommons import INFERENCE_COLUMNS, benchmark_tables, scenario_tables
from levelfield.tools.leaderboard.render_md import clean_mlcommons_trees, code_age_notes, codes, not_results_note
from levelfield.tools.leaderboard.svg import Bar, bar_chart

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1400px; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: .5rem 0 1.5rem; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; vertical-align: top; }
th { background: #f2f2f2; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.noise { background: #fff6d5; }
td.id { white-space: nowrap; font-family: ui-monospace, monospace; }
tr:target { outline: 2px solid #0072b2; }
.note { color: #555; font-size: 13px; }
.not-results { background: #fff3cd; border: 1px solid #c9a227; padding: 8px; font-weight: bold; }
.chart { display: block; max-width: 100%; height: auto; margin: .5rem 0; }
"""


def _cell(column, row) -> str:
    text = column.text(row)
    classes = ["num"] if column.numeric else ["id"] if column.key == "id" else []
    if column.noise is not None and column.noise(row):
        classes.append("noise")
    attr = f' class="{" ".join(classes)}"' if classes else ""
    return f"<td{attr}>{escape(text)}</td>"


def html_table(table_id: str, columns: list[Column], rows: list[dict]) -> str:
    head = "".join(f"<th>{escape(c.header)}</th>" for c in columns)
    body = "\n".join(
        f'<tr id="{escape(row["id"])}">' + "".join(_cell(c, row) for c in columns) + "</tr>" for row in rows
    )
    return f'<table id="{escape(table_id)}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>'


def plain_table(table_id: str, headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table id="{escape(table_id)}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>'


def _label(row: dict) -> str:
    return f"{row['org']}/{row['system_name']} {row['framework']}"


def training_chart(rows: list[dict]) -> str:
    bars = [
        Bar(
            _label(r),
            shown_time_to_train(r["time_to_target_s"])[0],
            r["time_to_target_s"]["ci95_low"],
            r["time_to_target_s"]["ci95_high"],
            r["framework"],
        )
        for r in rows
    ]
    return bar_chart(
        "Time to target",
        bars,
        unit="s",
        note="bar: olympic mean (or a single run's time), whisker: 95% CI of the successful runs' "
        "mean; lower is better",
    )


def inference_charts(table: Table) -> list[str]:
    charts = []
    for scenario, metric in table.scenarios():
        entries = [(r, r["scenarios"][scenario]) for r in table.inference if scenario in r["scenarios"]]
        bars = [Bar(_label(r), e["mean"], e["ci95_low"], e["ci95_high"], r["framework"]) for r, e in entries]
        name = SCENARIO_NAMES.get(scenario, scenario)
        if metric and metric.endswith("_latency_ms"):  # e.g. p90_latency_ms: "SingleStream p90 latency", ms
            title, unit, note = f"{name} {metric.split('_')[0]} latency", "ms", "lower is better"
        else:
            title, unit, note = f"{name} throughput", metric_unit(metric), "higher is better"
        charts.append(bar_chart(title, bars, unit=unit, note=f"bar: mean of the repeats, whisker: 95% CI; {note}"))
    return charts


def section(table: Table) -> list[str]:
    out = [f'<section id="{escape(table.anchor)}">', f"<h2>{escape(table.title)}</h2>"]
    if table.training:
        first = table.training[0]
        out += [
            (
                f"<h3>Training: time to {escape(str(first['quality_metric']))} &ge; "
                f"{escape(str(first['quality_target']))}</h3>"
            ),
            training_chart(table.training),
            html_table(f"training-{table.anchor}", table.training_columns(), table.training),
        ]
        if table.comparisons:
            out += [
                (
                    '<p class="note">Welch tests, frameworks on the same system (highlighted above: within '
                    "noise of the fastest).</p>"
                ),
                plain_table(
                    f"welch-{table.anchor}", COMPARISON_HEADERS, [comparison_cells(t) for t in table.comparisons]
                ),
            ]
    if table.inference:
        out += [
            "<h3>Inference (LoadGen)</h3>",
            *inference_charts(table),
            html_table(f"inference-{table.anchor}", table.inference_columns(), table.inference),
        ]
    out.append("</section>")
    return out


def render_html(doc: dict) -> str:
    stats = doc["statistics"]
    groups = tables(doc)
    out = [
        "<!doctype html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>levelfield leaderboard</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        "<h1>levelfield leaderboard</h1>",
        *([f'<p class="not-results" id="not-results">{escape(note)}</p>'] if (note := not_results_note(doc)) else []),
        *(f'<p class="not-results code-age">{escape(text)}</p>' for text in code_age_notes(doc)),
        (
            f'<p class="note">Generated by {escape(doc["generated_by"])} from '
            f"{len(doc['submissions']) + len(clean_mlcommons_trees(doc))} clean "
            f"submission tree(s); {len(doc['excluded'])} tree(s) with findings are listed under "
            '<a href="#excluded">Not included</a>.</p>'
        ),
        (
            f'<p class="note">Time to target: {escape(stats["time_to_target"])}. Inference: '
            f"{escape(stats['inference'])}. CI: {stats['confidence']:.0%} "
            f"Student-t interval of the mean. {escape(stats['test'])}; within noise when p &ge; "
            f"{stats['alpha']}.</p>"
        ),
        *([f'<p class="note" id="reruns">{escape(stats["reruns"])}</p>'] if stats.get("reruns") else []),
    ]
    if groups or clean_mlcommons_trees(doc):
        out.append(
            "<nav><ul>"
            + "".join(f'<li><a href="#{escape(t.anchor)}">{escape(t.title)}</a></li>' for t in groups)
            + "</ul></nav>"
        )
    else:
        out.append("<p>No clean submission: nothing to rank.</p>")
    for table in groups:
        out += section(table)
    for heading, columns, groups_of in (
        ("Training: time to train, as MLCommons scores it", MLC_COLUMNS, benchmark_tables),
        ("Inference: the scenario metric, best first", INFERENCE_COLUMNS, scenario_tables),
    ):
        for title, rows in groups_of(doc):
            anchor = "mlcommons-" + "-".join(re.findall(r"[a-z0-9]+", title.lower()))
            out += [
                f'<section id="{escape(anchor)}">',
                f"<h2>{escape(title)}</h2>",
                f"<h3>{heading}</h3>",
                html_table(anchor, columns, rows),
                "</section>",
            ]
    out += [
        "<h2>Submissions</h2>",
        plain_table(
            "mlcommons-trees",
            ["MLCommons tree", "ruleset", "submitters", "warnings"],
            [
                [t["path"], t["ruleset"], ", ".join(t["submitters"]), codes(t["warnings"])]
                for t in clean_mlcommons_trees(doc)
            ],
        )
        if clean_mlcommons_trees(doc)
        else "",
        plain_table(
            "submissions",
            ["tree", "division", "org", "rules", "warnings"],
            [
                [s["path"], s["division"], s["org"], s["rules_version"], codes(s["warnings"])]
                for s in doc["submissions"]
            ],
        )
        if doc["submissions"]
        else ("" if clean_mlcommons_trees(doc) else "<p>None checked clean.</p>"),
        '<h2 id="excluded">Not included</h2>',
        '<p class="note">Trees with findings; <code>levelfield check TREE</code> explains each code.</p>'
        if doc["excluded"]
        else "<p>None: every tree checked clean.</p>",
        plain_table(
            "excluded-trees",
            ["tree", "rules", "finding codes"],
            [[e["path"], e["rules_version"], codes(e["codes"])] for e in doc["excluded"]],
        )
        if doc["excluded"]
        else "",
        "</body>",
        "</html>",
    ]
    return "\n".join(out) + "\n"
