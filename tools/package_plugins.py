"""The plugins' code in a submission tree: `levelfield package`'s part for runs of a plugin's framework.

    files = plugin_code("open", "open/acme", environments, "1.2")   # {tree path: source file or text}

Each framework no built-in owns ran a plugin (docs/plugins.md) whose distribution, version and SHA-256
the runs recorded (environment.plugin, ground/plugins.py). Packaging needs that plugin installed here
with that digest, and a division the rules admit plugins in (`plugin_divisions`); it then copies the
distribution's own files, as its RECORD names them, to code/plugins/<distribution>/ and lists each
plugin with the frameworks the tree's results ran from it in code/plugins.json. The checker recomputes
the digest from the copies (PLG002); nothing in them is executed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from levelfield.ground import layout as L
from levelfield.ground.errors import UserError


def plugin_code(division: str, base: str, environments: dict[tuple, list], rules_version: str) -> dict[str, Path | str]:
    """code/plugins.json and code/plugins/<distribution>/... for the runs of plugins' frameworks; {} for none."""
    from levelfield.ground.plugins import distribution_code
    from levelfield.ground.registry import BUILTIN_FRAMEWORKS

    records: dict[str, set] = defaultdict(set)
    for (_task, framework), envs in environments.items():
        if framework not in BUILTIN_FRAMEWORKS:
            records[framework] |= {json.dumps((e or {}).get("plugin"), sort_keys=True) for e in envs}
    if not records:
        return {}
    from levelfield.rules import load_suite

    suite = load_suite(rules_version)
    files: dict[str, Path | str] = {}
    declared: dict[str, dict] = {}
    for framework, found in sorted(records.items()):
        if len(found) != 1:
            raise UserError(
                f"runs of framework {framework!r} disagree on the plugin they ran: {', '.join(sorted(found))[:300]}",
                hint="produce all runs with one installed plugin",
            )
        record = json.loads(found.pop())
        if not isinstance(record, dict):
            raise UserError(
                f"runs of framework {framework!r} record no plugin (expected environment.plugin, written by "
                f"levelfield infer and train for a plugin's framework)",
                hint="re-run them with this levelfield",
            )
        ran = f"plugin {record['distribution']} {record['version']} (sha256 {record['sha256']})"
        if division not in suite.plugin_divisions:
            admitted = " and ".join(suite.plugin_divisions) or "no"
            raise UserError(
                f"runs of framework {framework!r} ran {ran}; the {division} division of rules {suite.version} "
                f"admits only {', '.join(suite.frameworks)} (a plugin's framework: {admitted} division)",
                hint="package them with --division open" if "open" in suite.plugin_divisions else None,
            )
        code = distribution_code(record["distribution"])
        if code is None or code.sha256 != record["sha256"]:
            here = f"{code.distribution} {code.version} (sha256 {code.sha256})" if code else "not installed"
            raise UserError(
                f"runs of framework {framework!r} ran {ran}; installed here: {here}",
                hint="package on the machine that ran them, with that plugin installed",
            )
        if code.editable:
            raise UserError(
                f"runs of framework {framework!r} ran {ran}, installed editable (pip install -e): its files "
                f"point at a source folder and are not its code",
                hint=f"install {code.distribution} from a wheel, re-run, and package those runs",
            )
        if not L.ID_PATTERN.match(code.distribution):
            raise UserError(
                f"plugin {code.distribution!r}: its name becomes a folder of the tree; expected letters, digits, "
                f"'.', '_', '-' (at most 64)"
            )
        entry = declared.setdefault(code.distribution, {**code.record(), "frameworks": []})
        entry["frameworks"].append(framework)
        for rel, path in code.files.items():
            files[f"{base}/{L.CODE}/{L.PLUGINS}/{code.distribution}/{rel}"] = path
    document = {"plugins": [declared[name] for name in sorted(declared)]}
    files[f"{base}/{L.CODE}/{L.PLUGINS_FILE}"] = json.dumps(document, indent=2) + "\n"
    return files
