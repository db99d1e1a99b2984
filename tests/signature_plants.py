"""Planted defects for the signature checks (SIG001-SIG005), collected into PLANTS by test_checker_fixtures.py.

Each planted tree is resealed, then signed, so only the signature's story changes.
"""

from __future__ import annotations

from tests.submission_edit import change_one_byte, edit_json, first, reseal


def _key(tmp, name="vendor"):
    """A fresh key pair under tmp: (private key path, the trusted-keys list holding its public key)."""
    from levelfield.ground.signing import generate_key_pair, read_trusted_keys

    pub, _ = generate_key_pair(tmp / "keys" / name, name)
    return tmp / "keys" / name, read_trusted_keys(pub)


def _sign(tree, tmp):
    from levelfield.tools.sign import sign_tree

    reseal(tree)
    key, trusted = _key(tmp)
    sign_tree(tree, key)
    return trusted


def plant_sig001(tree, tmp):
    return {"trusted_keys": _key(tmp)[1]}  # the auditor asks for a signature; the tree has none


def plant_sig002(tree, tmp):
    trusted = _sign(tree, tmp)
    # The signed digest swapped for the digest of another MANIFEST: the signature no longer covers it.
    edit_json(tree / "MANIFEST.sig", lambda d: d.update(manifest_sha256="0" * 64))
    return {"reseal": False, "trusted_keys": trusted}


def plant_sig003(tree, tmp):
    _sign(tree, tmp)
    return {"reseal": False, "trusted_keys": _key(tmp, "someone-else")[1]}


def plant_sig004(tree, tmp):
    trusted = _sign(tree, tmp)
    change_one_byte(tree)  # one byte changed after signing ...
    reseal(tree)  # ... and the MANIFEST rewritten to match: only the signature shows it
    return {"reseal": False, "trusted_keys": trusted}


def plant_sig005(tree, tmp):
    key, _ = _key(tmp)
    with first(tree, "performance/run_1/mlperf_log_summary.txt").open("a") as f:
        f.write(key.read_text())  # pasted at the end of a file whose figures come first
