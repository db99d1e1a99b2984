"""Which kind of submission tree a folder holds: levelfield's own, MLCommons Training or MLCommons Inference.

    detect_layout(Path("submissions/example"))                    # "levelfield"
    detect_layout(Path("training_results_v4.0/NVIDIA"))           # "mlcommons-training" (one submitter)
    detect_layout(Path("training_results_v4.0"))                  # "mlcommons-training" (submitter folders)
    detect_layout(Path("inference_results_v4.1"))                 # "mlcommons-inference"

Only folder names are looked at (no file is opened, no link followed), so a
folder is classified before anything in it is read.
"""

from __future__ import annotations

from pathlib import Path

from levelfield.ground import layout as L
from levelfield.ground.errors import UserError

LEVELFIELD, TRAINING, INFERENCE = "levelfield", "mlcommons-training", "mlcommons-inference"
LAYOUTS = (LEVELFIELD, TRAINING, INFERENCE)
DIVISIONS = ("closed", "open", "network")  # MLCommons Inference's division folders


def _dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _training_submitter(folder: Path) -> bool:
    return _dir(folder / "results") and _dir(folder / "systems") and not _dir(folder / "compliance")


def training_submitters(root: Path) -> list[Path]:
    """The submitter folders of an MLCommons Training tree: the root itself, or its sub-folders."""
    if _training_submitter(root):
        return [root]
    return sorted(p for p in root.iterdir() if _dir(p) and _training_submitter(p))


def detect_layout(root: Path) -> str:
    """The layout of `root`; UserError naming the three layouts when it is none of them."""
    if not _dir(root):
        raise UserError(f"{root}: not a submission folder (no such directory, or not a directory)")
    if (root / L.MANIFEST).is_file():
        return LEVELFIELD
    if training_submitters(root):
        return TRAINING
    if any(_dir(root / d) for d in DIVISIONS) or _dir(root / "results") and _dir(root / "compliance"):
        return INFERENCE
    raise UserError(
        f"{root}: not a submission tree of a layout levelfield reads (expected a levelfield tree holding "
        "MANIFEST, an MLCommons Training submitter folder holding results/ and systems/ (or a folder of "
        "them), or an MLCommons Inference tree holding closed/ or open/)"
    )
