"""Who published a bundle: ed25519 signatures over its manifest.

A results repo (and a folder of bundles passed around) can be written by anyone holding a
token or the files, so a bundle's rows say nothing about who made them. Its **publisher** is
the key that signed its manifest: ``intima publish`` signs with this machine's publisher key
(made on first use, at :func:`key_path`), and the manifest carries the public key and a
display name. The manifest holds the sha256 of every file, so the signature covers every row.

A reader verifies the signature (:func:`publisher_of`): a bad one refuses the bundle, an
absent one makes it **unattributed**. A publisher *is* its key's fingerprint; the name is a
label, shown "as claimed". Which publishers a board shows is its trust set
(:mod:`intima.bundles.trust`), never anything a bundle says.

The key is ed25519 from ``cryptography`` (the PyCA package): small keys, deterministic
signatures, no parameters to get wrong.
"""

from __future__ import annotations

import base64
import binascii
import getpass
import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ConfigDict, Field

from intima.core.errors import IntimaError
from intima.store.provenance import shown

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

#: Where the key is, when set; else ``$XDG_CONFIG_HOME/intima/publisher.key``.
KEY_ENV: Final = "INTIMA_PUBLISHER_KEY"
#: The name a publisher signs with, when set; else the login name.
NAME_ENV: Final = "INTIMA_PUBLISHER_NAME"
#: Hex digits of a key's sha256 that name it (128 bits).
FINGERPRINT_HEX: Final = 32
MAX_NAME: Final = 80


class SigningError(IntimaError):
    """A publisher key cannot be read or made, or a signature does not verify."""


class Publisher(BaseModel):
    """A bundle's publisher as its manifest states it: a public key and a claimed name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: the raw 32-byte ed25519 public key, base64
    key: str = Field(max_length=64)
    #: a label chosen by the publisher: shown "as claimed", never used to decide anything
    name: str = Field(max_length=MAX_NAME)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.key)

    def shown(self) -> str:
        """``alice (key 1a2b3c4d)``: the claimed name and the start of the fingerprint."""
        return shown(self.name, self.fingerprint)


def fingerprint(key: str) -> str:
    """The publisher a public key names: the first hex digits of the sha256 of its raw bytes."""
    return hashlib.sha256(raw_key(key)).hexdigest()[:FINGERPRINT_HEX]


def raw_key(key: str) -> bytes:
    try:
        raw = base64.b64decode(key, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SigningError(f"publisher key {key[:20]!r}... is not base64") from exc
    if len(raw) != 32:
        raise SigningError(f"publisher key {key[:20]!r}... is not a 32-byte ed25519 key")
    return raw


def key_path() -> Path:
    """``$INTIMA_PUBLISHER_KEY``, else ``${XDG_CONFIG_HOME:-~/.config}/intima/publisher.key``."""
    if set_path := os.environ.get(KEY_ENV):
        return Path(set_path).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "intima" / "publisher.key"


def _name() -> str:
    name = os.environ.get(NAME_ENV)
    if not name:
        try:
            name = getpass.getuser()
        except (OSError, KeyError):  # no login name (a container without a passwd entry)
            name = "unnamed"
    return "".join(c for c in name if c.isprintable())[:MAX_NAME]


def _read_key(path: Path) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise SigningError(
            f"cannot read the publisher key at {path} ({type(exc).__name__}); point "
            f"{KEY_ENV} at a key made by `intima publisher`, or move the file away to make one"
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningError(f"{path} is not an ed25519 key; bundles are signed with ed25519")
    return key


def private_key(*, create: bool) -> Ed25519PrivateKey | None:
    """This machine's publisher key; made (readable by its owner only) when ``create`` and
    missing, else None when missing."""
    path = key_path()
    if path.exists():
        return _read_key(path)
    if not create:
        return None
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
    )

    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL: two processes making a key at once never overwrite each other's.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_key(path)
    except OSError as exc:
        raise SigningError(
            f"cannot write a publisher key at {path} ({exc.strerror}); set {KEY_ENV} to a "
            "writable place"
        ) from exc
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    return key


def public_of(key: Ed25519PrivateKey) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    raw = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def local_publisher(*, create: bool = False) -> Publisher | None:
    """This machine's publisher (its key and name), or None when it has no key yet."""
    key = private_key(create=create)
    return None if key is None else Publisher(key=public_of(key), name=_name())


def signed_bytes(manifest: dict[str, Any]) -> bytes:
    """What a signature covers: the manifest without its signature, as canonical JSON."""
    body = {k: v for k, v in manifest.items() if k != "signature"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def sign(manifest: dict[str, Any], key: Ed25519PrivateKey) -> str:
    return base64.b64encode(key.sign(signed_bytes(manifest))).decode("ascii")


def verify(manifest: dict[str, Any], publisher: Publisher, signature: str) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        public = Ed25519PublicKey.from_public_bytes(raw_key(publisher.key))
        public.verify(base64.b64decode(signature, validate=True), signed_bytes(manifest))
    except (InvalidSignature, SigningError, binascii.Error, ValueError):
        return False
    return True
