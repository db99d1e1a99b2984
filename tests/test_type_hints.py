"""Every public signature of the installed code carries type hints (docs/architecture.md, House style).

Public: a module-level function or a method of a public class whose name does not start with `_`,
and `__init__` of a public class. Nested functions and private names are free.
"""

from __future__ import annotations

import ast

from test_architecture import REPO, package_dirs


def missing_hints(source: str) -> list[str]:
    """`name(arg, ...)` / `name -> ?` for every public function of `source` lacking an annotation."""
    found = []

    def visit(node: ast.AST, public: bool, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, public and not child.name.startswith("_"), True)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = child.name
                if not public or (name.startswith("_") and not (in_class and name == "__init__")):
                    continue
                a = child.args
                args = a.posonlyargs + a.args + a.kwonlyargs
                if in_class and args and args[0].arg in ("self", "cls"):
                    args = args[1:]
                args += [x for x in (a.vararg, a.kwarg) if x is not None]
                bare = [x.arg for x in args if x.annotation is None]
                if bare:
                    found.append(f"{name}({', '.join(bare)})")
                if child.returns is None and name != "__init__":
                    found.append(f"{name} -> ?")

    visit(ast.parse(source), True, False)
    return found


def test_public_signatures_have_type_hints():
    missing = {}
    for folder in package_dirs().values():
        for path in sorted(folder.rglob("*.py")):
            found = missing_hints(path.read_text())
            if found:
                missing[str(path.relative_to(REPO))] = found
    assert missing == {}


def test_the_finder_sees_what_is_missing_and_what_is_free():
    source = """
def ok(a: int, *rest: str, flag: bool = False, **kw: int) -> None: ...
def no_return(a: int): ...
def bare(a, b: int) -> int: ...
def _private(a): ...
class Public:
    def __init__(self, x): ...
    def method(self) -> int:
        def nested(y): ...
    @classmethod
    def make(cls, *args) -> "Public": ...
class _Hidden:
    def method(self, z): ...
"""
    assert missing_hints(source) == ["no_return -> ?", "bare(a)", "__init__(x)", "make(args)"]
