"""What a check reports: a `Finding`, and the registry of checks that produce them.

    from levelfield.checker.findings import check, Finding

    @check("TRN006", "nonunique-seed", area="training")
    def nonunique_seed(sub, ctx):
        '''What ... Why ... Bad: ... Fix: ...'''
        yield Finding.at(path, "two runs logged the same seed", found=seed, expected="distinct seeds",
                         hint="start each run with its own seed (levelfield train does)")

A check is a generator over the loaded submission (`records.Submission`) and a
`Context` (rules, labels). It never opens files, never logs and never returns a
bare bool: everything it has to say is a Finding with the value found, the value
expected and a hint. The registry is a module-level dict filled at import of
`levelfield.checker.checks`; codes are stable across releases. A code that is
split or dropped moves to RETIRED and is never registered again, so a waiver,
an --ignore or a script naming it cannot silently come to mean another rule.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

ERROR, WARNING = "error", "warning"
SEVERITIES = (ERROR, WARNING)
CODE_PATTERN = re.compile(r"^[A-Z]{3}\d{3}$")
NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DOC_SECTIONS = ("What:", "Why:", "Bad:", "Fix:")
SHOW_LIMIT = 120  # characters of a found/expected value shown; hostile values can be huge


def show(value: Any, limit: int = SHOW_LIMIT) -> str:
    """A value as it appears in a finding: JSON-ish, one line, cut to `limit` characters."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class Finding:
    path: str  # relative to the submission root, "/"-separated; "." for the tree itself
    message: str
    line: int | None = None
    found: str | None = None
    expected: str | None = None
    hint: str | None = None
    code: str = ""  # filled in by the engine from the check that yielded it
    name: str = ""
    severity: str = ERROR
    waived: str | None = None  # the waiver's reason when one applies

    @classmethod
    def at(
        cls,
        path: str,
        message: str,
        *,
        line: int | None = None,
        found: Any = None,
        expected: Any = None,
        hint: str | None = None,
    ) -> Finding:
        return cls(
            path=path,
            message=message,
            line=line,
            found=None if found is None else show(found),
            expected=None if expected is None else show(expected),
            hint=hint,
        )

    def location(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path

    def text(self) -> str:
        """`path[:line]: CODE message (found X, expected Y)`."""
        detail = [
            part
            for part in (
                f"found {self.found}" if self.found is not None else None,
                f"expected {self.expected}" if self.expected is not None else None,
            )
            if part
        ]
        suffix = f" ({', '.join(detail)})" if detail else ""
        return f"{self.location()}: {self.code} {self.message}{suffix}"

    def as_dict(self) -> dict:
        return asdict(self)

    def sort_key(self) -> tuple:
        return (self.path, self.line or 0, self.code, self.message)


@dataclass(frozen=True)
class Check:
    code: str
    name: str
    area: str
    severity: str
    func: Callable[..., Iterator[Finding]] = field(compare=False)

    @property
    def doc(self) -> str:
        return (self.func.__doc__ or "").strip()

    def doc_section(self, label: str) -> str:
        """The text after `What:` / `Why:` / `Bad:` / `Fix:` in the docstring, up to the next label."""
        text = " ".join(self.doc.split())
        start = text.find(label)
        if start < 0:
            return ""
        start += len(label)
        ends = [text.find(other, start) for other in DOC_SECTIONS if text.find(other, start) >= 0]
        return text[start : min(ends) if ends else len(text)].strip()


REGISTRY: dict[str, Check] = {}
# A check as written: `(sub, ctx) -> Iterator[Finding]`; `@check` returns it unchanged.
CheckFunction = TypeVar("CheckFunction", bound=Callable[..., Iterator[Finding]])


@dataclass(frozen=True)
class Retired:
    """A code no check carries any more: what it was called, when it went and what checks it now."""

    name: str
    retired: str  # the release it was last in, and the date it went
    replaced_by: tuple[str, ...]  # the codes that check what it checked; empty when nothing does
    why: str


# The one list of retired codes: docs/checks.md's "Retired codes" table is generated from it, the
# registry refuses these codes and names, and --select / --ignore say what replaced them.
RETIRED: dict[str, Retired] = {
    "INF004": Retired(
        "settings-not-submission",
        "after 0.1.0, 2026-11-24",
        ("INF009", "INF010", "INF011", "INF012", "INF013", "INF014"),
        "bundled nine conditions on the requested LoadGen settings; split one rule per code",
    ),
    "TRN002": Retired(
        "log-out-of-order",
        "after 0.1.0, 2026-11-24",
        ("TRN012", "TRN013", "TRN014", "TRN015"),
        "bundled four ordering rules of the MLLOG log; split one rule per code",
    ),
}


def check(code: str, name: str, *, area: str, severity: str = ERROR) -> Callable[[CheckFunction], CheckFunction]:
    """Register a check under a stable code; the docstring must carry What/Why/Bad/Fix."""

    def register(func: CheckFunction) -> CheckFunction:
        problems = []
        if not CODE_PATTERN.match(code):
            problems.append(f"code {code!r} is not three capitals and three digits")
        if not NAME_PATTERN.match(name):
            problems.append(f"name {name!r} is not lower-case words joined by hyphens")
        if severity not in SEVERITIES:
            problems.append(f"severity {severity!r} is not one of {SEVERITIES}")
        missing = [s for s in DOC_SECTIONS if s not in (func.__doc__ or "")]
        if missing:
            problems.append(f"docstring lacks {', '.join(missing)}")
        if code in REGISTRY or any(c.name == name for c in REGISTRY.values()):
            problems.append("code or name registered twice")
        if code in RETIRED or any(r.name == name for r in RETIRED.values()):
            problems.append("code or name is retired (findings.RETIRED); take the next free code")
        if problems:  # a programming error in levelfield, caught by the test suite at import
            raise ValueError(f"check {code} {name}: " + "; ".join(problems))
        REGISTRY[code] = Check(code, name, area, severity, func)
        return func

    return register
