"""levelfield sysinfo: write or check a system description (systems/<system>.json).

    levelfield sysinfo                                 print this machine's description
    levelfield sysinfo --out systems/box.json          write it, then fill in <FILL: ...>
    levelfield sysinfo --check systems/box.json        validate a filled-in description

See docs/system-description.md for every field.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from levelfield.cli.commands import add_command


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "sysinfo",
        help="describe this machine (hardware, OS, software) for a submission",
        description=(
            "Observe this machine's CPU, memory, accelerators (via NVML), OS and installed\n"
            "framework versions, and print a system description as JSON. Fields only the\n"
            "vendor knows (submitter, system_name, division, status, system_type) are\n"
            "'<FILL: ...>' placeholders: edit them, then run --check. The 'fingerprint'\n"
            "object is what training and inference logs compare against; do not edit it."
        ),
        examples=[
            "levelfield sysinfo                              print the description to stdout",
            "levelfield sysinfo --out systems/box.json       write it (refuses to overwrite)",
            "levelfield sysinfo --out systems/box.json --force   regenerate, replacing your edits",
            "levelfield sysinfo --check systems/box.json     validate a filled-in description",
            "levelfield sysinfo --out systems/box.json --set submitter=acme --set division=closed \\\n"
            "      --set status=available --set system_type=datacenter --set system_name='Acme box'",
        ],
    )
    parser.add_argument(
        "--out",
        metavar="FILE",
        type=Path,
        help="write the description to FILE (atomically; an existing FILE is kept unless --force)",
    )
    parser.add_argument(
        "--force", action="store_true", help="with --out: replace an existing FILE (its filled-in fields are lost)"
    )
    parser.add_argument(
        "--set",
        dest="fill",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="fill in a vendor field (submitter, system_name, division, status, system_type) "
        "without editing the file; repeatable",
    )
    parser.add_argument(
        "--check",
        metavar="FILE",
        type=Path,
        help="validate FILE against the schema and its fingerprint digest instead of generating",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from levelfield.ground.errors import UserError

    if args.check is not None:
        if args.out is not None or args.force:
            raise UserError("--check reads a file; it cannot be combined with --out or --force")
        return check(args.check)
    if args.force and args.out is None:
        raise UserError("--force only applies to --out", hint="levelfield sysinfo --out FILE --force")
    return generate(args.out, overwrite=args.force, fill=_fill(args.fill))


def _fill(assignments: list[str]) -> dict:
    from levelfield.ground.errors import UserError
    from levelfield.ground.sysinfo import VENDOR_PLACEHOLDERS

    fill = {}
    for text in assignments:
        name, sep, value = text.partition("=")
        if not sep or name not in VENDOR_PLACEHOLDERS:
            raise UserError(f"--set {text!r}: expected FIELD=VALUE with FIELD one of {', '.join(VENDOR_PLACEHOLDERS)}")
        fill[name] = value
    return fill


def generate(out: Path | None, *, overwrite: bool, fill: dict | None = None) -> int:
    from levelfield.ground.accelerators import query_nvml
    from levelfield.ground.fsutil import atomic_write_text
    from levelfield.ground.sysinfo import collect_system_description, placeholder_paths, to_json

    report = query_nvml()
    desc = collect_system_description(nvml_report=report)
    desc.update(fill or {})  # vendor fields only: the fingerprint is observed, never set
    text = to_json(desc)
    if out is not None:
        atomic_write_text(out, text, overwrite=overwrite)
    # stdout stays pure JSON so it can be piped; remarks go to stderr.
    sys.stdout.write(text)
    if report["unavailable_reason"]:
        print(f"note: no NVIDIA accelerator described: {report['unavailable_reason']}", file=sys.stderr)
    if out is None:
        return 0
    todo = placeholder_paths(desc)
    print(
        f"wrote {out}; fill in {', '.join(todo)}, then run: levelfield sysinfo --check {out}"
        if todo
        else f"wrote {out}",
        file=sys.stderr,
    )
    return 0


def check(path: Path) -> int:
    from levelfield.ground.sysinfo import description_problems
    from levelfield.ground.validation import SchemaError, load_document

    desc = load_document(path)
    found = description_problems(desc)
    if found:
        error = SchemaError(path, found)
        if any(line.startswith(("$.fingerprint", "$.accelerators_per_node")) for line in found):
            error.hint = (
                f"the fingerprint is observed, not declared: regenerate on the system with"
                f" `levelfield sysinfo --out {path} --force`, then fill in the placeholders again"
            )
        elif any("placeholder not filled in" in line for line in found):
            error.hint = f"edit {path} and replace each '<FILL: ...>' value (docs/system-description.md lists them)"
        raise error
    print(f"{path}: valid system description")
    return 0
