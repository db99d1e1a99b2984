"""Results of a plugin's framework (docs/plugins.md): admitted by division, their code in the tree, one plugin each.

A framework no rules version names comes from a plugin, an installed distribution that registers an
implementation through the entry-point group `levelfield.implementations`. `levelfield package` puts the
plugin's files under code/plugins/<distribution>/ and its name, version, SHA-256 and frameworks in
code/plugins.json; the loader admits a result folder of a framework that file declares when the rules know
plugins (`plugin_divisions`, rules 1.2). Nothing here imports or runs the plugin: the files are hashed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from levelfield.checker.checks.reproducibility import environment_records
from levelfield.checker.findings import Finding, check
from levelfield.ground import layout as L
from levelfield.ground.plugins import code_digest

if TYPE_CHECKING:
    from levelfield.checker.context import Context
    from levelfield.ground.submission.records import Submission

RECORD_KEYS = ("distribution", "version", "sha256")  # what a run records of its plugin (environment.plugin)


def _declared(sub: Submission) -> list[dict]:
    """code/plugins.json's entries that are objects (its shape is STR010's)."""
    data = sub.plugins.data if sub.plugins is not None else None
    entries = data.get("plugins") if isinstance(data, dict) else None
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


@check("PLG001", "framework-not-admitted", area="plugins")
def framework_not_admitted(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a result ran a plugin's framework (one code/plugins.json declares, no framework of the rules) in a
    division the rules do not admit plugins in (`plugin_divisions` in suite.yaml; rules 1.2: the open division).
    Why: the closed division compares the frameworks the rules name running levelfield's reference code; a
    vendor's own stack competes in the open division, with its code in the tree.
    Bad: closed/acme/results/box/ctr-dlrm/numpy-example/ under rules 1.2.
    Fix: submit the plugin's results in the open division (`levelfield package --division open`).
    """
    if sub.division is None or sub.division in ctx.suite.plugin_divisions:
        return
    allowed = ", ".join(ctx.suite.all_frameworks)  # ONNX Runtime, for inference, is one of the rules' (1.2)
    for system, task, framework in sorted(sub.result_keys()):
        if framework in ctx.suite.all_frameworks:
            continue
        yield Finding.at(
            L.result_dir(sub.base, system, task, framework),
            f"framework {framework!r} is plugin {sub.plugin_frameworks.get(framework)}'s; the {sub.division} "
            f"division of rules {ctx.suite.version} admits only the frameworks the rules name",
            found=framework,
            expected=f"one of {allowed}",
            hint="submit a plugin's results in the open division (docs/plugins.md, Divisions)",
        )


@check("PLG002", "plugin-code-digest-mismatch", area="plugins")
def plugin_code_digest_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the files under code/plugins/<distribution>/ do not hash to the SHA-256 code/plugins.json states
    for that distribution (ground/plugins.py's digest: SHA-256 over the sha256sum listing of the files, sorted
    by path), or a declared plugin has no files there, or files lie there for a distribution it does not declare.
    Why: the digest is what a run recorded of the plugin it ran and what `levelfield reproduce` requires
    installed; code that does not hash to it is not the code that produced the results.
    Bad: code/plugins/levelfield-numpy-example/levelfield_numpy_example/dlrm.py edited after packaging.
    Fix: let `levelfield package` copy the installed plugin; never edit its files in the tree.
    """
    declared = set()
    for entry in _declared(sub):
        name, stated = entry.get("distribution"), entry.get("sha256")
        if not isinstance(name, str) or not isinstance(stated, str):
            continue  # STR010
        declared.add(name)
        folder = sub.path(L.CODE, L.PLUGINS, name)
        files = sub.plugin_files.get(name, {})
        if not files:
            yield Finding.at(folder, "no files of a plugin code/plugins.json declares", expected="its installed files")
            continue
        digests = {rel: hashlib.sha256(sub.tree.files[path].data).hexdigest() for rel, path in files.items()}
        found = code_digest(digests)
        if found != stated:
            yield Finding.at(
                folder,
                f"the plugin's files do not hash to the digest {L.PLUGINS_FILE} states",
                found=found,
                expected=stated,
                hint="package the runs again with the plugin they ran installed",
            )
    for name in sorted(set(sub.plugin_files) - declared):
        yield Finding.at(
            sub.path(L.CODE, L.PLUGINS, name),
            f"files of a plugin {L.PLUGINS_FILE} does not declare",
            found=name,
            expected=", ".join(sorted(declared)) or "no plugin files",
        )


@check("PLG003", "plugin-record-mismatch", area="plugins")
def plugin_record_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a run of a plugin's framework records (its environment's `plugin`: distribution, version, sha256)
    another plugin than the one code/plugins.json declares for that framework, or none. Every training log,
    result.json and environment.json of the result is compared.
    Why: the tree's plugin code must be the code each result ran; a run of another build of the plugin
    would be ranked under code it did not run.
    Bad: result.json's environment.plugin.sha256 "3ba7..." where code/plugins.json says "91c0..." for it.
    Fix: produce all runs of a framework with one installed plugin and package them together.
    """
    by_name = {e.get("distribution"): e for e in _declared(sub)}
    records = list(environment_records(sub))
    records += [(key, file.path, None, file.data) for key, file in sorted(sub.environments.items())]
    for (_system, _task, framework), path, line, environment in records:
        if framework not in sub.plugin_frameworks:
            continue
        entry = by_name.get(sub.plugin_frameworks[framework], {})
        expected = {key: entry.get(key) for key in RECORD_KEYS}
        found = environment.get("plugin") if isinstance(environment, dict) else None
        if found != expected:
            yield Finding.at(
                path,
                f"the plugin this run of {framework} recorded is not the one {L.PLUGINS_FILE} declares for it",
                line=line,
                found=found,
                expected=expected,
                hint="package runs of one installed plugin; never edit a tree's files",
            )
