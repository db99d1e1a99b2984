"""Signed submissions: keygen, sign, verify (the checks' fixtures are in test_checker_fixtures.py)."""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
import subprocess

import pytest

from levelfield.ground.signing import generate_key_pair, parse_public_key, read_trusted_keys, verify_document
from tests.conftest import assert_user_error, run_cli
from tests.submission_edit import copy_tree, first, reseal
from tests.test_checker_fixtures import EXAMPLE
from tests.test_package import _package, _runs_from_example


@pytest.fixture
def signed(tmp_path):
    """(tree signed by `vendor`, private key, public key file)."""
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    result = run_cli("keygen", "--out", str(tmp_path / "keys" / "vendor"), "--name", "vendor")
    assert result.returncode == 0, result.stderr
    result = run_cli("sign", str(tree), "--key", str(tmp_path / "keys" / "vendor"))
    assert result.returncode == 0, result.stderr
    return tree, tmp_path / "keys" / "vendor", tmp_path / "keys" / "vendor.pub"


def test_keygen_writes_a_private_key_only_its_owner_reads_and_never_overwrites(tmp_path):
    key = tmp_path / "k"
    pub_path, public = generate_key_pair(key, "acme")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert pub_path.read_text().startswith("ssh-ed25519 ") and pub_path.read_text().strip().endswith(" acme")
    assert public.fingerprint.startswith("SHA256:") and public.name == "acme"
    before = key.read_bytes()
    assert_user_error(run_cli("keygen", "--out", str(key)), "already exists; not overwriting a key")
    assert key.read_bytes() == before
    assert run_cli("keygen", "--out", str(key), "--force").returncode == 0
    assert key.read_bytes() != before and stat.S_IMODE(key.stat().st_mode) == 0o600


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed")
def test_fingerprints_and_key_files_are_openssh_s(tmp_path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ops", "-f", str(tmp_path / "k")], check=True)
    listed = subprocess.run(["ssh-keygen", "-lf", str(tmp_path / "k.pub")], capture_output=True, text=True).stdout
    key = parse_public_key((tmp_path / "k.pub").read_text().strip(), "k.pub")
    assert listed.split()[1] == key.fingerprint
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    assert run_cli("sign", str(tree), "--key", str(tmp_path / "k")).returncode == 0  # an ssh-keygen key signs
    assert run_cli("check", str(tree), "--trusted-keys", str(tmp_path / "k.pub")).returncode == 0


def test_sign_then_verify_is_clean_and_the_document_names_key_and_manifest(signed):
    tree, _, pub = signed
    verdict = verify_document((tree / "MANIFEST.sig").read_bytes())
    assert verdict.problem is None
    assert verdict.key.fingerprint == read_trusted_keys(pub)[0].fingerprint
    assert verdict.signed_manifest_sha256 == hashlib.sha256((tree / "MANIFEST").read_bytes()).hexdigest()
    result = run_cli("check", str(tree), "--trusted-keys", str(pub))
    assert result.returncode == 0, result.stdout


def _flip(signature: str) -> str:
    """The base64 signature with one character changed (still valid base64, no longer the signature)."""
    return signature[:10] + ("A" if signature[10] != "A" else "B") + signature[11:]


@pytest.mark.parametrize(
    "change, problem",
    [
        (lambda d: d.update(signature=_flip(d["signature"])), "does not verify"),
        (lambda d: d.update(signed_utc="2020-01-01T00:00:00Z"), "does not verify"),
        (lambda d: d.update(format="other"), "format 'other'"),
        (lambda d: d.pop("signature"), "string fields"),
    ],
)
def test_an_altered_signature_file_does_not_verify(signed, change, problem):
    tree = signed[0]
    doc = json.loads((tree / "MANIFEST.sig").read_text())
    change(doc)
    assert problem in verify_document(json.dumps(doc).encode()).problem
    assert "not a JSON" in verify_document(b"\xff").problem


def test_a_signature_is_verified_even_without_a_trust_policy(signed):
    tree = signed[0]
    doc = json.loads((tree / "MANIFEST.sig").read_text())
    doc["manifest_sha256"] = "0" * 64
    (tree / "MANIFEST.sig").write_text(json.dumps(doc))
    result = run_cli("check", str(tree), "--no-hints")
    assert result.returncode == 1 and "SIG002" in result.stdout


def test_sign_refuses_a_tree_that_differs_from_its_manifest_and_never_replaces_a_signature(signed):
    tree, key, _ = signed
    signature = (tree / "MANIFEST.sig").read_bytes()
    assert_user_error(run_cli("sign", str(tree), "--key", str(key)), "already exists; not replacing a signature")
    log = first(tree, "training/result_0.txt")
    log.write_text(log.read_text() + "\n")
    assert_user_error(
        run_cli("sign", str(tree), "--key", str(key), "--force"),
        "result_0.txt: content differs from its MANIFEST digest",
    )
    assert (tree / "MANIFEST.sig").read_bytes() == signature
    reseal(tree)
    assert run_cli("sign", str(tree), "--key", str(key), "--force").returncode == 0


def test_a_private_key_others_can_read_is_refused(signed):
    tree, key, _ = signed
    key.chmod(0o644)
    assert_user_error(run_cli("sign", str(tree), "--key", str(key), "--force"), "permissions 0o644, expected 0600")


def test_trusted_keys_file_errors_name_the_file_and_line(tmp_path, signed):
    bad = tmp_path / "trusted.pub"
    bad.write_text("# vendors\n" + signed[2].read_text() + "ssh-rsa AAAAB3NzaC1yc2E bob\n")
    assert_user_error(run_cli("check", str(signed[0]), "--trusted-keys", str(bad)), f"{bad}:3: found 'ssh-rsa")
    empty = tmp_path / "empty.pub"
    empty.write_text("# nobody yet\n")
    assert_user_error(run_cli("check", str(signed[0]), "--trusted-keys", str(empty)), "holds no key")


def test_neither_package_nor_sign_lets_a_private_key_into_a_tree(tmp_path):
    key = tmp_path / "k"
    generate_key_pair(key, "ops")
    runs_dir, system = _runs_from_example(tmp_path)
    doc = json.loads(system.read_text())
    doc["system_name"] += " " + key.read_text()  # pasted into a description by mistake
    system.write_text(json.dumps(doc))
    assert_user_error(_package(runs_dir, system, tmp_path / "out"), "holds a private key")
    assert not (tmp_path / "out").exists()
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    next(tree.glob("*/*/systems/*.json")).write_text(json.dumps(doc))
    reseal(tree)
    assert_user_error(run_cli("sign", str(tree), "--key", str(key)), "holds a private key in")


def test_the_leaderboard_leaves_out_a_tree_without_a_trusted_signature(signed, tmp_path):
    tree, _, pub = signed
    _, other = generate_key_pair(tmp_path / "other", "other")
    trusted = run_cli("leaderboard", str(tree), "--format", "json", "--trusted-keys", str(pub))
    assert trusted.returncode == 0 and "left out" not in trusted.stderr
    (tmp_path / "other-only.pub").write_text(other.line + "\n")
    untrusted = run_cli("leaderboard", str(tree), "--trusted-keys", str(tmp_path / "other-only.pub"), "--strict")
    assert untrusted.returncode == 1 and "SIG003" in untrusted.stderr
