"""One fuzz input (Case): a defect class, a place, the edits to the working copy, and what the checker must say.

    case = Case(7, "symlink-outside", "closed/levelfield/systems", [Symlink(...)], codes=frozenset({"STR004"}))
    case.describe()   # "input 7: symlink-outside at 'closed/levelfield/systems'"

Made by cases.py (the random classes) and sweep.py (a hostile value in one field); apart from both
because cases.py draws sweep.py's inputs too.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Case:
    index: int
    cls: str
    target: str
    edits: list = field(default_factory=list)
    resealed: bool = False
    expect: str = "fail"  # fail | any
    codes: frozenset = frozenset()

    def describe(self) -> str:
        sealed = ", MANIFEST resealed" if self.resealed else ""
        return f"input {self.index}: {self.cls} at {self.target!r}{sealed}"
