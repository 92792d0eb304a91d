"""Signing bundles in tests: as this worker's publisher (trusted by default), as another
publisher (a key of the test's own), or not at all (unattributed)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
)


def new_key(path: Path) -> Path:
    """A new ed25519 publisher key at ``path`` (another publisher than this worker's)."""
    key = Ed25519PrivateKey.generate()
    path.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    return path


def _key(path: Path | None) -> Ed25519PrivateKey:
    path = path or Path(os.environ["INTIMA_PUBLISHER_KEY"])
    if not path.exists():  # (this worker has not published yet)
        new_key(path)
    key = load_pem_private_key(path.read_bytes(), password=None)
    assert isinstance(key, Ed25519PrivateKey)
    return key


def public(path: Path | None = None) -> str:
    raw = _key(path).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def resign(bundle: Path, key: Path | None = None, name: str = "test-publisher") -> None:
    """Sign ``bundle``'s manifest (as it now is) with ``key`` (default: this worker's
    publisher key): what a publisher who edited a bundle by hand would do."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest.pop("signature", None)
    manifest["publisher"] = {"key": public(key), "name": name}
    body = json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    signature = _key(key).sign(body.encode())
    manifest["signature"] = base64.b64encode(signature).decode()
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def unsign(bundle: Path) -> None:
    """Drop the signature and publisher: an unattributed bundle."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest.pop("signature", None)
    manifest.pop("publisher", None)
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def trust_file(path: Path, *keys: Path | None) -> Path:
    """A --trust file naming the publishers of ``keys`` (None: this worker's)."""
    path.write_text("".join(
        f'[[publisher]]\nname = "p{n}"\nkey = "{public(k)}"\n' for n, k in enumerate(keys)
    ))  # fmt: skip
    return path
