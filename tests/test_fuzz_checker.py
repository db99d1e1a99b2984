"""The checker under fuzzing, CI share: a few hundred seeded inputs; `make fuzz` runs 10,000.

Hypothesis drives two layers. The parsers get arbitrary bytes and hostile
JSON text and must return a result or a reason, never raise. The checker gets
working copies of submissions/example damaged by the fuzz tool
(`levelfield.tools.fuzz`): every defect class once, then classes, places and
seeds drawn by hypothesis, then arbitrary JSON values written into arbitrary
fields. Each input must end in coded findings and a failing verdict where the
class requires one: never an exception, a CHK001 internal error, a clean
verdict for a damaged tree, or the secret of a file outside the tree in the
report. The last tests show that the fuzz tool's own detectors can fail.

Settings: derandomized (the same examples on every run), no example database,
no deadline (a gzip bomb takes a second), bounded example counts.
"""

from __future__ import annotations

import json
import random
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from levelfield.checker.findings import REGISTRY, Finding
from levelfield.ground.parse import gunzip, parse_json, parse_json_text, parse_mllog
from levelfield.tools.fuzz.case import Case
from levelfield.tools.fuzz.cases import ALL_CLASSES, PRELUDE_ONLY, make_case
from levelfield.tools.fuzz.mutate import JSON, MLLOG, file_kind
from levelfield.tools.fuzz.run import check_case, prepared
from levelfield.tools.fuzz.sweep import field_sites, sweep_case
from levelfield.tools.fuzz.workspace import Write
from tests.test_checker_fixtures import EXAMPLE

CI = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory):
    with prepared(EXAMPLE, tmp_path_factory.mktemp("fuzz")) as (ws, reuse):
        yield ws, reuse


def assert_ok(outcome) -> None:
    assert outcome.problem is None, f"{outcome.case.describe()}: {outcome.problem}: {outcome.detail}"


# --- parsers: arbitrary input, a result or a reason --------------------------------------------------


@settings(CI, max_examples=300)
@given(st.binary(max_size=600))
def test_parsers_never_raise_on_arbitrary_bytes(raw):
    data, error = parse_json(raw)
    assert error is None or (data is None and isinstance(error, str))
    log = parse_mllog(b":::MLLOG " + raw, "r.txt")
    assert all(isinstance(lineno, int) and isinstance(why, str) for lineno, why in log.errors)
    inflated, problem = gunzip(raw)
    assert (inflated is None) != (problem is None)


JSON_TOKENS = st.sampled_from(
    [
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        '"',
        "\\",
        "NaN",
        "-Infinity",
        "1e999",
        "9" * 5000,
        "\ud800",
        "\x00",
        "null",
        "true",
        " ",
        "\u2028",
        '"a"',
        "0",
        "-",
    ]
)


@settings(CI, max_examples=150)
@given(st.lists(JSON_TOKENS | st.text(max_size=5), max_size=40))
def test_json_parser_never_raises_on_token_soup(tokens):
    data, error = parse_json_text("".join(tokens))
    assert error is None or (data is None and isinstance(error, str))


# --- the checker: every class once, then drawn classes, places and seeds -----------------------------


@pytest.mark.parametrize("cls", sorted(set(ALL_CLASSES) - PRELUDE_ONLY))
def test_each_defect_class_ends_in_coded_findings(fuzz, cls):
    ws, reuse = fuzz
    assert_ok(check_case(ws, make_case(random.Random(f"ci:{cls}"), ws, cls), reuse=reuse))


@settings(CI, max_examples=60)
@given(cls=st.sampled_from(sorted(set(ALL_CLASSES) - PRELUDE_ONLY)), seed=st.integers(0, 2**32))
def test_drawn_inputs_end_in_coded_findings(fuzz, cls, seed):
    ws, reuse = fuzz
    assert_ok(check_case(ws, make_case(random.Random(seed), ws, cls), reuse=reuse))


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.floats()
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.text(alphabet=string.printable + "\u00e9\u2028\U0001f600", max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def _write_value(ws, rel: str, rng: random.Random, value) -> bytes:
    """The file with the value at a random node: a JSON field, or the value/metadata of an MLLOG line."""
    data = ws.base_files[rel]
    if file_kind(rel) == JSON:
        doc = json.loads(data)
        return json.dumps(_replace(doc, rng, value), indent=2).encode()
    lines = data.decode().splitlines(keepends=True)
    i = rng.choice([n for n, line in enumerate(lines) if line.startswith(":::MLLOG ")])
    entry = json.loads(lines[i][len(":::MLLOG ") :])
    lines[i] = ":::MLLOG " + json.dumps(_replace(entry, rng, value)) + "\n"
    return "".join(lines).encode("utf-8")


def _replace(doc, rng: random.Random, value):
    node, parent, key = doc, None, None
    while isinstance(node, (dict, list)) and node and rng.random() < 0.75:
        parent, key = node, rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
        node = node[key]
    if parent is None:
        return value
    parent[key] = value
    return doc


@settings(CI, max_examples=60)
@given(value=JSON_VALUES, seed=st.integers(0, 2**32), reseal=st.booleans())
def test_any_json_value_in_any_field_is_survived(fuzz, value, seed, reseal):
    ws, reuse = fuzz
    rng = random.Random(seed)
    rel = rng.choice(sorted(r for r in ws.base_files if file_kind(r) in (JSON, MLLOG)))
    case = Case(
        seed,
        "hypothesis-value",
        rel,
        [Write(rel, _write_value(ws, rel, rng, value))],
        resealed=reseal,
        expect="any" if reseal else "fail",
    )
    assert_ok(check_case(ws, case, reuse=reuse))


def test_the_share_checked_without_reuse_agrees(fuzz):
    """A sampled share of `make fuzz` runs check_tree exactly as shipped; the same input, both ways."""
    ws, reuse = fuzz
    case = make_case(random.Random("ci:full"), ws, "duplicate-key")
    misses = reuse.misses
    reused = check_case(ws, case, reuse=reuse)
    assert reuse.misses > misses  # the damaged file was parsed for real, not answered from memory
    shipped = check_case(ws, case, reuse=reuse, full=True)
    assert_ok(shipped)
    assert (reused.codes, reused.failed) == (shipped.codes, shipped.failed)


# --- regressions: each crash the field sweep found (`python -m levelfield.tools.fuzz --sweep`), and misses ---

HUGE = "1" + "0" * 400
SWEEP_CRASHES = [  # (file name, MLLOG key or None, path in the line or file, raw value): what crashed
    ("result_0.txt", "opt_beta_1", ("value",), HUGE),  # TRN008: math.isfinite(huge int)
    ("result_0.txt", "eval_accuracy", ("value",), HUGE),  # TRN005: the same
    ("result_0.txt", "eval_accuracy", ("metadata", "epoch_num"), "1" + "0" * 29),  # TRN009: t-test on objects
    ("result_0.txt", "submission_platform", ("value",), "[]"),  # TRN003: unhashable list
    ("result_0.txt", "global_batch_size", ("value",), "[]"),  # TRN009: unhashable list
    ("result_0.txt", "run_start", ("time_ms",), HUGE),  # loader: float(huge int) escaped
    ("mlperf_log_detail.txt", "result_samples_per_second", ("value",), HUGE),  # INF006: math.isclose
    ("accuracy.json", None, ("value",), HUGE),  # ACC003: math.isfinite
    ("example-box.json", None, ("accelerators",), "-1"),  # SYS005: iterating an int
    ("example-box.json", None, ("host_memory_capacity_gib",), "1e999"),  # SYS001/SYS005: floor(inf)
    ("example-box.json", None, ("host_memory_capacity_gib",), "NaN"),  # SYS001/SYS005: floor(nan)
    ("example-box.json", None, (), "1"),  # loader: a bare number as document
    # misses `make fuzz` found on 2026-11-25: TRN020 took a switch's false and 0 for one value; TRN023
    # judged a throughput only from above, and only over 10 s of training
    ("result_0.txt", "levelfield_determinism", ("value", "framework", "jax_enable_x64"), "0"),
    ("result_0.txt", "levelfield_train_samples_per_s", ("value",), "0.5"),
]


def _site(ws, name: str, key: str | None, path: tuple):
    for rel, line, where in field_sites(ws):
        if rel.rsplit("/", 1)[-1] != name or where != path:
            continue
        if line is None or json.loads(ws.base_files[rel].decode().split("\n")[line][9:])["key"] == key:
            return rel, line, where
    raise LookupError((name, key, path))


@pytest.mark.parametrize("name, key, path, raw", SWEEP_CRASHES)
def test_a_crash_the_sweep_found_stays_fixed(fuzz, name, key, path, raw):
    ws, reuse = fuzz
    assert_ok(check_case(ws, sweep_case(ws, _site(ws, name, key, path), raw, 0), reuse=reuse))


# --- the fuzz tool can fail: a crash, a miss and a leak are each reported ------------------------------


def _replaced(monkeypatch, code: str, func) -> None:
    registered = REGISTRY[code]
    monkeypatch.setitem(
        REGISTRY, code, type(registered)(registered.code, registered.name, registered.area, registered.severity, func)
    )


def test_a_crashing_check_is_counted_as_a_crash(fuzz, monkeypatch):
    def crashes(sub, ctx):
        raise OverflowError("int too large to convert to float")
        yield  # pragma: no cover

    _replaced(monkeypatch, "TRN006", crashes)
    ws, reuse = fuzz
    outcome = check_case(ws, make_case(random.Random(1), ws, "flip-byte"), reuse=reuse)
    assert outcome.problem == "internal-error" and "OverflowError" in outcome.detail


def test_a_blind_integrity_check_is_counted_as_a_miss(fuzz, monkeypatch):
    for code in ("STR006", "STR003"):
        _replaced(monkeypatch, code, lambda sub, ctx: iter(()))
    ws, reuse = fuzz
    rel = next(r for r in sorted(ws.base_files) if r.endswith("mlperf_log_summary.txt"))
    case = Case(0, "flip-byte", rel, [Write(rel, ws.base_files[rel] + b"edited\n")])
    assert check_case(ws, case, reuse=reuse).problem == "miss"


def test_a_printed_secret_is_counted_as_a_leak(fuzz, monkeypatch):
    ws, reuse = fuzz
    _replaced(monkeypatch, "STR004", lambda sub, ctx: iter([Finding.at(".", ws.secret_file.read_text())]))
    outcome = check_case(ws, make_case(random.Random(2), ws, "symlink-outside"), reuse=reuse)
    assert outcome.problem == "leak"
