"""levelfield.checker: the submission checker (installed from the repository folder `checker/`).

    tree.py       read a submission tree safely (no symlinks followed, sizes capped)
    loader.py     the tree as typed records (records.py); the checks never open files
    findings.py   `Finding` and the `@check` registry of stable codes
    checks/       the registered checks, one module per area
    engine.py     `check_tree`: run the checks, apply select / ignore / waivers
    context.py    `Context`: what a check may use besides the submission (rules, labels, keys)
    report.py     text and JSON reports
    docs.py       generates docs/checks.md from the registered checks

The parsers, the layout, the metrics, the accuracy scoring and the key
vocabulary the checker shares with the runner, trainer, packager and
leaderboard are on the ground floor (`levelfield.ground`). Importing this
package never imports an ML framework: auditors run it without one.
"""
