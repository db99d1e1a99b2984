"""Which code produced a tree, against the code building the leaderboard: `code_age` and the pages' notes.

A leaderboard built by newer code than the results it shows must say so (issue 17): the committed
example once showed figures from before the trainer fixes with nothing telling its reader.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_leaderboard import document, write_tree

from levelfield.ground.git_state import code_age, git_state
from levelfield.tools.leaderboard import render
from levelfield.tools.leaderboard.render_md import code_age_notes


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env)
    return done.stdout.strip()


def commit(repo: Path, name: str) -> str:
    (repo / name).write_text(name)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", name)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def history(tmp_path) -> dict:
    """a -> b -> c on main, d on a side branch from a; HEAD at c."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    a = commit(repo, "a")
    b = commit(repo, "b")
    git(repo, "checkout", "-q", "-b", "side", a)
    d = commit(repo, "d")
    git(repo, "checkout", "-q", "main")
    c = commit(repo, "c")
    return {"repo": repo, "a": a, "b": b, "c": c, "d": d}


def age(relation: str, behind: int | None, files: int | None) -> dict:
    return {"relation": relation, "commits_behind": behind, "code_files_changed": files}


def test_code_age_places_a_commit_against_head(history):
    repo = history["repo"]
    assert code_age(history["c"], repo) == age("same", 0, 0)
    assert code_age(history["a"], repo) == age("older", 2, 0)  # b and c touched no code path
    assert code_age(history["d"], repo) == age("diverged", None, 0)
    assert code_age("0123456789abcdef0123456789abcdef01234567", repo) == age("foreign", None, None)
    git(repo, "checkout", "-q", history["a"])
    assert code_age(history["c"], repo) == age("newer", None, 0)


def test_code_age_counts_the_code_files_that_differ(history):
    """Only files under CODE_PATHS count (not the rules' schemas): a commit that adds the tree changes no code."""
    repo = history["repo"]
    (repo / "reference").mkdir()
    (repo / "rules" / "schemas").mkdir(parents=True)
    commit(repo, "reference/model.py")
    commit(repo, "README.md")
    commit(repo, "rules/schemas/run.schema.json")  # validates files; produces no figure
    assert code_age(history["c"], repo) == age("older", 3, 1)
    assert code_age(history["a"], repo) == age("older", 5, 1)


@pytest.mark.parametrize("recorded", [None, "", "--help", "HEAD~1", "c; rm -rf /", 42])
def test_code_age_takes_only_a_hexadecimal_commit(history, recorded):
    """The commit is text from a submission tree: anything but an object name compares as unknown."""
    assert code_age(recorded, history["repo"]) == age("unknown", None, None)


def test_code_age_outside_a_checkout_is_unknown(history, tmp_path):
    assert code_age(history["a"], tmp_path) == age("unknown", None, None)


def with_commit(root: Path, recorded: str | None) -> Path:
    ref = root / "closed" / "acme" / "code" / "levelfield.json"
    ref.write_text(json.dumps({"rules_version": "1.0", "git_commit": recorded}))
    return root


def first_commit_with_older_code() -> tuple[str, dict] | None:
    """The nearest ancestor of HEAD whose code files differ from HEAD's, and its code_age; None in a shallow clone."""
    here = Path(__file__).parent
    for back in range(1, 50):
        try:
            commit = git(here, "rev-parse", f"HEAD~{back}")
        except subprocess.CalledProcessError:
            return None
        found = code_age(commit)
        if found["code_files_changed"]:
            return commit, found
    return None


def test_every_view_says_when_results_come_from_older_code(tmp_path):
    head = git_state()["commit"]
    older = first_commit_with_older_code() if head is not None else None
    if older is None:
        pytest.skip("no checkout with an ancestor of other code (levelfield installed, or a shallow clone)")
    commit, found = older
    assert found["relation"] == "older" and found["commits_behind"] >= 1
    doc = document(with_commit(write_tree(tmp_path / "old"), commit))
    assert doc["code"]["commit"] == head
    assert doc["submissions"][0]["code_commit"] == commit
    assert doc["submissions"][0]["code_age"] == found
    n, files = found["commits_behind"], found["code_files_changed"]
    sentence = (
        f"was produced by levelfield commit {commit[:12]}, {n} commit{'s' if n > 1 else ''} before the code that "
        f"built this page ({head[:12]}), which changed {files} file{'s' if files > 1 else ''} of its code since"
    )
    assert sentence in render(doc, "md")
    assert sentence in render(doc, "html")
    assert json.loads(render(doc, "json"))["submissions"][0]["code_age"]["relation"] == "older"


@pytest.mark.parametrize("recorded", ["current", None])
def test_no_note_when_the_code_is_the_same_or_unrecorded(tmp_path, recorded):
    head = git_state()["commit"]
    doc = document(with_commit(write_tree(tmp_path / "t"), head if recorded == "current" else None))
    assert doc["submissions"][0]["code_age"]["relation"] == ("same" if head and recorded else "unknown")
    assert "produced by levelfield commit" not in render(doc, "md")
    assert "produced by levelfield commit" not in render(doc, "html")


def test_no_note_when_only_commits_differ_not_code():
    """A tree committed after the commit that produced it is older by commits, not by code."""
    doc = {
        "code": {"commit": "b" * 40, "dirty": False},
        "submissions": [
            {"path": "t", "code_commit": "a" * 40, "code_age": age("older", 1, 0)},
            {"path": "u", "code_commit": "c" * 40, "code_age": age("older", 3, 2)},
        ],
    }
    (note,) = code_age_notes(doc)
    assert note.startswith("Older code: u was produced by levelfield commit cccccccccccc, 3 commits before")
