"""One spelling of every levelfield_* key: levelfield/ground/mllog_keys.py, and nowhere else in the code."""

from __future__ import annotations

import re

from test_architecture import REPO, package_dirs

from levelfield.ground import mllog_keys as LK
from levelfield.ground.validation import load_yaml

KEY_LITERAL = re.compile(r"""["'](levelfield_[a-z0-9_]+)["']""")


def vocabulary() -> set[str]:
    return {value for name, value in vars(LK).items() if name.isupper() and isinstance(value, str)}


def test_log_keys_lists_every_key_of_the_vocabulary_but_the_json_fields():
    assert set(LK.LOG_KEYS) == vocabulary() - {LK.GIT, LK.VERSION}
    assert len(LK.LOG_KEYS) == len(set(LK.LOG_KEYS))


def test_every_levelfield_key_the_rulesets_require_is_in_the_vocabulary():
    required = set()
    for ruleset in (REPO / "rules").glob("*/mllog/*.yaml"):
        for item in load_yaml(ruleset) or []:
            name = (item.get("KEY") or {}).get("NAME", "") if isinstance(item, dict) else ""
            if name.startswith("levelfield_"):
                required.add(name)
    assert required, "the rulesets name no levelfield_ key: the test would prove nothing"
    assert required <= set(LK.LOG_KEYS)


def test_every_levelfield_hyperparameter_key_of_the_rules_is_in_the_vocabulary():
    from levelfield.rules import load_suite

    named = {key for key in load_suite().hyperparameter_log_keys.values() if key.startswith("levelfield_")}
    assert named, "the rules name no levelfield_ hyperparameter key: the test would prove nothing"
    assert named <= set(LK.LOG_KEYS)


def test_no_module_spells_a_key_itself():
    """A key written as a string literal outside the vocabulary can drift from what the readers look for."""
    spelled = {}
    for folder in package_dirs().values():
        for path in folder.rglob("*.py"):
            if path.name == "mllog_keys.py" or any(part.startswith(".") for part in path.parts):
                continue
            found = KEY_LITERAL.findall(path.read_text())
            if found:
                spelled[str(path.relative_to(REPO))] = sorted(set(found))
    assert spelled == {}


def test_the_literal_finder_finds_a_literal(tmp_path):
    """The test above proves something: the pattern matches a key written either way."""
    assert KEY_LITERAL.findall("log.event(\"levelfield_run_index\", 1); x = 'levelfield_energy_j'") == [
        "levelfield_run_index",
        "levelfield_energy_j",
    ]
    assert KEY_LITERAL.findall("`levelfield_run_index` in a docstring") == []
