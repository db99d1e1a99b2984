"""`levelfield leaderboard` as a user runs it: help, user errors, --out, and trees the real checker rejects.

    .venv/bin/python -m pytest tests/test_leaderboard_cli.py -q

Runs `levelfield.cli.main` in-process with "leaderboard" added to the command
list when levelfield/cli/commands/__init__.py does not list it yet; the subprocess
test at the end needs it listed there and says so when it is skipped.
"""

from __future__ import annotations

import json

import pytest
from test_leaderboard import PYTORCH_S, clean_check, write_tree

from conftest import assert_user_error, run_cli
from levelfield.cli import main as cli
from levelfield.cli.commands import COMMAND_MODULES


@pytest.fixture
def main(monkeypatch):
    if "leaderboard" not in COMMAND_MODULES:
        monkeypatch.setattr(cli, "COMMAND_MODULES", [*COMMAND_MODULES, "leaderboard"])
    return cli.main


@pytest.fixture
def passing_checker(monkeypatch):
    """The real checker would reject a synthetic tree; this one passes it (collect imports check_tree lazily)."""
    monkeypatch.setattr("levelfield.checker.engine.check_tree", clean_check)


def test_help_shows_formats_and_examples(main, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["leaderboard", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "{md,csv,json,html}" in out and "examples:" in out
    assert "levelfield leaderboard subs/acme subs/globex --format html --out leaderboard.html" in out


def test_missing_folder_is_a_user_error(main, tmp_path, capsys):
    assert main(["leaderboard", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "levelfield: error:" in err and "nope: submission folder not found" in err


# The checker's TRN009 runs scipy's t-test on the synthetic logs' identical epoch counts, which warns.
@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")
def test_tree_the_checker_rejects_is_listed_not_ranked(main, tmp_path, capsys):
    # A synthetic tree has no valid MANIFEST, environment or LoadGen logs: the real checker finds plenty.
    tree = write_tree(tmp_path / "acme", training={"pytorch": PYTORCH_S}, inference={})
    assert main(["leaderboard", str(tree)]) == 0
    captured = capsys.readouterr()
    assert "## Not included" in captured.out and "STR007" in captured.out
    assert "### Training" not in captured.out
    assert f"left out {tree}: findings" in captured.err
    assert main(["leaderboard", str(tree), "--strict"]) == 1


def test_out_is_written_once_and_replaced_only_with_force(main, passing_checker, tmp_path, capsys):
    tree = write_tree(tmp_path / "acme")
    out = tmp_path / "lb.json"
    assert main(["leaderboard", str(tree), "--format", "json", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert len(doc["training"]) == 3 and len(doc["inference"]) == 2
    out.write_text("edited by hand")
    assert main(["leaderboard", str(tree), "--format", "md", "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err and out.read_text() == "edited by hand"
    assert main(["leaderboard", str(tree), "--format", "md", "--out", str(out), "--force"]) == 0
    assert out.read_text().startswith("# levelfield leaderboard")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left behind


def test_out_inside_a_submission_tree_is_refused(main, passing_checker, tmp_path, capsys):
    tree = write_tree(tmp_path / "acme")
    assert main(["leaderboard", str(tree), "--out", str(tree / "lb.md")]) == 2
    assert "inside the submission tree" in capsys.readouterr().err
    assert not (tree / "lb.md").exists()


@pytest.mark.skipif(
    "leaderboard" not in COMMAND_MODULES,
    reason="'leaderboard' is not yet in COMMAND_MODULES (levelfield/cli/commands/__init__.py)",
)
def test_real_cli_reports_user_errors_without_traceback(tmp_path):
    result = run_cli("leaderboard", str(tmp_path / "nope"), "--format", "html")
    assert_user_error(result, "submission folder not found")
    assert "leaderboard" in run_cli("--help").stdout


# -- a publisher's folder per round: every tree below it ---------------------------------------------------


@pytest.fixture
def round_folder(tmp_path):
    """round/acme (a tree), round/orgs/globex (a tree one level deeper), round/notes (no tree), and a link to
    acme, which is never followed."""
    folder = tmp_path / "round"
    write_tree(folder / "acme", training={"pytorch": PYTORCH_S}, inference={})
    write_tree(folder / "orgs" / "globex", org="globex", training={"pytorch": PYTORCH_S}, inference={})
    (folder / "notes").mkdir()
    (folder / "notes" / "README.txt").write_text("not a tree")
    (folder / "link-to-acme").symlink_to(folder / "acme")
    return folder


def test_a_folder_of_trees_ranks_every_tree_below_it(main, passing_checker, round_folder, tmp_path):
    out = tmp_path / "lb.json"
    assert main(["leaderboard", str(round_folder), "--format", "json", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [s["path"] for s in doc["submissions"]] == [str(round_folder / "acme"), str(round_folder / "orgs/globex")]
    assert {r["org"] for r in doc["training"]} == {"acme", "globex"}


def test_the_page_may_live_in_the_round_folder_but_not_in_a_tree(main, passing_checker, round_folder, capsys):
    assert main(["leaderboard", str(round_folder), "--out", str(round_folder / "leaderboard.md")]) == 0
    assert (round_folder / "leaderboard.md").is_file()
    assert main(["leaderboard", str(round_folder), "--out", str(round_folder / "acme" / "lb.md")]) == 2
    assert f"inside the submission tree {round_folder / 'acme'}" in capsys.readouterr().err


def test_a_tree_named_twice_through_its_folder_is_refused(main, passing_checker, round_folder, capsys):
    assert main(["leaderboard", str(round_folder), str(round_folder / "acme")]) == 2
    assert "the same submission folder as" in capsys.readouterr().err


def test_a_folder_without_a_tree_is_one_clear_error(main, tmp_path, capsys):
    empty = tmp_path / "round"
    (empty / "drafts" / "closed-notes").mkdir(parents=True)
    assert main(["leaderboard", str(empty)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"levelfield: error: {empty}: " + (
        "no submission tree in it or below it (a levelfield tree holds MANIFEST, an MLCommons Training "
        "submitter folder results/ and systems/, an MLCommons Inference tree closed/ or open/)"
    )
    assert err[1:] == ["levelfield: hint: name a tree, or a folder with trees at most 4 levels down"]
