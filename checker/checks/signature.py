"""Signature checks: MANIFEST.sig against the MANIFEST and the auditor's trusted keys; no private key in a tree.

A signature is verified whenever the tree holds one (a signature that does
not hold is evidence of tampering whoever audits). Whether a tree must be
signed, and by whom, is the auditor's policy: `--trusted-keys FILE` turns on
SIG001 and SIG003.
"""

from __future__ import annotations

from collections.abc import Iterator

from levelfield.checker.context import Context
from levelfield.checker.findings import Finding, check
from levelfield.ground import layout as L
from levelfield.ground.signing import Verdict, private_key_paths, verify_document
from levelfield.ground.submission.records import Submission

SIGN_HINT = "sign the packaged tree with `levelfield sign TREE --key FILE` (docs/audit.md)"


def _verdict(sub: Submission, ctx: Context) -> Verdict | None:
    """The tree's signature verdict, computed once per check run; None when the tree is unsigned."""
    file = sub.tree.files.get(L.SIGNATURE)
    if file is None:
        return None
    key = ("signature", L.SIGNATURE)
    if key not in ctx.cache:
        ctx.cache[key] = verify_document(file.data)
    return ctx.cache[key]


@check("SIG001", "unsigned-tree", area="signature")
def unsigned_tree(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the auditor named trusted keys (--trusted-keys) and the tree holds no MANIFEST.sig.
    Why: without a signature nothing ties the tree to the vendor who is said to have sent it; anyone
    on the way (a mirror, a mail gateway, a shared drive) could have re-packaged it.
    Bad: a tree downloaded from a results portal, checked with --trusted-keys vendors.pub, no MANIFEST.sig.
    Fix: the vendor signs the packaged tree (`levelfield sign TREE --key FILE`) and sends it again.
    """
    if ctx.trusted_keys is not None and _verdict(sub, ctx) is None:
        yield Finding.at(".", f"no {L.SIGNATURE}: the tree is not signed", expected="a signature", hint=SIGN_HINT)


@check("SIG002", "bad-signature", area="signature")
def bad_signature(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: MANIFEST.sig is not a levelfield signature file, or its signature does not verify with the
    key it names (checked whether or not --trusted-keys is given).
    Why: a signature that does not verify was forged or altered; the tree's origin is unknown.
    Bad: MANIFEST.sig whose manifest_sha256 was edited to match a re-written MANIFEST.
    Fix: obtain the tree again from its vendor; the vendor re-signs with `levelfield sign --force`.
    """
    verdict = _verdict(sub, ctx)
    if verdict is not None and verdict.problem is not None:
        yield Finding.at(L.SIGNATURE, f"not a valid signature: {verdict.problem}", hint=SIGN_HINT)


@check("SIG003", "untrusted-key", area="signature")
def untrusted_key(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: MANIFEST.sig verifies, but with a key that is not in the auditor's --trusted-keys file.
    Why: anyone can make a key and sign; only a key the auditor holds for the vendor says who signed.
    Bad: a tree re-packaged and signed by a third party's own key.
    Fix: if the key is the vendor's new key, confirm it with the vendor out of band and add its line to
    the trusted-keys file; otherwise obtain the tree from the vendor.
    """
    verdict = _verdict(sub, ctx)
    if ctx.trusted_keys is None or verdict is None or verdict.problem is not None:
        return
    trusted = {k.fingerprint for k in ctx.trusted_keys}
    if verdict.key.fingerprint not in trusted:
        yield Finding.at(
            L.SIGNATURE,
            "signed by a key that is not trusted",
            found=verdict.key.fingerprint,
            expected="one of " + ", ".join(sorted(trusted)),
            hint="add the vendor's public key line to the trusted-keys file once confirmed with the vendor",
        )


@check("SIG004", "tree-changed-after-signing", area="signature")
def tree_changed_after_signing(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: MANIFEST.sig verifies, but the MANIFEST it covers is not the tree's MANIFEST: files were
    changed, added or removed after signing and the MANIFEST rewritten to match.
    Why: the MANIFEST alone only shows a change made without rewriting it (STR006); the signature shows
    the rest.
    Bad: a result_0.txt edited after signing, then `MANIFEST` regenerated with sha256sum.
    Fix: restore the tree as signed, or the vendor re-packages and re-signs it.
    """
    verdict = _verdict(sub, ctx)
    manifest = sub.tree.files.get(L.MANIFEST)
    if verdict is None or verdict.problem is not None or manifest is None:
        return
    if manifest.sha256 != verdict.signed_manifest_sha256:
        yield Finding.at(
            L.MANIFEST,
            f"differs from the MANIFEST signed at {verdict.signed_utc}",
            found=manifest.sha256,
            expected=verdict.signed_manifest_sha256,
            hint="obtain the tree as signed; the vendor re-signs after re-packaging",
        )


@check("SIG005", "private-key-in-tree", area="signature")
def private_key_in_tree(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a file of the tree holds a private key (a PEM or OpenSSH `-----BEGIN ... PRIVATE KEY-----` block).
    Why: a submission tree is published; a private key in it lets anyone sign as its owner.
    Bad: code/src/deploy/id_ed25519 in an open-division tree.
    Fix: remove the key, re-package, and treat the key as leaked: make a new one (`levelfield keygen`)
    and tell auditors to stop trusting the old one.
    """
    for path in private_key_paths({path: f.data for path, f in sub.tree.files.items()}):
        yield Finding.at(
            path,
            "holds a private key",
            expected="public material only",
            hint="remove it, re-package, and replace the key: it must be treated as leaked",
        )
