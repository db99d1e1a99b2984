"""One vocabulary for every implementation: the same private names, in the same forms, in all of them.

    .venv/bin/python -m pytest tests/test_vocabulary.py -q

Once you know one task in one framework you know them all (docs/architecture.md,
"Interfaces"), so a role (the network's builder, the loss of one step, the
compiled step...) has one name in every implementation that has it, and one
form per framework (a method, an attribute set in `__init__`, or, in JAX as in
the Flax examples, a module-level function). ROLES below is that vocabulary as
data; TASK_HELPERS the few private names that belong to one task, each with
its reason. The checks read reference/<task>/<framework>/implementation.py
and the framework's base class, reference/frameworks/<framework>/base.py
(`FrameworkImplementation`: what every implementation of the framework shares),
with `ast` (no framework is imported) and fail on:

- a private name (`_name`: a method, a `self._name` attribute, a module-level
  function or constant) that is neither a role nor a declared helper of that
  task and framework: a role spelled another way, or a helper nobody declared;
- a role in a framework that does not have it, or in another form than its
  framework's (a JAX `_train_step` written as a method);
- a role every implementation of a framework has, missing from one (its own
  or inherited from the class it subclasses);
- a `self._name` used that neither the class nor a class it subclasses sets;
- a role the framework's base should hold (`Role.base`) that it lacks, or one it holds unlisted; a
  private name in a base that is no role of its framework (a base uses only the vocabulary);
- an implementation whose `train_steps` does not go through the framework's
  shared step loop (`run_steps` in reference/frameworks/<framework>/steps.py).

A framework that serves inference only (ONNX Runtime: registry.INFERENCE_ONLY)
is held to the same rules: its roles are those ROLES gives it (the network,
`_build_model`, here the ONNX graph; the forward, `_forward`, the session's
run), under the same names and in their one form; a training role there fails,
and its `train_steps` (which refuses) needs no step loop. It has a base like
the others (reference/frameworks/onnxruntime/base.py: the session, load,
export, the refusal to train), which holds `_forward` (set at load).

A copy of the tree with a planted misspelling proves each check fails. Two
more keep the shape honest: no module under a task's package only re-exports
another task's names (the registry serves a reused task's parts:
levelfield/ground/registry.py, `reused_task`), and the one converter from task
id to package name is the registry's.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from levelfield.ground.registry import FRAMEWORK_PACKAGES, INFERENCE_ONLY

ROOT = Path(__file__).resolve().parents[1]
# Every framework the registry knows: a later one is read too, and keeps the roles every framework has
# (_every) in their form; its own forms of the others go into ROLES with it.
FRAMEWORKS = tuple(FRAMEWORK_PACKAGES)
# Frameworks that serve inference only (ONNX Runtime): the same rules, with the roles of inference only
# (_every(form, inference=True) and the forms ROLES gives them); no training role, no step loop.
INFERENCE_ONLY_FRAMEWORKS = tuple(INFERENCE_ONLY)

METHOD, ATTRIBUTE, FUNCTION = "method", "attribute", "module-level function"


@dataclass(frozen=True)
class Role:
    what: str
    forms: dict[str, str]  # framework -> the one form of the role there
    everywhere: bool = True  # every implementation of those frameworks has it (its own or inherited)
    was: tuple[str, ...] = ()  # spellings it had before (named in the failure message)
    base: tuple[str, ...] = ()  # the frameworks whose base class holds it (an implementation may override it)


def _every(form: str, inference: bool = False) -> dict[str, str]:
    """The role's one form in every training framework, and in the inference-only ones where `inference`
    (a role of inference: the network, the forward predict calls)."""
    return {fw: form for fw in FRAMEWORKS if inference or fw not in INFERENCE_ONLY_FRAMEWORKS}


PT, TF, JX, ORT = "pytorch", "tensorflow", "jax", "onnxruntime"

# The vocabulary. docs/architecture.md ("Interfaces") shows the same table to people.
ROLES: dict[str, Role] = {
    "_build_model": Role(
        "the network, built by __init__ (a standard task's hook for its own; ONNX Runtime: the ONNX graph, "
        "its weights bound at load)",
        _every(METHOD, inference=True),
    ),
    "_build_loss": Role("the training loss, built by __init__", _every(METHOD)),
    "_build_optimizer": Role(
        "the optimizer (torch.optim over the parameters, a Keras optimizer, an optax transformation)",
        _every(METHOD),
        was=("_optimizer",),
    ),
    "_new_optimizer": Role(
        "fresh optimizer state, at __init__ and every load (TensorFlow's fmnist-resnet: its loss scale too)",
        {PT: METHOD, TF: METHOD},
        base=(PT, TF),
    ),
    "_new_state": Role(
        "JAX: a fresh TrainState of the weights (optimizer state fresh), placed (fmnist-resnet: with batch_stats)",
        {JX: METHOD},
        base=(JX,),
    ),
    "_loss": Role(
        "PyTorch: the mean loss of one step's rows (or pipeline batch); run_steps differentiates it", {PT: METHOD}
    ),
    "_batch_loss": Role(
        "PyTorch: the mean loss of a batch already on the device (ctr-dlrm compiles it whole)",
        {PT: METHOD},
        was=("_batch_loss_eager",),
    ),
    "_train_forward": Role(
        "PyTorch: the forward training calls (compiled; DDP's wrapper under torchrun)",
        {PT: ATTRIBUTE},
        everywhere=False,
    ),
    "_autocast": Role("PyTorch: the autocast context of the run's precision", {PT: ATTRIBUTE}, everywhere=False),
    "_gradients": Role("TensorFlow: the loss and gradients of one step's rows (or pipeline batch)", {TF: METHOD}),
    "_batch_gradients": Role("TensorFlow: the loss and gradients of a gathered batch", {TF: METHOD}),
    "_apply": Role("TensorFlow: one optimizer update at the step's learning rate", {TF: METHOD}),
    "_train_step": Role(
        "JAX: one step on one step's rows of the training arrays (or a pipeline batch) -> (state, loss)",
        {JX: FUNCTION},
    ),
    "_batch_step": Role("JAX: one step on a gathered batch -> (state, loss)", {JX: FUNCTION}),
    "_step": Role("the (compiled) train step run_steps calls", {TF: ATTRIBUTE, JX: ATTRIBUTE}),
    "_predict_batch": Role("the forward of one predict chunk, uncompiled", {TF: METHOD, JX: FUNCTION}),
    "_forward": Role(
        "the forward predict calls: compiled, or the eager one (ONNX Runtime: the session's run, set at load)",
        _every(ATTRIBUTE, inference=True),
        base=(ORT,),
    ),
    "_jax_device": Role("JAX: the jax.Device this process computes on", {JX: ATTRIBUTE}, base=(JX,)),
}

# Private names that belong to one task in one framework (a subclass inherits them), with the reason.
TASK_HELPERS: dict[tuple[str, str], dict[str, str]] = {
    ("fmnist_resnet", PT): {"_nchw": "images [N, 28, 28] as the NCHW tensor torch's convolutions take"},
    ("seq_transformer", PT): {"_tokens": "token ids as the int64 device tensor nn.Embedding takes"},
    ("image_resnet50_standard", PT): {
        "_normalised_nchw": "uint8 NHWC crops -> normalised float32 NCHW on the device (predict)",
        "_mean": "augment.MEAN on the device",
        "_inv_std": "augment.INV_STD on the device",
    },
    ("seq_transformer", TF): {
        "_ROWS": "the step's input signature: one batch's row indices",
        "_LR": "the step's input signature: the step's learning rate",
    },
    ("seq_transformer", JX): {"_encoder": "one Flax module per spec, so every instance shares compiled programs"},
}

# Implementations that do not go through their framework's run_steps, with the reason (none today).
STEP_LOOP_EXCEPTIONS: dict[tuple[str, str], str] = {}

STEP_LOOP = "run_steps"
# Each framework's base class: reference/frameworks/<framework>/base.py, class FrameworkImplementation.
BASE_MODULE, BASE_CLASS = "base", "FrameworkImplementation"


@dataclass
class Names:
    """The private names one implementation module binds, by name: {form: first line}."""

    path: Path
    task: str
    framework: str
    defined: dict[str, dict[str, int]] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)  # self._name read anywhere in the class
    compiled_in_place: set[str] = field(default_factory=set)  # self._m = compile(self._m, ...)
    base: Path | None = None  # the implementation module whose Implementation this one subclasses
    train_steps_calls: set[str] | None = None  # names called in its own train_steps; None: inherited

    def add(self, name: str, form: str, line: int) -> None:
        if name.startswith("_") and not name.startswith("__"):
            self.defined.setdefault(name, {}).setdefault(form, line)


def _self_attribute(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        found = []
        for target in node.targets:
            found += target.elts if isinstance(target, ast.Tuple) else [target]
        return found
    if isinstance(node, ast.AnnAssign):
        return [node.target]
    return []


def _base_path(module: str, root: Path) -> Path | None:
    """The file of the implementation module or framework base `module` names; None for any other module."""
    parts = module.split(".")
    if module.startswith("levelfield.reference.") and len(parts) == 5:
        _, _, package, framework, name = parts
        if name == "implementation" or (package == "frameworks" and name == BASE_MODULE):
            return root / "reference" / package / framework / f"{name}.py"
    return None


def read_names(path: Path, root: Path, class_name: str = "Implementation") -> Names:
    """The private names of reference/<task>/<framework>/implementation.py (or of a framework's base, class
    `class_name`) under `root`."""
    task, framework = path.parent.parent.name, path.parent.name
    names = Names(path, task, framework)
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    imported: dict[str, str] = {}  # local name -> module
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name, FUNCTION, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                local = alias.asname or alias.name
                imported[local] = node.module or ""
                if local.startswith("_"):  # a private function reused from the family's module
                    names.add(local, FUNCTION, node.lineno)
        else:
            for target in _targets(node):
                if isinstance(target, ast.Name):
                    names.add(target.id, "module-level constant", node.lineno)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    assert len(classes) == 1, f"{path}: expected one class {class_name}"
    cls = classes[0]
    base = cls.bases[0].id if cls.bases and isinstance(cls.bases[0], ast.Name) else None
    names.base = _base_path(imported.get(base or "", ""), root)
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name, METHOD, node.lineno)
            if node.name == "train_steps":
                names.train_steps_calls = {
                    n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                }
        for target in _targets(node):
            if isinstance(target, ast.Name):
                names.add(target.id, "class attribute", node.lineno)
    for node in ast.walk(cls):
        for target in _targets(node):
            attr = _self_attribute(target)
            if attr is None or not attr.startswith("_"):
                continue
            value = node.value
            wraps_itself = (
                isinstance(value, ast.Call) and value.args and _self_attribute(value.args[0]) == attr
            ) and isinstance(node, ast.Assign)
            if wraps_itself:
                names.compiled_in_place.add(attr)
            else:
                names.add(attr, ATTRIBUTE, node.lineno)
        attr = _self_attribute(node)
        if attr and attr.startswith("_") and not attr.startswith("__") and isinstance(node.ctx, ast.Load):
            names.used.setdefault(attr, node.lineno)
    return names


def implementations(root: Path) -> dict[tuple[str, str], Names]:
    """Every reference/<task>/<framework>/implementation.py under `root`, read."""
    found = {}
    for path in sorted((root / "reference").glob("*/*/implementation.py")):
        names = read_names(path, root)
        found[(names.task, names.framework)] = names
    return found


def framework_bases(root: Path) -> dict[str, Names]:
    """Every reference/frameworks/<framework>/base.py under `root`, read, by framework."""
    return {
        path.parent.name: read_names(path, root, BASE_CLASS)
        for path in sorted((root / "reference" / "frameworks").glob(f"*/{BASE_MODULE}.py"))
    }


def _chain(names: Names, every: dict[tuple[str, str], Names], bases: dict[str, Names]) -> list[Names]:
    """The implementation and those it subclasses, nearest first (its framework's base last)."""
    chain = [names]
    while chain[-1].base is not None:
        base = chain[-1].base
        framework = base.parent.name
        chain.append(
            bases[framework] if base.parent.parent.name == "frameworks" else every[(base.parent.parent.name, framework)]
        )
    return chain


def base_findings(bases: dict[str, Names], root: Path) -> list[str]:
    """One line per way the framework bases leave the vocabulary: a private name that is no role of the
    framework (or in another form), a role the table puts in the base that it lacks, or one it holds unlisted."""
    findings = []
    for framework, names in bases.items():
        where = names.path.relative_to(root)
        for name, forms in names.defined.items():
            role = ROLES.get(name)
            for form, line in forms.items():
                if role is None or role.forms.get(framework) != form:
                    findings.append(
                        f"{where}:{line}: `{name}` ({form}) is no {framework} role{_spelled_before(name)}: a base "
                        "holds only the vocabulary (tests/test_vocabulary.py ROLES)"
                    )
                elif framework not in role.base:
                    findings.append(f"{where}:{line}: `{name}` is in the base; ROLES says it is not (Role.base)")
        for name, line in names.used.items():
            if framework not in ROLES.get(name, Role("", {})).forms:
                findings.append(f"{where}:{line}: `self.{name}` is used but is no {framework} role")
        for name, role in ROLES.items():
            if framework in role.base and name not in names.defined:
                findings.append(f"{where}: no `{name}`, which ROLES puts in the {framework} base ({role.what})")
    return findings


def _spelled_before(name: str) -> str:
    for role_name, role in ROLES.items():
        if name in role.was:
            return f" ({role.what} is `{role_name}` now)"
    return ""


def vocabulary_findings(root: Path) -> list[str]:
    """One line per way the implementations under `root` leave the vocabulary; [] when they keep it."""
    every, bases = implementations(root), framework_bases(root)
    findings = base_findings(bases, root)
    for (task, framework), names in every.items():
        where = names.path.relative_to(root)
        helpers = TASK_HELPERS.get((task, framework), {})
        for name, forms in names.defined.items():
            role = ROLES.get(name)
            for form, line in forms.items():
                if role is None and name not in helpers:
                    findings.append(
                        f"{where}:{line}: `{name}` ({form}) is not in the vocabulary{_spelled_before(name)}: use a "
                        f"role's name (tests/test_vocabulary.py ROLES) or declare a helper of {task}/{framework} "
                        "with its reason (TASK_HELPERS)"
                    )
                elif role is not None and framework not in role.forms:
                    findings.append(f"{where}:{line}: `{name}` is a role of {', '.join(role.forms)} only ({role.what})")
                elif role is not None and form != role.forms[framework]:
                    findings.append(
                        f"{where}:{line}: `{name}` is a {form} here; in {framework} it is a {role.forms[framework]} "
                        f"({role.what})"
                    )
        for name in names.compiled_in_place:
            if ROLES.get(name) is None or ROLES[name].forms.get(framework) != METHOD or name not in names.defined:
                findings.append(f"{where}: `self.{name}` wraps itself, but `{name}` is not a method role defined here")
        chain = _chain(names, every, bases)
        known = set().union(*(set(n.defined) | n.compiled_in_place for n in chain))
        inherited_helpers = set().union(*(TASK_HELPERS.get((n.task, framework), {}) for n in chain))
        for name, role in ROLES.items():
            if role.everywhere and framework in role.forms and name not in known:
                findings.append(f"{where}: no `{name}`, which every {framework} implementation has ({role.what})")
        for name, line in names.used.items():
            if name not in known and name not in inherited_helpers:
                findings.append(f"{where}:{line}: `self.{name}` is used but neither this class nor its bases set it")
        for name in set(helpers) - set(names.defined):
            findings.append(f"{where}: TASK_HELPERS declares `{name}` for {task}/{framework}, which it no longer has")
        loop = next((n.train_steps_calls for n in chain if n.train_steps_calls is not None), None)
        trains = framework not in INFERENCE_ONLY_FRAMEWORKS  # an inference-only framework's train_steps refuses
        if trains and (loop is None or STEP_LOOP not in loop) and (task, framework) not in STEP_LOOP_EXCEPTIONS:
            findings.append(
                f"{where}: train_steps does not call {STEP_LOOP} (the framework's shared step loop); go through it "
                "or name the reason in STEP_LOOP_EXCEPTIONS"
            )
    return findings


# -- files that only re-export -----------------------------------------------------------------------------
def _only_reexports(tree: ast.Module) -> bool:
    """A module whose body is imports (and functions that only call an imported name): a shim."""
    imported: set[str] = set()
    body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    for node in body:
        if isinstance(node, ast.ImportFrom | ast.Import):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
            continue
        if isinstance(node, ast.FunctionDef):
            statements = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            call = statements[0].value if len(statements) == 1 and isinstance(statements[0], ast.Return) else None
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in imported:
                continue  # returns an imported callable's result under another name
        return False
    return True


def shim_findings(root: Path) -> list[str]:
    """Modules under the task packages of `root` that only re-export (or rename) another module's names."""
    findings = []
    for path in sorted((root / "reference").glob("*/*/*.py")):
        if path.name == "__init__.py" or not (path.parent.parent / "common").is_dir():
            continue
        if _only_reexports(ast.parse(path.read_text(encoding="utf-8"))):
            findings.append(
                f"{path.relative_to(root)}: only re-exports another module's names; a task reuses its family's "
                "parts through the registry (REUSES in its package), or imports the family's module where it uses it"
            )
    return findings


# -- the one converter from task id to package --------------------------------------------------------------
CONVERTER = "levelfield/ground/registry.py"
_HYPHEN_TO_UNDERSCORE = re.compile(r"""\.replace\(\s*(["'])-\1\s*,\s*(["'])_\2\s*\)""")


def converter_findings(root: Path) -> list[str]:
    """Source files outside the registry that turn a task id into a package name themselves."""
    findings = []
    for folder in ("levelfield", "reference", "rules", "checker", "tools", "tests", "benchmarks"):
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative != CONVERTER and _HYPHEN_TO_UNDERSCORE.search(path.read_text(encoding="utf-8")):
                findings.append(f"{relative}: converts a task id to a package itself; ask registry.task_package")
    return findings


# -- the checks on this tree ---------------------------------------------------------------------------------
def test_every_task_and_framework_is_read():
    every = implementations(ROOT)
    tasks = {p.name for p in (ROOT / "reference").iterdir() if (p / "common").is_dir()}
    assert set(every) == {(t, f) for t in tasks for f in FRAMEWORKS}  # and no folder of another framework
    assert len(every) == 24  # 6 tasks x (3 training frameworks + ONNX Runtime, inference only)


def test_an_inference_only_framework_has_the_roles_of_inference_only():
    """ROLES says which roles an inference-only framework has: the network and the forward, nothing of
    training; the same names as every framework's."""
    for fw in INFERENCE_ONLY_FRAMEWORKS:
        assert {name for name, role in ROLES.items() if fw in role.forms} == {"_build_model", "_forward"}, fw


def test_the_implementations_keep_one_vocabulary():
    assert vocabulary_findings(ROOT) == []


def test_no_module_only_re_exports():
    assert shim_findings(ROOT) == []


def test_one_converter_from_task_id_to_package():
    assert converter_findings(ROOT) == []
    assert _HYPHEN_TO_UNDERSCORE.search((ROOT / CONVERTER).read_text())  # the one that stays


def test_the_tables_are_consistent():
    for (task, framework), helpers in TASK_HELPERS.items():
        assert (ROOT / "reference" / task / framework / "implementation.py").is_file(), (task, framework)
        assert not set(helpers) & set(ROLES), f"{task}/{framework}: a helper named as a role"
    for name, role in ROLES.items():
        assert set(role.forms) <= set(FRAMEWORKS) and not set(role.was) & set(ROLES), name
        assert set(role.base) <= set(role.forms), name


def test_every_framework_base_is_read_and_subclassed():
    """Each framework's base exists and every implementation of that framework descends from it."""
    every, bases = implementations(ROOT), framework_bases(ROOT)
    assert set(FRAMEWORKS) <= set(bases)  # the inference-only ones too (ONNX Runtime's session, load, export)
    for names in every.values():
        if names.framework in bases:
            assert _chain(names, every, bases)[-1] is bases[names.framework], names.path


def test_the_architecture_doc_names_every_role():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    missing = [name for name in ROLES if f"`{name}" not in doc]
    assert not missing, f"docs/architecture.md's vocabulary table lacks {missing}"
