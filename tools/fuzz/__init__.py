"""Fuzzing the checker: thousands of damaged copies of the example submission, and what the checker said.

    python -m levelfield.tools.fuzz --inputs 10000 --seed 1 --out build/fuzz/report.json   (make fuzz)
    python -m levelfield.tools.fuzz --seed 1 --replay 4711      one input again, with its report
    python -m levelfield.tools.fuzz --sweep --out build/fuzz/sweep.json    every hostile value in every field

Each input applies one defect class to one place of a working copy of
submissions/example: truncated, empty, non-UTF-8 and over-long files and
lines, invalid JSON in MLLOG lines, wrong types, huge numbers, NaN and Inf,
duplicated keys, nesting bombs, gzip bombs, missing and extra files, odd
names, renamed folders, symlinks inside and outside the tree, FIFOs,
sockets, files over the size limit, folders too deep, too many files, a
performance repeat (run_<i>/) removed or added, and unsafe MANIFEST paths.
The checker must answer each with coded findings and a failing verdict:
never an exception, an internal error, a hang, a clean verdict for a
damaged tree, or the text of a secret file outside the tree. An edit whose
MANIFEST was resealed is judged by the field it changed (fields.py): a
must-catch field must get one of its codes, a typed one only when the new
value leaves its domain.
docs/reliability.md holds the figures of the latest run.

| module | role |
| --- | --- |
| `jsonfuzz.py` | value-level damage to a JSON document, written as text no encoder would write |
| `mutate.py` | content defect classes per file kind (JSON, MLLOG, gzip, text, MANIFEST) |
| `sweep.py` | every field of the example's files, and the hostile values put into them; which field an edit changed |
| `fields.py` | the classified field table: per field, must an edit be caught and by which codes, or why it is free |
| `cases.py` | one input of a random class: its place, its edits, and what the checker must report |
| `case.py` | `Case`, one input as cases.py and sweep.py make it |
| `workspace.py` | the working copy: damage, reseal, restore |
| `reuse.py` | parse results of untouched files reused across inputs (why it is sound: see there) |
| `run.py` | the loop, the outcome of each input, the report |
| `summary.py` | the report's figures as Markdown, for docs/reliability.md |
"""
