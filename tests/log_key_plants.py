"""The planted defect for TRN026 (collected into PLANTS by test_checker_fixtures.py); the other sides of the
check are in tests/test_checker_log_keys.py.

    log_extra_key(first(tree, "training/result_0.txt"), "my_vendor_flag", True)
"""

from __future__ import annotations

import json

from levelfield.ground import mllog_keys as LK


def log_extra_key(log, key: str, value) -> None:
    """One more line carrying `key` (even one the log already has), written as the trainer writes its lines,
    after the lines already added after levelfield_world_size."""
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if f'"key": "{LK.WORLD_SIZE}"' in line)
    prefix, entry = lines[at].split(" ", 1)
    added = {**json.loads(entry), "key": key, "value": value}
    while at + 1 < len(lines) and json.loads(lines[at + 1].split(" ", 1)[1])["time_ms"] == added["time_ms"]:
        at += 1  # the same instant: after what is already there, so lines keep the order they were added in
    lines.insert(at + 1, f"{prefix} {json.dumps(added)}\n")
    log.write_text("".join(lines), encoding="utf-8")


def plant_trn026(tree, tmp):
    # A vendor's own key in one run's log: no check reads it.
    log_extra_key(next(tree.rglob("training/result_0.txt")), "my_vendor_flag", True)
