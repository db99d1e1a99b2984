"""The planted defect for SYS008 (collected into PLANTS by test_checker_fixtures.py) and its log edit.

    log_nodes(first(tree, "training/result_0.txt"), 2)   # the run says it spanned 2 hosts

The example's logs may predate levelfield_nodes (absent: one node);
tests/test_checker_nodes.py holds every side of SYS008.
"""

from __future__ import annotations

from levelfield.ground import mllog_keys as LK
from tests.submission_edit import edit_json, edit_mllog, set_value


def log_nodes(log, nodes: int) -> None:
    """Log levelfield_nodes as the trainer does, one line beside levelfield_world_size (or set the line a
    newer log already holds)."""
    text = log.read_text(encoding="utf-8").splitlines(keepends=True)
    if not any(f'"key": "{LK.NODES}"' in line for line in text):
        at = next(i for i, line in enumerate(text) if f'"key": "{LK.WORLD_SIZE}"' in line)
        text.insert(at + 1, text[at].replace(f'"key": "{LK.WORLD_SIZE}"', f'"key": "{LK.NODES}"', 1))
        log.write_text("".join(text), encoding="utf-8")
    edit_mllog(log, LK.NODES, set_value(nodes))


def plant_sys008(tree, tmp):
    # A description declaring two nodes over runs on one node (levelfield_nodes 1, or not logged).
    edit_json(next(tree.glob("*/*/systems/*.json")), lambda d: d.update(number_of_nodes=2))
