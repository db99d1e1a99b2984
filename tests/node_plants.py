"""The planted defects for SYS008 and TRN022 (collected into PLANTS by test_checker_fixtures.py) and their
log edits.

    log_nodes(first(tree, "training/result_0.txt"), 2)            # the run says it spanned 2 hosts
    log_beside_world_size(log, "levelfield_local_batch_size", 512)

The example's logs may predate levelfield_nodes, levelfield_local_batch_size and model_bn_span (absent: one
node, no statement); tests/test_checker_nodes.py holds every side of SYS008, test_checker_process_shares.py
every side of TRN022.
"""

from __future__ import annotations

from levelfield.ground import mllog_keys as LK
from tests.submission_edit import edit_json, edit_mllog, set_value


def log_beside_world_size(log, key: str, value) -> None:
    """Log `key` as the trainer does, one line beside levelfield_world_size (or set the line a newer log
    already holds)."""
    text = log.read_text(encoding="utf-8").splitlines(keepends=True)
    if not any(f'"key": "{key}"' in line for line in text):
        at = next(i for i, line in enumerate(text) if f'"key": "{LK.WORLD_SIZE}"' in line)
        text.insert(at + 1, text[at].replace(f'"key": "{LK.WORLD_SIZE}"', f'"key": "{key}"', 1))
        log.write_text("".join(text), encoding="utf-8")
    edit_mllog(log, key, set_value(value))


def log_nodes(log, nodes: int) -> None:
    log_beside_world_size(log, LK.NODES, nodes)


def plant_sys008(tree, tmp):
    # A description declaring two nodes over runs on one node (levelfield_nodes 1, or not logged).
    edit_json(next(tree.glob("*/*/systems/*.json")), lambda d: d.update(number_of_nodes=2))


def plant_trn022(tree, tmp):
    # One process logging that it took half of the global batch.
    log = next(tree.rglob("training/result_0.txt"))
    batch = next(e for e in _values(log) if e[0] == "global_batch_size")[1]
    log_beside_world_size(log, LK.LOCAL_BATCH_SIZE, batch // 2)


def _values(log):
    import json

    for line in log.read_text(encoding="utf-8").splitlines():
        record = json.loads(line.split(" ", 1)[1])
        yield record["key"], record["value"]
