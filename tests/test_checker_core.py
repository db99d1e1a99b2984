"""The checker's machinery: parsing hostile input, the registry, the engine, the CLI and its outputs."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import levelfield.checker.checks  # noqa: F401 - registers every check
from levelfield.checker import docs
from levelfield.checker.engine import check_tree
from levelfield.checker.findings import REGISTRY, RETIRED, check
from levelfield.ground.parse import MAX_JSON_DEPTH, gunzip, parse_json, parse_mllog
from tests.conftest import REPO, assert_user_error, example_rules_version, run_cli
from tests.submission_edit import copy_tree, edit_mllog, first, reseal
from tests.test_checker_fixtures import EXAMPLE

# --- parsing -------------------------------------------------------------------------------------


def test_duplicate_json_keys_are_an_error_not_a_silent_override():
    data, error = parse_json(b'{"value": 0.95, "value": 0.80}')
    assert data is None and "duplicate key 'value'" in error


def test_nesting_bomb_is_refused_before_the_parser_recurses():
    data, error = parse_json(b"[" * 100_000 + b"]" * 100_000)
    assert data is None and f"deeper than {MAX_JSON_DEPTH}" in error


def _nested(depth: int, leaf: str = "1") -> bytes:
    """`depth` levels that alternate objects and lists around `leaf`, beside a flat sibling at each level."""
    text = leaf
    for level in range(depth):
        text = f'{{"x": 0, "in": {text}}}' if level % 2 else f"[0, {text}]"
    return text.encode()


def test_nesting_up_to_the_limit_is_read_and_one_level_more_is_refused():
    assert parse_json(_nested(MAX_JSON_DEPTH))[1] is None
    assert f"deeper than {MAX_JSON_DEPTH}" in parse_json(_nested(MAX_JSON_DEPTH + 1))[1]
    assert f"deeper than {MAX_JSON_DEPTH}" in parse_json(_nested(MAX_JSON_DEPTH, leaf="[]"))[1]  # an empty list counts
    assert parse_json(b"[" + b", ".join([b'{"a": [1, {"b": 2}]}'] * 5000) + b"]")[1] is None  # wide, shallow


def test_non_utf8_and_broken_mllog_lines_are_reported_with_line_numbers():
    log = parse_mllog(b':::MLLOG {"key": "seed", "value": 1}\n:::MLLOG {"key": "run_st\nnoise\n', "r.txt")
    assert [line.key for line in log.lines] == ["seed"]
    assert [lineno for lineno, _ in log.errors] == [2]
    assert parse_mllog(b"\xff\xfe", "r.txt").errors[0][1].startswith("not UTF-8")


def test_gzip_bomb_stops_at_the_limit():
    bomb = gzip.compress(b"0" * (2 * 1024 * 1024))
    data, error = gunzip(bomb, limit=1024 * 1024)
    assert data is None and "inflates to more than" in error
    assert gunzip(b"not gzip")[1].startswith("not valid gzip")


# --- registry ------------------------------------------------------------------------------------


def test_every_check_is_documented_and_named_as_a_problem():
    for code, registered in REGISTRY.items():
        for label in ("What:", "Why:", "Bad:", "Fix:"):
            assert registered.doc_section(label), (code, label)
    assert len({c.name for c in REGISTRY.values()}) == len(REGISTRY)


def test_a_check_without_the_docstring_sections_is_refused_at_registration():
    with pytest.raises(ValueError, match="docstring lacks"):
        check("ZZZ999", "undocumented", area="test")(lambda sub, ctx: iter(()))
    assert "ZZZ999" not in REGISTRY


@pytest.mark.parametrize("code", sorted(RETIRED))
def test_a_retired_code_or_name_is_refused_at_registration(code):
    documented = "What: x. Why: x. Bad: x. Fix: x."

    def body(sub, ctx):
        return iter(())

    body.__doc__ = documented
    with pytest.raises(ValueError, match="retired"):
        check(code, "a-new-rule", area="test")(body)
    with pytest.raises(ValueError, match="retired"):
        check("ZZZ998", RETIRED[code].name, area="test")(body)
    assert code not in REGISTRY and "ZZZ998" not in REGISTRY


def test_every_retired_code_names_registered_replacements_and_is_in_the_retired_table():
    table = docs.render().split("## Retired codes", 1)[1]
    for code, retired in RETIRED.items():
        assert code not in REGISTRY
        assert retired.replaced_by and set(retired.replaced_by) <= set(REGISTRY), code
        assert f"| {code} | `{retired.name}` | {retired.retired} |" in table
    before = docs.render().split("## Retired codes", 1)[0]
    assert not any(code in before for code in RETIRED)  # a retired code is nowhere but its table


def test_selecting_ignoring_or_waiving_a_retired_code_says_what_replaced_it(tmp_path):
    for option in ("--select", "--ignore"):
        assert_user_error(run_cli("check", "--list", option, "INF004"), "retired", "INF009", "INF014")
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text("version: 1\nwaivers:\n  - code: TRN002\n    reason: merged logs, agreed\n")
    assert_user_error(run_cli("check", str(EXAMPLE), "--waivers", str(waivers)), "retired", "TRN012", "TRN015")


def test_docs_checks_md_is_generated_from_the_checks():
    committed = (REPO / "docs" / "checks.md").read_text(encoding="utf-8")
    assert committed == docs.render(), "docs/checks.md is stale: python -m levelfield.checker.docs > docs/checks.md"


# --- engine --------------------------------------------------------------------------------------


def test_a_crashing_check_becomes_an_internal_error_finding(monkeypatch):
    registered = REGISTRY["TRN006"]

    def broken(sub, ctx):
        raise TypeError("unexpected value")
        yield  # pragma: no cover - a generator, like every check

    monkeypatch.setitem(
        REGISTRY,
        "TRN006",
        type(registered)(registered.code, registered.name, registered.area, registered.severity, broken),
    )
    report = check_tree(EXAMPLE)
    assert report.failed
    errors = [f for f in report.active if f.severity == "error"]  # a warning of the example may remain (REP003)
    assert [(f.code, "TRN006" in f.message, "TypeError" in f.message) for f in errors] == [("CHK001", True, True)]


def test_select_and_ignore_take_codes_and_prefixes():
    assert check_tree(EXAMPLE, select=["TRN"]).checks_run == sorted(c for c in REGISTRY if c.startswith("TRN"))
    assert "TRN009" not in check_tree(EXAMPLE, select=["TRN"], ignore=["TRN009"]).checks_run


# --- CLI -----------------------------------------------------------------------------------------


def _planted_seed(tmp_path: Path) -> Path:
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    seed = json.loads(
        first(tree, "training/result_0.txt").read_text().split('"key": "seed", "value": ')[1].split(",")[0]
    )
    edit_mllog(first(tree, "training/result_1.txt"), "seed", lambda e: {**e, "value": seed})
    reseal(tree)
    return tree


def test_cli_exit_codes_clean_findings_and_could_not_run(tmp_path):
    clean = run_cli("check", str(EXAMPLE))
    assert clean.returncode == 0 and "clean" in clean.stdout, clean.stdout + clean.stderr
    bad = run_cli("check", str(_planted_seed(tmp_path)))
    assert bad.returncode == 1
    assert "TRN006 seed already used by another run" in bad.stdout and "hint:" in bad.stdout
    assert_user_error(run_cli("check", str(tmp_path / "absent")), "not a submission folder")
    assert_user_error(run_cli("check", str(EXAMPLE), "--select", "XYZ"), "--select XYZ: matches no check code")


def test_json_format_is_machine_readable(tmp_path):
    result = run_cli("check", str(_planted_seed(tmp_path)), "--format", "json")
    report = json.loads(result.stdout)
    assert report["passed"] is False and report["rules_version"] == example_rules_version()
    finding = next(f for f in report["findings"] if f["severity"] == "error")
    assert finding["code"] == "TRN006" and finding["path"].endswith("training/result_1.txt")
    assert finding["line"] > 0 and finding["found"] and finding["hint"]


def test_waivers_need_a_reason_and_mark_findings_without_hiding_them(tmp_path):
    tree = _planted_seed(tmp_path)
    no_reason = tmp_path / "no-reason.yaml"
    no_reason.write_text("version: 1\nwaivers:\n  - code: TRN006\n")
    assert_user_error(run_cli("check", str(tree), "--waivers", str(no_reason)), "reason")
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text("version: 1\nwaivers:\n  - code: TRN006\n    reason: seed reuse agreed with the auditors\n")
    result = run_cli("check", str(tree), "--waivers", str(waivers))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[waived: seed reuse agreed with the auditors]" in result.stdout


def test_list_prints_every_check():
    result = run_cli("check", "--list")
    assert result.returncode == 0
    assert [line.split()[0] for line in result.stdout.splitlines()] == sorted(REGISTRY)


# --- safety --------------------------------------------------------------------------------------


def test_a_symlink_to_a_secret_outside_the_tree_is_never_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-7f3a9c\n")
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    result_log = first(tree, "training/result_0.txt")
    result_log.unlink()
    os.symlink(secret, result_log)
    for fmt in ("text", "json"):
        out = run_cli("check", str(tree), "--format", fmt)
        assert out.returncode == 1
        assert "TOP-SECRET" not in out.stdout + out.stderr
        assert "STR004" in out.stdout


def test_importing_the_checker_imports_no_framework():
    code = (
        "import sys, levelfield.checker.engine, levelfield.checker.checks, levelfield.tools.package; "
        "print(sorted(m for m in ('torch', 'tensorflow', 'jax', 'flax', 'keras') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- tampering (acceptance): each edit is caught with the right code, MANIFEST or not -------------


def test_one_changed_byte_in_a_log_is_caught(tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    log = first(tree, "training/result_2.txt")
    log.write_bytes(log.read_bytes().replace(b'"value": 0.8', b'"value": 0.9', 1))
    assert "STR006" in {f.code for f in check_tree(tree).active}


def test_swapped_accelerator_name_in_the_system_description_is_caught(tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    system = next(tree.glob("*/*/systems/*.json"))
    data = json.loads(system.read_text())
    data["accelerator_model_name"] = "NVIDIA H100 80GB HBM3"  # the runs observed no accelerator
    system.write_text(json.dumps(data, indent=2))
    reseal(tree)
    assert "SYS001" in {f.code for f in check_tree(tree).active}


def test_an_invalid_loadgen_result_edited_to_valid_is_caught(tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    detail = first(tree, "offline/performance/run_1/mlperf_log_detail.txt")
    edit_mllog(detail, "result_validity", lambda e: {**e, "value": "INVALID"})
    reseal(tree)  # a run LoadGen judged INVALID whose summary still says VALID
    assert {"INF001", "INF006", "INF007"} <= {f.code for f in check_tree(tree).active}
