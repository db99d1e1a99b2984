"""Walk a submission tree into typed records (`records.Submission`); the checks never open files.

    from levelfield.ground.submission.loader import load_submission
    sub = load_submission(read_tree(root), suite)

Every file is classified by its path against `layout.py` and the rules' ids
(tasks, frameworks, scenarios). What does not fit is listed in `unknown`,
what should be there and is not in `missing`, what could not be parsed in
`malformed`; the structure checks turn those lists into findings, so a broken
tree still loads and every problem in it is reported at once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any, Protocol

from levelfield.ground import layout as L
from levelfield.ground.accuracy_log import parse_accuracy_log
from levelfield.ground.parse import decode, gunzip, parse_json, parse_mllog
from levelfield.ground.submission.records import (
    REPEAT_FILE_ATTRIBUTE,
    RUN_FILE_ATTRIBUTE,
    InferenceRun,
    JsonFile,
    ManifestEntry,
    Repeat,
    Submission,
    SystemRecord,
    TrainingResult,
)
from levelfield.ground.submission.shapes import DETAIL_LINE_SCHEMA, JSON_SCHEMAS, TRAINING_LINE_SCHEMA, shape_problems
from levelfield.ground.submission.tree import Tree


class RulesView(Protocol):
    """What the reader needs of the rules: a `levelfield.rules.loader.Suite`, passed in by the caller. A
    protocol, because the ground floor imports nothing above it, not even for an annotation."""

    version: str
    divisions: list[str]
    frameworks: list[str]
    plugin_divisions: list[str]
    tasks: Mapping[str, Any]


class UnknownId(str):
    """A reason about an id the rules do not know; `depth` = path parts up to and including that id."""

    def __new__(cls, text: str, depth: int):
        obj = super().__new__(cls, text)
        obj.depth = depth
        return obj


def declared_rules_version(tree: Tree) -> str | None:
    """The rules version named by `<division>/<org>/code/levelfield.json`, if one readable file says so."""
    for path, file in tree.files.items():
        parts = path.split("/")
        if len(parts) == 4 and parts[2:] == [L.CODE, L.CODE_REF]:
            data, error = parse_json(file.data)
            if not error and isinstance(data, dict) and isinstance(data.get("rules_version"), str):
                return data["rules_version"]
    return None


def _json(sub: Submission, path: str) -> JsonFile:
    data, error = parse_json(sub.tree.files[path].data)
    if error:
        sub.malformed.append((path, None, error))
    elif (schema := JSON_SCHEMAS.get(path.rsplit("/", 1)[-1])) is not None:
        _shape(sub, path, schema)
    elif data is None:  # `null` parses, and the records read None as "unreadable": say why here
        sub.misshapen.append((path, None, "$: expected an object, got null"))
    return JsonFile(path, data)


def _shape(sub: Submission, path: str, schema: str) -> None:
    """Record where a file that parsed breaks its schema (STR010)."""
    sub.misshapen.extend((path, line, why) for line, why in shape_problems(schema, sub.tree.files[path].data))


def parse_manifest(sub: Submission) -> None:
    file = sub.tree.files.get(L.MANIFEST)
    if file is None:
        return
    text, error = decode(file.data)
    sub.manifest = []
    if error:
        sub.malformed.append((L.MANIFEST, None, error))
        return
    # Lines end at "\n" only, as sha256sum writes them: str.splitlines() would also split at "\r", "\v",
    # "\x1c" and more, so a MANIFEST with one such byte changed would read as unchanged.
    lines = text.split("\n")
    if lines[-1]:
        sub.malformed.append((L.MANIFEST, len(lines), "the last line does not end with a newline (sha256sum format)"))
    else:
        lines.pop()
    for lineno, line in enumerate(lines, start=1):
        digest, sep, path = line.partition("  ")  # sha256sum's text format: digest, two spaces, path
        if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest) or not path:
            sub.malformed.append((L.MANIFEST, lineno, "expected '<64 hex digits>  <path>' (sha256sum format)"))
            continue
        sub.manifest.append(ManifestEntry(lineno, digest, path))


def load_submission(tree: Tree, suite: RulesView) -> Submission:
    sub = Submission(root=tree.root, tree=tree)
    parse_manifest(sub)
    tops = sorted({p.split("/")[0] for p in (*tree.files, *tree.dirs)} - {L.MANIFEST, L.SIGNATURE})
    divisions = [t for t in tops if t in tree.dirs]
    for top in tops:
        if top not in tree.dirs:
            sub.unknown.append(
                (top, f"a file at the top level (expected only {L.MANIFEST}, {L.SIGNATURE} and <division>/)")
            )
        elif top not in suite.divisions:
            sub.unknown_ids.append(
                (top, f"division {top!r} is not one of rules {suite.version}'s ({', '.join(suite.divisions)})")
            )
    divisions = [d for d in divisions if d in suite.divisions]
    if not divisions:
        sub.missing.append((".", f"a division folder ({' or '.join(suite.divisions)}) holding <org>/"))
        return sub
    if len(divisions) > 1:
        for extra in divisions[1:]:
            sub.unknown.append((extra, f"a second division (one submission tree holds one; found {divisions[0]!r})"))
    sub.division = divisions[0]
    orgs = sorted({p.split("/")[1] for p in tree.dirs if p.startswith(sub.division + "/") and p.count("/") >= 1})
    stray = [p for p in tree.files if p.startswith(sub.division + "/") and p.count("/") == 1]
    for path in stray:
        sub.unknown.append((path, "a file directly in the division folder (expected <org>/)"))
    if not orgs:
        sub.missing.append((sub.division, "an organisation folder"))
        return sub
    for extra in orgs[1:]:
        sub.unknown.append(
            (f"{sub.division}/{extra}", f"a second organisation (one tree holds one; found {orgs[0]!r})")
        )
    sub.org = orgs[0]
    sub.base = f"{sub.division}/{sub.org}"
    _classify(sub, suite)
    _find_missing(sub, suite)
    return sub


def declared_plugin_frameworks(sub: Submission) -> dict[str, str]:
    """framework -> distribution, as code/plugins.json declares them; {} when it is absent or unreadable
    (STR003 / STR010 report that). Read before the results, whose framework folders it may admit."""
    file = sub.tree.files.get(sub.path(L.CODE, L.PLUGINS_FILE))
    data, error = parse_json(file.data) if file is not None else (None, "absent")
    plugins = data.get("plugins") if not error and isinstance(data, dict) else None
    declared = {}
    for entry in plugins if isinstance(plugins, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("frameworks"), list):
            distribution = entry.get("distribution")
            declared |= {f: distribution for f in entry["frameworks"] if isinstance(f, str) and L.ID_PATTERN.match(f)}
    return declared


def _classify(sub: Submission, suite) -> None:
    prefix = sub.base + "/"
    if suite.plugin_divisions:  # rules that know plugins: their declared frameworks may name result folders
        sub.plugin_frameworks = declared_plugin_frameworks(sub)
    training_logs = defaultdict(list)  # (system, task, framework, training | throughput) -> logs
    runs: dict[tuple, InferenceRun] = {}
    for path in sorted(sub.tree.files):
        if not path.startswith(prefix):
            continue  # other divisions/orgs were reported as unknown already
        parts = path[len(prefix) :].split("/")
        where = _place(parts, sub, suite)
        if isinstance(where, UnknownId):
            folder = prefix + "/".join(parts[: where.depth])
            if (folder, str(where)) not in sub.unknown_ids:  # one finding per misnamed folder
                sub.unknown_ids.append((folder, str(where)))
            continue
        if isinstance(where, str):
            sub.unknown.append((path, where))
            continue
        kind, key = where
        if kind == "system":
            sub.systems[key] = SystemRecord(key, path, _json(sub, path).data)
        elif kind == "code_ref":
            sub.code_ref = _json(sub, path)
        elif kind == "code_src":
            pass  # open division code: listed in MANIFEST, never read or executed
        elif kind == "plugins":
            sub.plugins = _json(sub, path)
        elif kind == "plugin_file":  # a plugin's code: hashed by PLG002, never executed
            distribution, rel = key
            sub.plugin_files.setdefault(distribution, {})[rel] = path
        elif kind == "environment":
            sub.environments[key] = _json(sub, path)
        elif kind == "training":
            log = parse_mllog(sub.tree.files[path].data, path)
            sub.malformed.extend((path, lineno, why) for lineno, why in log.errors)
            _shape(sub, path, TRAINING_LINE_SCHEMA)
            training_logs[key].append(log)
        elif kind == "inference":
            run_key, name, index = key
            folder = L.result_dir(sub.base, *run_key[:3]) + f"/{run_key[3]}/{run_key[4]}"
            run = runs.setdefault(run_key, InferenceRun(*run_key, folder=folder))
            if index is None:
                _attach(sub, run, name, path)
            else:
                _read_loadgen_log(sub, _repeat(run, index), name, path)
    for (system, task, framework, kind), logs in sorted(training_logs.items()):
        folder = L.result_dir(sub.base, system, task, framework) + f"/{kind}"
        results = sub.trainings if kind == L.TRAINING else sub.throughputs
        results.append(TrainingResult(system, task, framework, folder, logs, kind))
    for run in runs.values():
        run.repeats.sort(key=lambda r: r.index)
    sub.inferences = [runs[k] for k in sorted(runs)]


def _repeat(run: InferenceRun, index: int) -> Repeat:
    found = run.repeat(index)
    if found is None:
        found = Repeat(index, f"{run.folder}/{L.repeat_folder(index)}")
        run.repeats.append(found)
    return found


def _read_loadgen_log(sub: Submission, record, name: str, path: str) -> None:
    """Parse LoadGen's detail or summary log into `record` (an accuracy InferenceRun or a Repeat)."""
    if name == L.DETAIL_LOG:
        record.detail = parse_mllog(sub.tree.files[path].data, path)
        sub.malformed.extend((path, lineno, why) for lineno, why in record.detail.errors)
        _shape(sub, path, DETAIL_LINE_SCHEMA)
    else:
        text, error = decode(sub.tree.files[path].data)
        if error:
            sub.malformed.append((path, None, error))
        record.summary = text


def _attach(sub: Submission, run: InferenceRun, name: str, path: str) -> None:
    if name in L.LOADGEN_FILES:
        _read_loadgen_log(sub, run, name, path)
    elif name == L.ACCURACY_LOG_STORED:
        raw, error = gunzip(sub.tree.files[path].data)
        data = None
        if error:
            sub.malformed.append((path, None, error))
        else:
            data, error = parse_accuracy_log(raw)  # parse_json's answer; LoadGen's own layout as arrays
            if error:
                sub.malformed.append((path, None, error))
        run.accuracy_log = JsonFile(path, data)
    else:
        setattr(run, RUN_FILE_ATTRIBUTE[name], _json(sub, path))


def _place(parts: list[str], sub: Submission, suite):
    """(kind, key) for a file inside <division>/<org>/, or a sentence saying why it does not belong."""
    head = parts[0]
    if head == L.SYSTEMS and len(parts) == 2 and parts[1].endswith(".json"):
        system = parts[1][: -len(".json")]
        if not L.ID_PATTERN.match(system):
            return UnknownId(f"system id {system!r} is not a valid id (letters, digits, '.', '_', '-')", 2)
        return "system", system
    if head == L.CODE:
        if parts[1:] == [L.CODE_REF]:
            return "code_ref", None
        if parts[1:] == [L.PLUGINS_FILE]:
            return "plugins", None
        if len(parts) > 3 and parts[1] == L.PLUGINS:
            return "plugin_file", (parts[2], "/".join(parts[3:]))
        if len(parts) > 2 and parts[1] == L.CODE_SRC:
            if sub.division == "open":
                return "code_src", None
            return (
                "closed-division code: the closed division runs levelfield's reference code, "
                "named by code/levelfield.json"
            )
        return (
            f"unexpected in {L.CODE}/ (expected {L.CODE_REF}, {L.PLUGINS_FILE} with {L.PLUGINS}/<distribution>/ "
            f"and, in the open division, {L.CODE_SRC}/)"
        )
    if head != L.RESULTS:
        return f"unexpected entry (expected {L.SYSTEMS}/, {L.RESULTS}/, {L.CODE}/)"
    if len(parts) < 5:
        return "unexpected here (expected results/<system>/<task>/<framework>/...)"
    _, system, task, framework, *rest = parts
    if not L.ID_PATTERN.match(system):
        return UnknownId(f"system id {system!r} is not a valid id (letters, digits, '.', '_', '-')", 2)
    if task not in suite.tasks:
        return UnknownId(
            f"task {task!r} is not a task of rules {suite.version} (expected one of: {', '.join(suite.tasks)})", 3
        )
    # Training and inference frameworks (TRN032 matches the two), or one the tree's plugins declare.
    if framework not in suite.all_frameworks and framework not in sub.plugin_frameworks:
        plugins = f", or one that {L.CODE}/{L.PLUGINS_FILE} declares" if suite.plugin_divisions else ""
        return UnknownId(
            f"framework {framework!r} is not a framework of rules {suite.version} "
            f"(expected one of: {', '.join(suite.all_frameworks)}{plugins})",
            4,
        )
    if rest == [L.ENVIRONMENT]:
        return "environment", (system, task, framework)
    if len(rest) == 2 and rest[0] in (L.TRAINING, L.THROUGHPUT):
        if L.TRAINING_LOG.match(rest[1]):
            return "training", (system, task, framework, rest[0])
        return f"unexpected in {rest[0]}/ (expected result_<i>.txt files)"
    if len(rest) in (3, 4):
        return _place_inference(rest, suite.tasks[task], (system, task, framework))
    return "unexpected here (expected environment.json, training/, throughput/ or <scenario>/<mode>/ files)"


def _place_inference(rest: list[str], task, result_key: tuple):
    """<scenario>/<mode>/<file>, or <scenario>/performance/run_<i>/<file>: (kind, key) or why not."""
    scenario, mode = rest[0], rest[1]
    scenarios = list(task.scenarios)
    if scenario not in scenarios:
        return UnknownId(
            f"scenario {scenario!r} is not a scenario of {task.id} (expected one of: {', '.join(scenarios)})", 5
        )
    if mode not in L.MODES:
        return UnknownId(f"mode folder {mode!r} (expected one of: {', '.join(L.MODES)})", 6)
    run_key = (*result_key, scenario, mode)
    if len(rest) == 3:
        name = rest[2]
        if name in L.MODE_FILES[mode]:
            return "inference", (run_key, name, None)
        if mode == L.PERFORMANCE and name in L.LOADGEN_FILES:
            return (
                f"LoadGen's {name} of a performance run belongs in its repeat's folder run_<i>/ "
                f"(an old-layout run folder: re-run `levelfield infer`, which writes run_1/ .. run_N/)"
            )
        expected = list(L.MODE_FILES[mode]) + (["run_<i>/"] if mode == L.PERFORMANCE else [])
        return f"unexpected file in {mode}/ (expected: {', '.join(expected)})"
    folder, name = rest[2], rest[3]
    if mode != L.PERFORMANCE:
        return f"unexpected folder in {mode}/ (an accuracy run is one LoadGen run: its files lie directly in {mode}/)"
    index = L.repeat_index(folder)
    if index is None:
        return f"unexpected folder in {mode}/ (expected run_<i>/ with i = 1, 2, ...: one folder per repeat)"
    if name not in L.LOADGEN_FILES:
        return f"unexpected file in {folder}/ (expected: {', '.join(L.LOADGEN_FILES)})"
    return "inference", (run_key, name, index)


def _find_missing(sub: Submission, suite) -> None:
    if sub.manifest is None:
        sub.missing.append((L.MANIFEST, "the MANIFEST of SHA-256 digests (levelfield package writes it)"))
    if sub.code_ref is None:
        sub.missing.append((sub.path(L.CODE, L.CODE_REF), "the code reference (levelfield version, commit, rules)"))
    if not sub.systems:
        sub.missing.append((sub.path(L.SYSTEMS), "at least one system description <system>.json"))
    if not sub.result_keys():
        sub.missing.append((sub.path(L.RESULTS), "at least one result (training/ or <scenario>/<mode>/)"))
    for key in sorted(sub.result_keys()):
        if key not in sub.environments:
            sub.missing.append(
                (L.result_dir(sub.base, *key) + f"/{L.ENVIRONMENT}", "the environment capture of these runs")
            )
    present = {(r.system, r.task, r.framework, r.scenario, r.mode): r for r in sub.inferences}
    for (system, task, framework, scenario, mode), run in sorted(present.items()):
        for name in L.MODE_FILES[mode]:
            if not _has(run, name):
                sub.missing.append((f"{run.folder}/{name}", f"a required file of a {mode} run"))
        if mode == L.PERFORMANCE:
            _find_missing_repeats(sub, run)
        other = "accuracy" if mode == "performance" else "performance"
        if (system, task, framework, scenario, other) not in present:
            folder = run.folder.rsplit("/", 1)[0] + f"/{other}"
            sub.missing.append((folder, f"the {other} run of this scenario (each scenario needs both modes)"))


def _find_missing_repeats(sub: Submission, run: InferenceRun) -> None:
    """Each repeat present needs both LoadGen logs; a performance run needs at least one repeat.
    (How many repeats it needs, and that they are numbered 1..N, is INF008's.)"""
    if not run.repeats:
        sub.missing.append(
            (
                f"{run.folder}/{L.repeat_folder(1)}",
                f"the LoadGen logs of the run's repeats (run_<i>/{L.SUMMARY_LOG}, run_<i>/{L.DETAIL_LOG})",
            )
        )
    for repeat in run.repeats:
        for name, attribute in REPEAT_FILE_ATTRIBUTE.items():
            if getattr(repeat, attribute) is None:
                sub.missing.append((f"{repeat.folder}/{name}", "a LoadGen log of a performance repeat"))


def _has(run: InferenceRun, name: str) -> bool:
    return getattr(run, RUN_FILE_ATTRIBUTE[name]) is not None
