"""The classified field table (tools/fuzz/fields.py): complete, documented, and what the fuzzer expects.

Every field the fuzzer can reseal in the example is classified; the table in
docs/reliability.md is the one the code holds; the verdict for an edit follows
the class (must: any change fails; typed: only a value outside the domain
fails; free: nothing is expected).
"""

from __future__ import annotations

import fnmatch
import gzip
import json
from pathlib import Path

import pytest

from conftest import EXAMPLE
from levelfield.tools.fuzz.fields import DROPPED, FIELDS, MUST, SHAPE_CODES, TYPED, classify, judge, table_markdown
from levelfield.tools.fuzz.sweep import edit_expectation, field_label, field_sites, role
from levelfield.tools.fuzz.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    return Workspace.create(EXAMPLE, tmp_path_factory.mktemp("fields"))


@pytest.fixture(scope="module")
def labels(ws):
    """The sweep's fields, and those only the random classes edit: an MLLOG line's key and its call site,
    and the entries of the accuracy log."""
    swept = [field_label(ws, site) for site in field_sites(ws)]
    more = set()
    for rel, data in ws.base_files.items():
        if rel.endswith(".txt") and data.startswith(b":::MLLOG"):
            for line in data.decode().split("\n"):
                if line.startswith(":::MLLOG "):
                    entry = json.loads(line[len(":::MLLOG ") :])
                    more |= {
                        f"{role(rel)} {entry['key']} {path}" for path in ("key", "metadata/file", "metadata/lineno")
                    }
        elif rel.endswith(".json.gz"):
            more |= {f"{role(rel)} {path}" for path in ("(root)", "0", "0/seq_id", "0/qsl_idx", "0/data")}
    return swept + sorted(more)


def test_every_field_of_the_example_is_classified(labels):
    assert len(labels) > 2000
    for label in labels:
        classify(label)  # raises LookupError for a field no rule covers


# Rules for fields the example cannot hold: it has Offline runs only.
OTHER_SCENARIOS = {
    "*/mlperf_log_detail.txt requested_*_expected_latency_ns value",  # SingleStream, MultiStream
    "*/settings.json expected_latency_ms",  # SingleStream, MultiStream
    "*/performance/run_N/mlperf_log_detail.txt effective_* value",  # every scenario but Offline
}


# Rules for keys the example's runs do not log. A key the trainer starts logging after the example was
# made goes here until `make example` adds it; then this test fails until it is taken off the set.
NOT_YET_IN_EXAMPLE = {
    "*/result.json precision",  # inference precision (rules 1.2, issue 35): recorded by runs after the example
    "training/result_N.txt model_bn_span value",  # logged by batch-norm tasks, which the example lacks
    # who started the processes (issue 41): logged since after the example was made
    "training/result_N.txt levelfield_launcher value/name",
    "training/result_N.txt levelfield_launcher value/*_id",
    "training/result_N.txt levelfield_launcher *",
    # the cost of a result (issue 37): recorded by runs made after the example
    "*host/gpus/*/clocks_mhz*",
    "*distributions_digest",
    "training/result_N.txt levelfield_peak_device_memory*mib value",
    "training/result_N.txt levelfield_*_cpu_share value",
    "training/result_N.txt levelfield_*energy_j value",
    "training/result_N.txt levelfield_process_cpu_s value",
    "training/result_N.txt levelfield_tree_processes value",
    "training/result_N.txt levelfield_sample_interval_ms value",
    "training/result_N.txt levelfield_price_usd value",
    "*.json sizing*_share",
    "*.json sizing/host_load_reruns/*/run",  # only where the host's load rose during a demo or smoke run
    "*.json sizing/host_load_reruns/*/result_validity",
    "*/result.json runs/*/resources/price_usd_per_million_samples",
    "*/result.json runs/*/resources/*_cpu_share",
    "*/result.json runs/*/resources/*energy_j",
    "*/result.json runs/*/resources/peak_tree_rss_mib",
    "*/result.json runs/*/resources/peak_*_mib",
    "*/result.json runs/*/resources/sample_interval_ms",
    "*/result.json runs/*/resources/tree_processes",
    "*/result.json runs/*/resources/*_s",
    "*/result.json runs/*/resources/*",
}


def test_every_rule_classifies_a_field_of_the_example(labels):
    """A rule that matches nothing is either dead or misspelt (the first match wins, so shadowed too)."""
    used = {classify(label).pattern for label in labels}
    unused = {rule.pattern for rule in FIELDS if rule.pattern not in used}
    assert unused == OTHER_SCENARIOS | NOT_YET_IN_EXAMPLE


def test_the_documented_table_is_the_codes_table():
    doc = (REPO / "docs" / "reliability.md").read_text(encoding="utf-8")
    assert table_markdown() in doc, "python -m levelfield.tools.fuzz.fields --update docs/reliability.md"


def test_roles_name_a_files_place_in_any_tree():
    base = "closed/org/results/box/ctr-dlrm/jax"
    assert role(f"{base}/offline/performance/run_12/mlperf_log_detail.txt") == (
        "offline/performance/run_N/mlperf_log_detail.txt"
    )
    assert role(f"{base}/training/result_3.txt") == "training/result_N.txt"
    assert role("closed/org/systems/box.json") == "systems/<system>.json"
    assert role("closed/org/code/levelfield.json") == "code/levelfield.json"


def _rule(kind):
    return next(rule for rule in FIELDS if rule.kind == kind)


def test_an_unchanged_value_is_no_edit():
    for kind in (MUST, TYPED):
        assert judge(_rule(kind), 1, 1.0) == ("any", frozenset())
    assert judge(_rule(MUST), 1, True)[0] == "fail"  # true is not 1


def test_a_must_field_fails_on_any_change_and_a_typed_one_outside_its_domain():
    must = _rule(MUST)
    assert judge(must, "a", "b") == ("fail", must.codes | SHAPE_CODES)
    assert judge(must, "a", DROPPED)[0] == "fail"
    typed = classify("offline/accuracy/result.json warmup_s")
    assert typed.kind == TYPED
    assert judge(typed, 5.6, 0.5) == ("any", frozenset())
    assert judge(typed, 5.6, -1)[0] == "fail"
    assert judge(typed, 5.6, "1.0")[0] == "fail"


def test_a_rules_pattern_is_matched_across_folders_and_keys():
    rule = classify("training/result_N.txt opt_base_learning_rate value")
    assert rule.kind == MUST and "TRN016" in rule.codes
    assert fnmatch.fnmatchcase("a/b c/d", "a*d")


def _first(ws, suffix):
    return next(rel for rel in sorted(ws.base_files) if rel.endswith(suffix))


def test_a_resealed_edit_is_judged_by_the_field_it_changed(ws):
    rel = _first(ws, "offline/performance/result.json")
    data = json.loads(ws.base_files[rel])
    for key, new, expect in [("loadgen_errors", 3, "fail"), ("warmup_s", 0.5, "any"), ("warmup_s", "x", "fail")]:
        edited = json.dumps({**data, key: new}).encode()
        assert edit_expectation(rel, ws.base_files[rel], edited)[0] == expect, key


def test_a_resealed_mllog_edit_is_judged_by_its_line(ws):
    rel = _first(ws, "training/result_0.txt")
    lines = ws.base_files[rel].decode().split("\n")
    i = next(i for i, line in enumerate(lines) if '"key": "opt_base_learning_rate"' in line)
    entry = json.loads(lines[i][len(":::MLLOG ") :])
    lines[i] = ":::MLLOG " + json.dumps({**entry, "value": entry["value"] * 1.01})
    expect, codes = edit_expectation(rel, ws.base_files[rel], "\n".join(lines).encode())
    assert expect == "fail" and "TRN016" in codes


def test_an_unreadable_edit_must_fail_and_an_added_key_is_free(ws):
    rel = _first(ws, "accuracy/accuracy.json")
    text = ws.base_files[rel].decode()
    assert edit_expectation(rel, ws.base_files[rel], text.replace("32768", "NaN").encode()) == ("fail", SHAPE_CODES)
    added = json.dumps({**json.loads(text), "comment": "x"}).encode()
    assert edit_expectation(rel, ws.base_files[rel], added) == ("any", frozenset())


def test_a_seq_id_is_typed_and_a_prediction_must_be_caught(ws):
    rule = classify("offline/accuracy/mlperf_log_accuracy.json.gz 7/seq_id")
    assert rule.kind == TYPED and judge(rule, 7, 8) == ("any", frozenset()) and judge(rule, 7, DROPPED)[0] == "fail"
    assert classify("offline/accuracy/mlperf_log_accuracy.json.gz (root)").codes >= {"ACC001"}


def test_the_accuracy_log_is_judged_inside_its_gzip_stream(ws):
    rel = _first(ws, "mlperf_log_accuracy.json.gz")
    entries = json.loads(gzip.decompress(ws.base_files[rel]))
    entries[0]["qsl_idx"] = entries[0]["qsl_idx"] + 1
    expect, codes = edit_expectation(rel, ws.base_files[rel], gzip.compress(json.dumps(entries).encode()))
    assert expect == "fail" and "ACC001" in codes
