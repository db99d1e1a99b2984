"""The leaderboard document: every row, its statistics and the Welch tests, as one JSON-ready dict.

    from levelfield.tools.leaderboard.collect import collect
    from levelfield.tools.leaderboard.document import build_document
    doc = build_document(collect([Path("submissions/example")]))

This dict is the canonical form: `--format json` writes it as is (schema:
rules/schemas/leaderboard.schema.json) and the Markdown, CSV and HTML views
are rendered from it and nothing else, so no view can show a number the JSON
lacks. Output is deterministic (no timestamps, sorted rows), so re-rendering
the same trees gives the same bytes and the same row ids.
"""

from __future__ import annotations

from itertools import combinations

from levelfield import __version__
from levelfield.ground.determinism import rerun_note
from levelfield.ground.errors import UserError
from levelfield.ground.stats import ALPHA, CONFIDENCE, shown_time_to_train, welch_test
from levelfield.tools.leaderboard.collect import CleanTree, Collected
from levelfield.tools.leaderboard.columns import TABLE_KEY
from levelfield.tools.leaderboard.mlcommons import mlcommons_inference, mlcommons_training
from levelfield.tools.leaderboard.rows import against_best, inference_rows, training_rows
from levelfield.tools.leaderboard.throughput_rows import mark_vs_fastest_throughput, throughput_order, throughput_rows

# 1.1: training-throughput rows (rules 1.2 results), their own list beside training and inference.
SCHEMA_VERSION = "1.1"
# Frameworks are compared only where everything else is equal: one system of one org, one task.
SAME_SYSTEM = ("rules_version", "division", "org", "system", "task")
# Training results are peers only on the same processes too: 1 process against 2 compares two layouts,
# not two frameworks.
TRAINING_PEERS = (*SAME_SYSTEM, "processes", "process_nodes")


def _olympic(row: dict) -> float | None:
    return row["time_to_target_s"]["olympic_mean"]


def _fastest_first(row: dict) -> tuple:
    # The time the table shows (olympic mean, or a single run's); rows without one sort after the rest.
    score = shown_time_to_train(row["time_to_target_s"])[0]
    return (score is None, score if score is not None else 0.0)


def _training_order(row: dict) -> tuple:
    return (*(row[k] for k in TABLE_KEY), *_fastest_first(row), row["org"], row["system"], row["framework"])


def _inference_order(row: dict) -> tuple:
    return (*(row[k] for k in TABLE_KEY), row["org"], row["system"], row["framework"])


def successful_times(row: dict) -> list[float]:
    return [r["time_to_target_s"] for r in row["run_details"] if r["time_to_target_s"] is not None]


def comparisons(training: list[dict], alpha: float = ALPHA) -> list[dict]:
    """Welch's test for every pair of frameworks on one system, task and process layout, the faster one (olympic
    score) first."""
    groups: dict[tuple, list[dict]] = {}
    for row in training:
        groups.setdefault(tuple(row[k] for k in TRAINING_PEERS), []).append(row)
    out = []
    for key, rows in sorted(groups.items(), key=lambda item: tuple(str(k) for k in item[0])):
        rows = sorted(rows, key=lambda r: (*_fastest_first(r), r["framework"]))
        for faster, slower in combinations(rows, 2):
            test = welch_test(successful_times(slower), successful_times(faster), alpha)
            difference = (
                None if _olympic(faster) is None or _olympic(slower) is None else _olympic(slower) - _olympic(faster)
            )
            out.append(
                {
                    **dict(zip(SAME_SYSTEM, key[: len(SAME_SYSTEM)], strict=True)),
                    "faster": faster["framework"],
                    "slower": slower["framework"],
                    "faster_id": faster["id"],
                    "slower_id": slower["id"],
                    "olympic_difference_s": difference,
                    **test,
                }
            )
    return out


def mark_vs_fastest(training: list[dict], tests: list[dict]) -> None:
    """Set each row's `vs_fastest`: its Welch test against the fastest framework on its system and task.

    None for a row without peers; {"fastest": true} for the fastest; otherwise the test, whose
    `within_noise` says whether the gap lies inside run-to-run noise.
    """
    by_id = {row["id"]: row for row in training}
    peers = {row["id"]: 0 for row in training}
    for test in tests:
        peers[test["faster_id"]] += 1
        peers[test["slower_id"]] += 1
    slower_than = {}
    for test in tests:
        slower_than.setdefault(test["slower_id"], []).append(test)
    for row_id, row in by_id.items():
        row["vs_fastest"] = None
        if not peers[row_id]:
            continue
        if row_id not in slower_than:
            row["vs_fastest"] = {"fastest": True}
            continue
        # The fastest on the system is the one every other row is slower than: the head of the order.
        test = next(t for t in slower_than[row_id] if t["faster_id"] not in slower_than)
        row["vs_fastest"] = {
            "fastest": False,
            "framework": test["faster"],
            "id": test["faster_id"],
            "p_value": test["p_value"],
            "within_noise": test["within_noise"],
        }


def _best_first(members: list[tuple[dict, dict]]) -> list[tuple[dict, dict]]:
    """(row, scenario entry) pairs, the best mean first: the highest samples/s or the lowest latency."""

    def key(member):
        row, entry = member
        return (-entry["mean"] if entry["better"] == "higher" else entry["mean"], row["framework"])

    return sorted(members, key=key)


def mark_vs_best(inference: list[dict], alpha: float = ALPHA) -> None:
    """Set each inference scenario entry's `vs_best`: Welch's test of its repeats against those of the
    best framework (by mean) on the same system, task and scenario.

    None for an entry without peers or without values; {"best": true} for the best; otherwise the
    test, whose `within_noise` says whether the gap lies inside the repeats' run-to-run noise.
    """
    groups: dict[tuple, list[tuple[dict, dict]]] = {}
    for row in inference:
        for scenario, entry in row["scenarios"].items():
            entry["vs_best"] = None
            if entry["mean"] is not None:
                groups.setdefault((*(row[k] for k in SAME_SYSTEM), scenario), []).append((row, entry))
    for members in groups.values():
        if len(members) < 2:
            continue
        (best_row, best), *others = _best_first(members)
        best["vs_best"] = {"best": True}
        for _row, entry in others:
            entry["vs_best"] = {"best": False, **against_best(entry["run_values"], best["run_values"], best_row, alpha)}


def _refuse_duplicates(rows: list[dict]) -> None:
    seen: dict[str, dict] = {}
    for row in rows:
        if row["id"] in seen:
            other = seen[row["id"]]
            raise UserError(
                f"{row['source']} and {other['source']} both hold {row['division']}/{row['org']} results of "
                f"system {row['system']!r}, task {row['task']}, framework {row['framework']} "
                f"(rules {row['rules_version']}); one result cannot have two rows",
                hint="pass only the newer of the two trees",
            )
        seen[row["id"]] = row


def tree_code_commit(tree: CleanTree) -> str | None:
    """The levelfield commit that produced a clean tree's results: code/levelfield.json's git_commit,
    which RUL003 holds equal to every run's recorded commit."""
    ref = tree.submission.code_ref.data if tree.submission.code_ref is not None else None
    commit = ref.get("git_commit") if isinstance(ref, dict) else None
    return commit if isinstance(commit, str) else None


def build_document(collected: Collected, alpha: float = ALPHA) -> dict:
    from levelfield.ground.git_state import code_age, git_state

    builder = git_state()  # the checkout building this page
    training = [row for tree in collected.clean for row in training_rows(tree)]
    throughput = [row for tree in collected.clean for row in throughput_rows(tree)]
    inference = [row for tree in collected.clean for row in inference_rows(tree)]
    for rows in (training, throughput, inference):
        _refuse_duplicates(rows)
    training.sort(key=_training_order)
    throughput.sort(key=lambda row: (*(row[k] for k in TABLE_KEY), *throughput_order(row)))
    inference.sort(key=_inference_order)
    tests = comparisons(training, alpha)
    mark_vs_fastest(training, tests)
    mark_vs_fastest_throughput(throughput, alpha)
    mark_vs_best(inference, alpha)
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_by": f"levelfield {__version__}",
        "profile": collected.profile,
        # The code that builds this page; each tree says which code produced it (code_commit, code_age), so
        # figures from older implementations than the ones the page stands beside are labelled as such.
        "code": {key: builder[key] for key in ("commit", "dirty")},
        "statistics": {
            "time_to_target": "olympic mean: the fastest and slowest olympic_drop runs dropped, a failed run "
            "counting as the slowest (MLPerf); a result of one run shows that run's time "
            "(single_run_s), not an olympic mean; mean, stdev and CI over the successful runs",
            "confidence": CONFIDENCE,
            "inference": "mean over the performance repeats (run_<i>/) of each scenario, the metric read from "
            "each repeat's LoadGen detail log; stdev and CI over the repeats",
            "throughput": "training throughput (rules 1.2 results, never mixed with time to train): mean over "
            "the repeats of each repeat's samples/s, recomputed from its log's timed step windows (global batch x "
            "steps over their time, the warm-up steps excluded); stdev and CI over the repeats; Welch against "
            "the fastest framework on the same system, task, processes, global batch size and precision",
            "test": "Welch's unequal-variance t-test (two-sided) on successful run times, same system, task and "
            "processes; "
            "for inference on the repeats' values against the best framework's (highest samples/s, "
            "lowest latency), same system, task and scenario",
            "alpha": alpha,
            # How reruns of the rows' frameworks and modes (the logged levelfield_compile_mode) repeat.
            **({"reruns": note} if (note := rerun_note((r["framework"], r["compile_mode"]) for r in training)) else {}),
        },
        "submissions": [
            {
                "path": tree.path,
                "rules_version": tree.rules_version,
                "division": tree.submission.division,
                "org": tree.submission.org,
                "warnings": tree.warnings,
                "code_commit": commit,
                "code_age": code_age(commit),
            }
            for tree, commit in ((tree, tree_code_commit(tree)) for tree in collected.clean)
        ],
        "excluded": [
            {"path": tree.path, "rules_version": tree.rules_version, "codes": tree.codes} for tree in collected.excluded
        ],
        "training": training,
        "throughput": throughput,
        "inference": inference,
        "comparisons": tests,
        **({"mlcommons_training": mlcommons_training(collected.mlcommons)} if collected.mlcommons else {}),
        **(
            {"mlcommons_inference": mlcommons_inference(collected.mlcommons_inference)}
            if collected.mlcommons_inference
            else {}
        ),
    }
