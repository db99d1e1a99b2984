"""Fuzz inputs: one defect class applied to one place of the example tree, and what the checker must say.

    case = make_case(random.Random("1:42"), ws, "symlink-outside")
    case.edits       # what to do to the working copy
    case.expect      # "fail": the verdict must be a failure; "any": only a crash would be wrong
    case.codes       # at least one of these codes must be reported (empty: any code)

Content classes (mutate.py) damage a file's bytes; `hostile-field` (sweep.py)
puts a hostile value into one field of one file. Tree classes damage the
tree itself: missing and extra files, odd names, renamed folders, links to
files and folders inside and outside the tree, FIFOs, sockets, a file over
the size limit, folders nested too deep, too many files, and a performance
result with a repeat (run_<i>/) removed or one added. A damaged tree is a
defect, so the verdict must be a failure. An edit of a JSON document or an
MLLOG line whose MANIFEST was resealed around it is judged by the field it
changed: the classified field table (fields.py) says whether that field's
edit must be caught, and by which codes, or is free within a domain (then
only a crash is wrong). Lines dropped, added or swapped, and bytes of
LoadGen's summary text, are judged by no field: only a crash is wrong there.
"""

from __future__ import annotations

import random

from levelfield.ground import layout as L
from levelfield.ground.submission.tree import MAX_DEPTH, MAX_FILE_BYTES, MAX_FILES
from levelfield.tools.fuzz import mutate as M
from levelfield.tools.fuzz.case import Case
from levelfield.tools.fuzz.sweep import edit_expectation, random_sweep_case
from levelfield.tools.fuzz.workspace import ManyFiles, Mkdir, Remove, Sparse, Special, Symlink, Workspace, Write

# tree class -> codes of which one must be reported (empty: the verdict must fail, any code)
TREE_CLASSES = {
    "missing-file": frozenset(),
    "extra-file": frozenset(),
    "renamed-folder": frozenset(),
    "symlink-outside": frozenset({"STR004"}),
    "symlink-relative-outside": frozenset({"STR004"}),
    "symlink-inside": frozenset({"STR004"}),
    "symlink-folder-outside": frozenset({"STR004"}),
    "symlink-loop": frozenset({"STR004"}),
    "fifo": frozenset({"STR004"}),
    "socket": frozenset({"STR004"}),
    "oversize-file": frozenset({"STR005"}),
    "too-deep": frozenset({"STR004"}),
    "too-many-files": frozenset({"STR005"}),
    "empty-folder": None,  # None: harmless, only crashes count
    # A performance result's repeats: one run_<i>/ folder deleted, or a copy of the last one added.
    "missing-repeat": frozenset({"INF008"}),
    "extra-repeat": frozenset({"INF008"}),
}
CONTENT_CLASSES = sorted({cls for kind in M.APPLIES.values() for cls in kind})
# A hostile value in one field of one file (sweep.py); `--sweep` runs every field with every value.
HOSTILE_FIELD = "hostile-field"
HOSTILE_FIELD_SHARE = 0.3  # of the random inputs: the field space (~1,500 fields x 18 values) is large
ALL_CLASSES = sorted(set(CONTENT_CLASSES) | set(TREE_CLASSES) | {HOSTILE_FIELD})
# Classes never drawn at random: one input of each runs in the prelude (each costs seconds).
PRELUDE_ONLY = {"too-many-files"}
# Classes whose output must be checked through the real CLI on their first input: names, links and
# paths that could leak a secret or break printing.
CLI_FIRST = {
    "extra-file",
    "symlink-outside",
    "symlink-relative-outside",
    "symlink-folder-outside",
    "fifo",
    "socket",
    "manifest-dotdot",
    "manifest-absolute",
    "manifest-control-char",
    "renamed-folder",
}
ODD_NAMES = (
    "notes.txt",
    ".hidden",
    "résumé.json",
    "a\nb.txt",
    "x" * 255,
    "\udcff\udcfe.txt",
    "result_7.txt",
    "mlperf_log_trace.json",
    " ",
    "-rf",
    "MANIFEST",
    "run_1",
    "mlperf_log_detail.txt",
)


def make_case(rng: random.Random, ws: Workspace, cls: str, index: int = 0) -> Case:
    if cls == HOSTILE_FIELD:
        return random_sweep_case(rng, ws, index)
    if cls in TREE_CLASSES:
        return _tree_case(rng, ws, cls, index)
    targets = sorted(rel for rel in ws.base_files if cls in M.classes_for(M.file_kind(rel)))
    rel = rng.choice(targets)
    kind = M.file_kind(rel)
    data = M.mutate(
        rng, rel, ws.base_files[rel], cls, secret=_outside_rel(ws, rel) + "/secret.txt", secret_abs=str(ws.secret_file)
    )
    case = Case(index, cls, rel, [Write(rel, data)])
    if kind == M.MANIFEST:  # never resealed: the MANIFEST is what is damaged
        case.codes = frozenset({"STR008"}) if cls in M.UNSAFE_PATHS else frozenset()
        case.expect = "any" if cls == "swap-lines" else "fail"  # a reordered MANIFEST makes the same claims
    else:
        case.resealed = rng.random() < 0.5
        if M.classes_for(kind)[cls] or not case.resealed:  # structural, or the MANIFEST no longer matches
            case.expect = "fail"
        elif kind in (M.JSON, M.MLLOG, M.GZIP_JSON):  # which field changed, and the field table's verdict on it
            case.expect, case.codes = edit_expectation(rel, ws.base_files[rel], data)
        else:  # bytes of a text file (LoadGen's summary), resealed: no rule reads every byte of it
            case.expect = "any"
    return case


def random_class(rng: random.Random) -> str:
    if rng.random() < HOSTILE_FIELD_SHARE:
        return HOSTILE_FIELD
    return rng.choice([c for c in ALL_CLASSES if c not in PRELUDE_ONLY and c != HOSTILE_FIELD])


def _outside_rel(ws: Workspace, rel: str) -> str:
    """The secret's folder as a relative path from `rel`'s folder (enough `..` to leave the tree)."""
    return "/".join([".."] * (rel.count("/") + 1)) + "/" + ws.outside.name


def _tree_case(rng: random.Random, ws: Workspace, cls: str, index: int) -> Case:
    files = sorted(ws.base_files)
    folders = sorted(ws.base_dirs)
    rel = rng.choice(files)
    case = Case(index, cls, rel, codes=TREE_CLASSES[cls] or frozenset())
    case.expect = "any" if TREE_CLASSES[cls] is None else "fail"
    if cls == "missing-file":
        case.edits = [Remove(rel)]
    elif cls == "extra-file":
        folder = rng.choice(["", *folders])
        name = rng.choice(ODD_NAMES)
        case.target = f"{folder}/{name}".lstrip("/")
        if case.target in ws.base_files or case.target in ws.base_dirs:
            case.target += ".extra"
        case.edits = [Write(case.target, rng.choice(list(ws.base_files.values())) if rng.random() < 0.5 else b"x\n")]
    elif cls == "renamed-folder":
        case.target = rng.choice(folders)
        new = case.target.rsplit("/", 1)
        new[-1] = rng.choice((new[-1].upper(), new[-1] + "-x", new[-1] + "\u00e9", "_" + new[-1], new[-1][:-1] or "z"))
        renamed = "/".join(new)
        moved = [
            Write(renamed + f[len(case.target) :], d)
            for f, d in ws.base_files.items()
            if f.startswith(case.target + "/")
        ]
        case.edits = [Remove(case.target), *moved]
    elif cls in ("symlink-outside", "symlink-relative-outside"):
        target = str(ws.secret_file) if cls == "symlink-outside" else _outside_rel(ws, rel) + "/secret.txt"
        case.edits = [Symlink(rel, target)]
    elif cls == "symlink-inside":
        other = rng.choice([f for f in files if f != rel])
        case.edits = [Symlink(rel, _relative(rel, other))]
    elif cls == "symlink-folder-outside":
        case.target = rng.choice(folders)
        case.edits = [Symlink(case.target, str(ws.outside / "folder"))]
    elif cls == "symlink-loop":
        case.edits = [Symlink(rel, rel.rsplit("/", 1)[-1])]
    elif cls in ("fifo", "socket"):
        case.edits = [Special(rel, cls)]
    elif cls == "oversize-file":
        case.edits = [Sparse(rel, MAX_FILE_BYTES + 1 + rng.randrange(1 << 20))]
    elif cls == "too-deep":
        depth = MAX_DEPTH + 1 + rng.randrange(8)
        case.target = "/".join([rng.choice(folders)] + [f"d{i}" for i in range(depth)] + ["deep.txt"])
        case.edits = [Write(case.target, b"deep\n")]
    elif cls == "too-many-files":
        case.target = f"{rng.choice(folders)}/many"
        case.edits = [ManyFiles(case.target, MAX_FILES + 1)]
    elif cls == "empty-folder":  # an empty run_<i>/ holds no repeat: only the files of one count
        case.target = f"{rng.choice(folders)}/{rng.choice(('empty', 'Offline', 'extra', 'run_4'))}"
        case.edits = [Mkdir(case.target)]
    elif cls in ("missing-repeat", "extra-repeat"):
        case.target, case.edits = _repeat_edit(rng, ws, cls)
    # Resealing writes a new MANIFEST, which would repair a damaged MANIFEST; 50,001 files take long to hash.
    case.resealed = case.target != L.MANIFEST and cls != "too-many-files" and rng.random() < 0.5
    return case


def _repeat_edit(rng: random.Random, ws: Workspace, cls: str) -> tuple[str, list]:
    """(target, edits): remove one repeat folder of a performance result, or add a copy of its last one."""
    repeats = sorted(d for d in ws.base_dirs if L.repeat_index(d.rsplit("/", 1)[-1]) is not None)
    if cls == "missing-repeat":
        target = rng.choice(repeats)
        return target, [Remove(target)]
    performance = rng.choice(sorted({d.rsplit("/", 1)[0] for d in repeats}))
    last = max(
        (d for d in repeats if d.rsplit("/", 1)[0] == performance), key=lambda d: L.repeat_index(d.rsplit("/", 1)[-1])
    )
    target = f"{performance}/{L.repeat_folder(L.repeat_index(last.rsplit('/', 1)[-1]) + 1)}"
    copies = [
        Write(target + f[len(last) :], data) for f, data in sorted(ws.base_files.items()) if f.startswith(last + "/")
    ]
    return target, copies


def _relative(source: str, target: str) -> str:
    """`target` as a link stored at `source` would name it (both relative to the tree root)."""
    return "/".join([".."] * source.count("/") + [target])
