"""levelfield.checker: the submission checker (installed from the repository folder `checker/`).

    tree.py       read a submission tree safely (no symlinks followed, sizes capped)
    parse.py      strict, bounded parsers (MLLOG, JSON, gzip) that never raise on bad input
    loader.py     the tree as typed records (records.py); the checks never open files
    layout.py     the submission layout, shared with `levelfield package`
    findings.py   `Finding` and the `@check` registry of stable codes
    checks/       the registered checks, one module per area
    metrics.py    a LoadGen run's scenario metric from its detail log
    engine.py     `check_tree`: run the checks, apply select / ignore / waivers
    report.py     text and JSON reports
    docs.py       generates docs/checks.md from the registered checks

Importing this package never imports an ML framework: auditors run it without one.
"""
