"""The leaderboard as one static HTML page: tables plus inline SVG charts, nothing fetched from the network.

    from levelfield.tools.leaderboard.render_html import render_html
    Path("leaderboard.html").write_text(render_html(doc))

Self-contained on purpose: no CDN, no web fonts, no scripts; a Content-Security-
Policy meta tag forbids every fetch, so the page renders the same offline, in
an archive, or attached to an email. Every string from a submission is
HTML-escaped. Rows carry their stable id (`<tr id="trn-...">`), so a link to
a result survives re-rendering.

Made to be read on a 1,300-pixel-wide screen without scrolling sideways: a
results table shows the columns a reader compares (MAIN_COLUMNS: who, which
framework, the figures and their Welch marks) and folds every other column
(the id, hardware, memory, energy, cost, and any column added later) into a
<details> element of its row; an inference scenario's Welch mark sits under
its figure in one cell; cells wrap. Charts (charts.py) label every bar with
its framework and share one colour per framework across the page.
"""

from __future__ import annotations

import re
from html import escape

from levelfield.tools.leaderboard.charts import cost_figures, inference_figures, throughput_figure, training_figure
from levelfield.tools.leaderboard.columns import DASH, Column, Table, number, p_value, tables
from levelfield.tools.leaderboard.mlcommons import COLUMNS as MLC_COLUMNS
from levelfield.tools.leaderboard.mlcommons import INFERENCE_COLUMNS, benchmark_tables, scenario_tables
from levelfield.tools.leaderboard.render_md import clean_mlcommons_trees, code_age_notes, codes, not_results_note
from levelfield.tools.leaderboard.svg import colours_for

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
# 1,240 px of content (plus margins) fits a 1,300 px window with its scrollbar; cells wrap, anywhere in a
# long unbroken name, so no table is wider than the page.
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1240px; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: .5rem 0 1.5rem; font-size: 13px; max-width: 100%; }
table.results { width: 100%; }
th, td { border: 1px solid #ccc; padding: 3px 7px; vertical-align: top; }
td { overflow-wrap: anywhere; }
td:not(.num) { min-width: 5em; }
th { background: #f2f2f2; text-align: left; font-weight: 600; }
th .sub, td .mark { display: block; font-weight: normal; color: #555; font-size: 12px; }
td.num { text-align: right; font-variant-numeric: tabular-nums; overflow-wrap: normal; }
td.noise { background: #fff6d5; }
td.id { font-family: ui-monospace, monospace; }
td.framework { font-weight: 600; }
tr:target { outline: 2px solid #0072b2; }
details summary { cursor: pointer; color: #0050a0; white-space: nowrap; }
details dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 10px; margin: 4px 0;
  max-width: 26rem; }
details dt { color: #555; } details dd { margin: 0; }
.note { color: #555; font-size: 13px; }
.not-results { background: #fff3cd; border: 1px solid #c9a227; padding: 8px; font-weight: bold; }
figure.chart-figure { margin: .5rem 0 1rem; }
figcaption { font-size: 13px; color: #333; margin-bottom: 2px; }
.chart { display: block; max-width: 100%; height: auto; }
"""
# What a results table shows in columns (Column.key); every other column folds into the row's details.
# A `vs-best-<scenario>` mark goes into its `scenario-<scenario>` cell.
MAIN_COLUMNS = (
    "submitter",
    "system",
    "framework",
    "processes",
    "time-to-target",
    "ci95",
    "runs",
    "samples-per-s",
    "step-time",
    "vs-fastest",
    "accuracy",
)
MARK_PREFIX, SCENARIO_PREFIX = "vs-best-", "scenario-"


def _main(column: Column) -> bool:
    return column.key in MAIN_COLUMNS or column.key.startswith((SCENARIO_PREFIX, MARK_PREFIX))


def _cell(column: Column, row: dict, mark: Column | None = None) -> str:
    text = escape(column.text(row))
    classes = ["num"] if column.numeric else ["id"] if column.key == "id" else []
    classes += ["framework"] if column.key == "framework" else []
    noise = mark.noise if mark is not None else column.noise
    if noise is not None and noise(row):
        classes.append("noise")
    if mark is not None and (shown := mark.text(row)) != DASH:
        text += f'<span class="mark">{escape(shown)}</span>'
    attr = f' class="{" ".join(classes)}"' if classes else ""
    return f"<td{attr}>{text}</td>"


def _details(columns: list[Column], row: dict) -> str:
    pairs = "".join(f"<dt>{escape(c.header)}</dt><dd>{escape(c.text(row))}</dd>" for c in columns)
    return f'<td class="more"><details><summary>{len(columns)} more</summary><dl>{pairs}</dl></details></td>'


def html_table(table_id: str, columns: list[Column], rows: list[dict], *, fold: bool = False) -> str:
    """A table of `columns`; with `fold`, only the MAIN_COLUMNS as columns and the rest in each row's
    details, a scenario's Welch mark under its figure."""
    main, more = ([c for c in columns if _main(c)], [c for c in columns if not _main(c)]) if fold else (columns, [])
    marks = {c.key[len(MARK_PREFIX) :]: c for c in main if c.key.startswith(MARK_PREFIX)}
    shown = [c for c in main if not c.key.startswith(MARK_PREFIX)]

    def mark_of(column: Column) -> Column | None:
        return marks.get(column.key[len(SCENARIO_PREFIX) :]) if column.key.startswith(SCENARIO_PREFIX) else None

    def header(column: Column) -> str:
        mark = mark_of(column)
        sub = f'<span class="sub">{escape(mark.header)}</span>' if mark is not None else ""
        return f"<th>{escape(column.header)}{sub}</th>"

    head = "".join(header(c) for c in shown) + ("<th>details</th>" if more else "")
    body = "\n".join(
        f'<tr id="{escape(row["id"])}">'
        + "".join(_cell(c, row, mark_of(c)) for c in shown)
        + (_details(more, row) if more else "")
        + "</tr>"
        for row in rows
    )
    kind = ' class="results"' if fold else ""
    return f'<table id="{escape(table_id)}"{kind}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>'


def plain_table(table_id: str, headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table id="{escape(table_id)}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>'


def comparison_rows(tests: list[dict]) -> list[list[str]]:
    rows = []
    for t in tests:
        verdict = DASH if t["within_noise"] is None else ("within noise" if t["within_noise"] else "significant")
        rows.append(
            [
                f"{t['org']}/{t['system']}",
                t["faster"],
                t["slower"],
                number(t["olympic_difference_s"]),
                number(t["t"], 3),
                number(t["df"], 3),
                p_value(t["p_value"]),
                verdict,
            ]
        )
    return rows


def section(table: Table, colours: dict[str, str]) -> list[str]:
    out = [f'<section id="{escape(table.anchor)}">', f"<h2>{escape(table.title)}</h2>"]
    if table.training:
        first = table.training[0]
        out += [
            (
                f"<h3>Training: time to {escape(str(first['quality_metric']))} &ge; "
                f"{escape(str(first['quality_target']))}</h3>"
            ),
            training_figure(table.training, colours),
            html_table(f"training-{table.anchor}", table.training_columns(), table.training, fold=True),
        ]
        if table.comparisons:
            out += [
                (
                    '<p class="note">Welch tests, frameworks on the same system (highlighted above: within '
                    "noise of the fastest).</p>"
                ),
                plain_table(
                    f"welch-{table.anchor}",
                    ["system", "faster", "slower", "olympic difference s", "t", "df", "p", "verdict"],
                    comparison_rows(table.comparisons),
                ),
            ]
    if table.throughput:
        out += [
            "<h3>Training throughput (samples/s; not a time to train)</h3>",
            throughput_figure(table.throughput, colours),
            html_table(f"throughput-{table.anchor}", table.throughput_columns(), table.throughput),
        ]
    if table.inference:
        out += [
            "<h3>Inference (LoadGen)</h3>",
            *inference_figures(table, colours),
            html_table(f"inference-{table.anchor}", table.inference_columns(), table.inference, fold=True),
        ]
    if costs := cost_figures(table, colours):
        out += ["<h3>Cost against throughput</h3>", *costs]
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
            f'<p class="note">Time to target: {escape(stats["time_to_target"])}. '
            + (f"Training throughput: {escape(stats['throughput'])}. " if stats.get("throughput") else "")
            + f"Inference: {escape(stats['inference'])}. CI: {stats['confidence']:.0%} "
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
    colours = colours_for(r["framework"] for r in doc["training"] + doc.get("throughput", []) + doc["inference"])
    for table in groups:
        out += section(table, colours)
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
