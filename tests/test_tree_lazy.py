"""A lazy tree (ground/submission/tree.py, read_tree(lazy=True)): listed whole, read file by file, no link followed.

MLCommons Inference rounds are read this way so that memory does not grow with the round; what a file
becomes after the listing must not widen what the reader opens. (Milliseconds.)
"""

from __future__ import annotations

import os

from levelfield.ground.submission.tree import OPEN_FOLDERS, read_tree


def _tree(tmp_path):
    root = tmp_path / "tree"
    for i in range(OPEN_FOLDERS + 3):  # more folders than it keeps open
        (root / "a" / f"b{i}").mkdir(parents=True)
        (root / "a" / f"b{i}" / "f.txt").write_bytes(f"file {i}\n".encode())
    (tmp_path / "outside.txt").write_bytes(b"secret\n")
    return root


def test_a_lazy_tree_lists_without_reading_and_reads_on_demand(tmp_path):
    root = _tree(tmp_path)
    tree = read_tree(root, lazy=True)
    assert all(f.data is None and f.sha256 == "" for f in tree.files.values())
    assert tree.files["a/b0/f.txt"].size == len(b"file 0\n")
    for _ in range(2):  # again after the folders were evicted: opened again from the root
        assert [tree.read(f"a/b{i}/f.txt") for i in range(OPEN_FOLDERS + 3)] == [
            f"file {i}\n".encode() for i in range(OPEN_FOLDERS + 3)
        ]
    assert tree.read("a/none.txt") is None
    tree.close()
    assert not tree._folders
    assert read_tree(root).read("a/b1/f.txt") == b"file 1\n"  # a tree read whole answers from memory


def test_a_file_or_folder_swapped_for_a_link_after_the_listing_is_not_followed(tmp_path):
    root = _tree(tmp_path)
    tree = read_tree(root, lazy=True)
    (root / "a" / "b0" / "f.txt").unlink()
    os.symlink(tmp_path / "outside.txt", root / "a" / "b0" / "f.txt")
    assert tree.read("a/b0/f.txt") is None
    os.rename(root / "a" / "b1", tmp_path / "moved")
    os.symlink(tmp_path / "moved", root / "a" / "b1")
    assert tree.read("a/b1/f.txt") is None
    (root / "a" / "b2" / "f.txt").write_bytes(b"x" * 100)
    small = read_tree(root, lazy=True, max_file_bytes=50)
    (root / "a" / "b3" / "f.txt").write_bytes(b"x" * 100)  # grew after the listing
    assert ("a/b2/f.txt", "too-large") in small.refused and small.read("a/b3/f.txt") is None
    tree.close()
    small.close()
