"""Leaderboard tables from clean submission trees: `levelfield leaderboard`.

    levelfield leaderboard submissions/example --format html --out leaderboard.html

    from levelfield.tools.leaderboard import leaderboard
    text = leaderboard([Path("submissions/example")], "md")

Pipeline, one module per step:

    collect.py   check every tree (levelfield check); keep clean ones, list the rest with their codes
    rows.py      one row per result: training runs -> olympic score, CI; LoadGen runs -> scenario metrics
    document.py  all rows + Welch tests between frameworks on one system: the canonical JSON document
    columns.py   the human tables: grouping per task, headers with units, number format
    render_*.py  md (tabulate), csv, html (+ svg.py charts); json is the document itself

JSON schema of the document: rules/schemas/leaderboard.schema.json.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FORMATS = ("md", "csv", "json", "html")


def render(doc: dict, fmt: str) -> str:
    """The document in one of FORMATS."""
    if fmt == "json":
        return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if fmt == "md":
        from levelfield.tools.leaderboard.render_md import render_markdown

        return render_markdown(doc)
    if fmt == "csv":
        from levelfield.tools.leaderboard.render_csv import render_csv

        return render_csv(doc)
    if fmt == "html":
        from levelfield.tools.leaderboard.render_html import render_html

        return render_html(doc)
    raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")


def build(paths: list[Path], **options: Any) -> dict:
    """The leaderboard document of these trees; options as collect.collect (rules_dir, rules_version, data_dir,
    profile, trusted_keys)."""
    from levelfield.tools.leaderboard.collect import collect
    from levelfield.tools.leaderboard.document import build_document

    return build_document(collect(paths, **options))


def leaderboard(paths: list[Path], fmt: str, **options: Any) -> str:
    return render(build(paths, **options), fmt)
