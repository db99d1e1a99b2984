"""What `levelfield reproduce` is asked to do (ReproduceOptions).

    options = ReproduceOptions(tree=Path("sub"), result="trn-1a2b3c4d5e", out=Path("repro"), seeds="fresh")

Apart from main.py because inference.py, which main.py calls, takes them too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SEED_CHOICES = ("recorded", "fresh")


@dataclass
class ReproduceOptions:
    tree: Path
    result: str
    out: Path
    seeds: str = "recorded"  # training: the logged seeds, or fresh random ones
    weights: Path | None = None  # inference: the weights the submission used (refused if the digest differs)
    accuracy_only: bool = False  # inference: skip the performance runs (minutes each under the submission profile)
    data_dir: str | None = None
    rules_dir: str | None = None
    force: bool = False
