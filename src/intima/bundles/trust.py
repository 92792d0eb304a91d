"""Which publishers a board shows and an import takes: the trust set.

It comes from a place the bundle writers cannot change: a file given with ``--trust`` (for
``intima import``, ``board build`` and ``board serve``), or the Space's own ``trust.toml``
(written by ``intima board space --trust``; the Space repo is the maintainers'). Without one,
the default is **this machine's publisher key** alone, so a maintainer who builds a board
from their own store, or whose workers run on their machine, has nothing to set up.

The file (TOML)::

    [[publisher]]
    name = "alice"                 # a label, for people
    key = "q2d4...="               # the base64 public key `intima publisher` prints

A bundle whose publisher is not in the set, and a bundle without a signature
(unattributed), is refused with the reason: never merged into the trusted rows.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from intima.bundles.signing import Publisher, SigningError, key_path, local_publisher
from intima.core.errors import IntimaError

MAX_TRUST_BYTES: Final = 1_000_000


class TrustError(IntimaError):
    """A trust file cannot be read."""


class TrustSet(BaseModel):
    """The publishers taken, by fingerprint (-> their name in the trust file)."""

    model_config = ConfigDict(frozen=True)

    publishers: dict[str, Publisher] = {}
    #: whether rows made in a store (no bundle) are taken: they are this machine's
    #: publisher's, so the default takes them, and a trust file that names this machine's key
    local: bool = False
    #: where the set came from, for messages
    source: str = "no trust set"

    def trusts(self, fp: str) -> bool:
        return fp in self.publishers

    def to_toml(self) -> str:
        head = "# Publishers whose results bundles this board shows (intima board space).\n"
        return head + "\n".join(trust_entry(p) for p in self.publishers.values())


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")

    publisher: list[Publisher] = Field(default_factory=list)


def read_trust(path: Path) -> TrustSet:
    """The trust set a ``--trust`` file names; a TrustError in one line otherwise."""
    try:
        if path.stat().st_size > MAX_TRUST_BYTES:
            raise TrustError(f"{path}: a trust file is at most {MAX_TRUST_BYTES:,} bytes")
        parsed = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TrustError(f"cannot read the trust file {path} ({exc.strerror})") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TrustError(f"{path} is not TOML ({str(exc)[:120]})") from exc
    try:
        listed = _File.model_validate(parsed).publisher
        found = {p.fingerprint: p for p in listed}
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise TrustError(
            f"{path}: {where}: {err['msg']} (each [[publisher]] has a name and a key)"
        ) from exc
    except SigningError as exc:
        raise TrustError(f"{path}: {exc}") from exc
    if not found:  # (taking nobody is never what a trust file is for)
        raise TrustError(
            f"{path} names no publisher; add a [[publisher]] with a name and a key (`intima "
            "publisher` prints this machine's)"
        )
    own = local_publisher()
    return TrustSet(
        publishers=found,
        local=own is not None and own.fingerprint in found,
        source=f"the trust file {path}",
    )


def default_trust() -> TrustSet:
    """This machine's publisher alone (none when it has no key yet)."""
    own = local_publisher()
    if own is None:
        return TrustSet(local=True, source=f"this machine's publisher key ({key_path()}: none yet)")
    return TrustSet(
        publishers={own.fingerprint: own}, local=True, source="this machine's publisher key only"
    )


def trust_from(path: Path | None) -> TrustSet:
    return default_trust() if path is None else read_trust(path)


def trust_entry(publisher: Publisher) -> str:
    """The lines a maintainer adds to a trust file to take this publisher's bundles."""
    name = publisher.name.replace("\\", "\\\\").replace('"', '\\"')
    return f'[[publisher]]\nname = "{name}"\nkey = "{publisher.key}"\n'
