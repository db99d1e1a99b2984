"""`levelfield reproduce`: re-run one result of a submission tree from what the tree records, and judge it.

    from levelfield.cli.reproduce.recipe import open_tree
    tree = open_tree(Path("submissions/example"))
    tree.results                                # {leaderboard row id: TreeResult}

An auditor's question "can I get this number myself?" answered by the suite:
`recipe.py` reads a tree (through the checker's bounded reader, nothing in it
executed) into the settings that produced a result; `training.py` and
`inference.py` re-run it through the reference harness and judge the
reproduction against the submission; `report.py` lists the environment
differences first (they explain most gaps) and writes reproduction.json and
the verdict. This package sits at the CLI's level, like the demo: it drives
the stages (harness, checker, leaderboard ids) and no stage imports it.
"""
