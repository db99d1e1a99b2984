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


def test_code_age_places_a_commit_against_head(history):
    repo = history["repo"]
    assert code_age(history["c"], repo) == {"relation": "same", "commits_behind": 0}
    assert code_age(history["a"], repo) == {"relation": "older", "commits_behind": 2}
    assert code_age(history["b"], repo) == {"relation": "older", "commits_behind": 1}
    assert code_age(history["d"], repo) == {"relation": "diverged", "commits_behind": None}
    assert code_age("0123456789abcdef0123456789abcdef01234567", repo)["relation"] == "foreign"
    git(repo, "checkout", "-q", history["a"])
    assert code_age(history["c"], repo) == {"relation": "newer", "commits_behind": None}


@pytest.mark.parametrize("recorded", [None, "", "--help", "HEAD~1", "c; rm -rf /", 42])
def test_code_age_takes_only_a_hexadecimal_commit(history, recorded):
    """The commit is text from a submission tree: anything but an object name compares as unknown."""
    assert code_age(recorded, history["repo"]) == {"relation": "unknown", "commits_behind": None}


def test_code_age_outside_a_checkout_is_unknown(history, tmp_path):
    assert code_age(history["a"], tmp_path) == {"relation": "unknown", "commits_behind": None}


def with_commit(root: Path, recorded: str | None) -> Path:
    ref = root / "closed" / "acme" / "code" / "levelfield.json"
    ref.write_text(json.dumps({"rules_version": "1.0", "git_commit": recorded}))
    return root


def test_every_view_says_when_results_come_from_older_code(tmp_path):
    head = git_state()["commit"]
    if head is None:
        pytest.skip("levelfield is not running from a git checkout: there is no code commit to compare with")
    try:
        parent = git(Path(__file__).parent, "rev-parse", "HEAD~1")
    except subprocess.CalledProcessError:
        pytest.skip("a shallow clone holds no parent commit to stand for older code")
    behind = int(git(Path(__file__).parent, "rev-list", "--count", f"{parent}..HEAD"))  # 1, more after a merge
    doc = document(with_commit(write_tree(tmp_path / "old"), parent))
    assert doc["code"]["commit"] == head
    assert doc["submissions"][0]["code_commit"] == parent
    assert doc["submissions"][0]["code_age"] == {"relation": "older", "commits_behind": behind}
    commits = "1 commit" if behind == 1 else f"{behind} commits"
    sentence = f"was produced by levelfield commit {parent[:12]}, {commits} before the code that built this page"
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
