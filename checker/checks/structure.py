"""Structure and integrity checks: the tree has the documented layout and matches its MANIFEST."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from levelfield.checker.context import Context
from levelfield.checker.findings import Finding, check
from levelfield.ground import layout as L
from levelfield.ground.submission.records import Submission


@check("CHK001", "internal-error", area="checker")
def internal_error(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a check raised an exception instead of returning findings (reported by the engine).
    Why: a crashing check has no verdict; treating it as a pass would let a broken submission through.
    Bad: a check meets a value of a type nobody anticipated and raises TypeError.
    Fix: report the message to the levelfield maintainers; the submission cannot pass until it is fixed.
    """
    return iter(())


@check("STR001", "missing-file", area="structure")
def missing_file(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a file or folder the layout requires is absent (MANIFEST, code/levelfield.json, a system
    description, environment.json, a required file of a performance or accuracy run, a LoadGen log of a
    performance repeat's run_<i>/, or one of the two modes). How many repeats there must be is INF008's.
    Why: every result must be verifiable from the files next to it; a missing log is an unverifiable claim.
    Bad: server/performance/run_2/ without mlperf_log_detail.txt.
    Fix: re-run `levelfield package` from complete run folders; never delete files from a packaged tree.
    """
    for path, what in sub.missing:
        yield Finding.at(path, f"missing: {what}", hint="package complete runs with `levelfield package`")


@check("STR002", "unexpected-entry", area="structure")
def unexpected_entry(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a file or folder that the layout does not define.
    Why: results hidden under unexpected names are never checked; stray files make a tree ambiguous.
    Bad: results/box/ctr-dlrm/jax/notes.txt, or a second organisation folder.
    Fix: remove stray files before packaging; `levelfield package` writes only the layout's files.
    """
    for path, why in sub.unknown:
        yield Finding.at(
            path,
            f"not part of the submission layout: {why}",
            hint="see submissions/README.md for the layout; `levelfield package` writes it",
        )


@check("STR009", "unknown-id", area="structure")
def unknown_id(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a folder name that should be an id of the declared rules version is not one: division,
    system id, task, framework, scenario or mode.
    Why: results under a misspelt id cannot be matched to their rules and would never be checked.
    Bad: results/box/fmnist-resnet/pytorch/Offline/ (scenario ids are lower case).
    Fix: use the ids `levelfield rules show` prints.
    """
    for path, why in sub.unknown_ids:
        yield Finding.at(path, f"unknown id: {why}", hint="rename it to an id of the rules (`levelfield rules show`)")


@check("STR003", "malformed-file", area="structure")
def malformed_file(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a file could not be parsed: not UTF-8, invalid or duplicated-key JSON, a broken MLLOG line,
    JSON nested too deep, an over-long line, a MANIFEST line not in sha256sum format.
    Why: what cannot be read cannot be checked; a duplicated JSON key is also how a tampered value hides.
    Bad: a result_0.txt line cut short by a crash: `:::MLLOG {"key": "run_st`.
    Fix: re-run the affected run; never edit logs by hand.
    """
    for path, line, why in sub.malformed:
        yield Finding.at(
            path,
            f"cannot be parsed: {why}",
            line=line,
            hint="regenerate the file with the levelfield tool that wrote it",
        )


@check("STR010", "field-out-of-shape", area="structure")
def field_out_of_shape(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a file that parses holds a field its writer cannot have written: of another type, out of
    range, missing or unknown, per rules/schemas/ (result.json, settings.json, accuracy.json and
    environment.json; every MLLOG line of a training log and of LoadGen's detail log: its envelope,
    the event type and value type its key takes).
    Why: every other check reads these fields; a count of -1, a seed given as a string or an interval
    event with a value is an edit or a corrupted file, and a figure read from it would be made up.
    Bad: a detail-log line `"key": "result_query_count", "value": "1.0"`; a result.json without
    `loadgen_version`.
    Fix: submit the files `levelfield infer`, `levelfield train` and LoadGen wrote, unedited.
    """
    for path, line, why in sub.misshapen:
        yield Finding.at(
            path,
            f"a field out of shape: {why}",
            line=line,
            hint="regenerate the file with the levelfield tool that wrote it; never edit results",
        )


@check("STR004", "unsafe-entry", area="structure")
def unsafe_entry(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a symlink, FIFO, socket, device or over-deep folder in the tree; none is followed or opened.
    Why: a symlink can make the checker read files outside the tree (secrets, /dev/zero) or make two
    results share one log.
    Bad: results/box/ctr-dlrm/jax/training/result_0.txt -> /etc/passwd.
    Fix: copy real files into the tree (`levelfield package` does), never link.
    """
    for path, kind in sub.tree.refused:
        if kind in ("symlink", "special", "too-deep"):
            what = {
                "symlink": "a symbolic link (not followed)",
                "special": "not a regular file or folder",
                "too-deep": "a folder nested deeper than the checker reads",
            }[kind]
            yield Finding.at(
                path,
                what,
                found=kind,
                expected="regular files and folders",
                hint="replace it with the real file's content",
            )


@check("STR005", "over-size-limit", area="structure")
def over_size_limit(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a file larger than the checker reads, or a tree with more files than it reads.
    Why: size limits keep an audit bounded in time and memory whatever the tree holds.
    Bad: a 10 GB mlperf_log_trace.json copied into the tree.
    Fix: package only the files the layout lists (`levelfield package` does).
    """
    from levelfield.ground.submission.tree import MAX_FILE_BYTES, MAX_FILES

    for path, kind in sub.tree.refused:
        if kind == "too-large":
            yield Finding.at(
                path,
                "file over the size limit; not read",
                expected=f"<= {MAX_FILE_BYTES} bytes",
                hint="remove it; the layout's files are far smaller",
            )
    if sub.tree.truncated:
        yield Finding.at(
            ".",
            "more files than the checker reads; the rest were not checked",
            expected=f"<= {MAX_FILES} files",
            hint="split the submission or remove stray files",
        )


@check("STR006", "digest-mismatch", area="structure")
def digest_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a file's SHA-256 differs from its MANIFEST entry.
    Why: the MANIFEST is what makes a submission tamper-evident; any change after packaging shows here.
    Bad: a result_2.txt edited after `levelfield package` wrote the MANIFEST.
    Fix: restore the packaged file, or re-package the runs (the MANIFEST is regenerated).
    """
    for entry in sub.manifest or []:
        file = sub.tree.files.get(entry.path)
        if file is not None and file.sha256 != entry.sha256:
            yield Finding.at(
                entry.path,
                "content differs from its MANIFEST digest",
                found=file.sha256,
                expected=entry.sha256,
                hint="restore the file or re-run `levelfield package`",
            )


@check("STR007", "manifest-incomplete", area="structure")
def manifest_incomplete(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a file of the tree has no MANIFEST entry, an entry names a file that is not there, or a
    path is listed twice.
    Why: an unlisted file escapes the integrity check; a listed-but-absent file was removed after packaging.
    Bad: a result_5.txt added by hand after packaging.
    Fix: re-run `levelfield package`; do not add or remove files afterwards.
    """
    if sub.manifest is None:
        return
    listed = Counter(e.path for e in sub.manifest)
    for entry in sub.manifest:
        if _unsafe_manifest_path(entry.path):
            continue  # STR008 reports it
        if listed[entry.path] > 1:
            yield Finding.at(L.MANIFEST, "path listed more than once", line=entry.lineno, found=entry.path)
        elif entry.path not in sub.tree.files and not any(p == entry.path for p, _ in sub.tree.refused):
            yield Finding.at(
                L.MANIFEST,
                "lists a file that is not in the tree",
                line=entry.lineno,
                found=entry.path,
                hint="restore the file or re-package",
            )
    for path in sorted(sub.tree.files):
        if path not in (L.MANIFEST, L.SIGNATURE) and path not in listed:
            yield Finding.at(path, "file not listed in MANIFEST", hint="re-run `levelfield package`")


def _unsafe_manifest_path(path: str) -> bool:
    parts = path.split("/")
    return (
        path.startswith("/")
        or "\\" in path
        or any(p in ("", ".", "..") for p in parts)
        or path in (L.MANIFEST, L.SIGNATURE)
        or any(ord(c) < 32 for c in path)
    )


@check("STR008", "unsafe-manifest-path", area="structure")
def unsafe_manifest_path(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a MANIFEST path that is absolute, contains `..`, `.` or empty components, backslashes or
    control characters, or names the MANIFEST itself or its signature.
    Why: a path escaping the tree could make a tool read or overwrite files outside it.
    Bad: `<digest>  ../../home/auditor/.ssh/id_rsa`.
    Fix: MANIFEST paths are relative, '/'-separated and inside the tree; re-run `levelfield package`.
    """
    for entry in sub.manifest or []:
        if _unsafe_manifest_path(entry.path):
            yield Finding.at(
                L.MANIFEST,
                "path is not a plain relative path inside the tree",
                line=entry.lineno,
                found=entry.path,
                expected="a relative path without '..', '.', '\\' or a leading '/'",
            )
