"""The submission reader: a tree read within bounds (`tree.py`), loaded into typed records
(`records.py`, `loader.py`) with every file's shape checked against its schema (`shapes.py`).

    from levelfield.ground.submission.tree import read_tree
    from levelfield.ground.submission.loader import load_submission

On the ground floor because three stages read submissions: the checker judges them, the leaderboard
ranks the records of clean trees, `reproduce` replays them. Nothing here judges: findings are the
checker's.
"""
