"""What ``board build --store`` and ``board serve`` show of a store: the rows of the trust
set's publishers (:mod:`intima.bundles.withheld`), each run's model facts read from the Hub
by the board where it can (:mod:`intima.results.model_facts`)."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from intima.bundles.trust import TrustSet
from intima.bundles.withheld import trusted_copy, withheld
from intima.results.conversations import ConversationBoard, load_conversations
from intima.results.data import BoardData, load_board
from intima.results.model_facts import with_hub_facts
from intima.store import Store
from intima.store.provenance import LOCAL


@dataclass(frozen=True)
class StoredBoard:
    data: BoardData
    conversations: ConversationBoard
    #: who published the rows left out (not in the trust set) -> how many
    left_out: dict[str, int] = field(default_factory=dict)
    #: where the trust set came from, for the line that says what was left out
    trust_source: str = ""

    def notes(self) -> list[str]:
        """One line per publisher left out, naming how to show it."""
        key = {LOCAL: "this machine's key (`intima publisher` prints it)"}
        return [
            f"left out {n} row(s) published by {who}: not in {self.trust_source} (pass --trust "
            f"FILE naming {key.get(who, 'its key')} to show them; docs/requests-and-bundles.md, "
            "Publishers)"
            for who, n in sorted(self.left_out.items())
        ]


def load_stored(path: Path, trust: TrustSet) -> StoredBoard:
    """The board of the store at ``path`` as ``trust`` takes it; the store is only written to
    fill in model facts a run has none of (:func:`intima.providers.model_info.record`)."""
    with Store.open(path, create=False) as db:
        if not db.read_only:  # each run's model info, read once (never fails the board)
            from intima.providers.model_info import record

            record(db)
        left = withheld(db, trust)
        if not left:
            return _read(db, {}, trust)
        tmp = Path(tempfile.mkdtemp(prefix="intima-trusted-"))
        try:
            with trusted_copy(db, trust, tmp / "trusted.db") as copy:
                return _read(copy, left, trust)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _read(store: Store, left: dict[str, int], trust: TrustSet) -> StoredBoard:
    data = with_hub_facts(store, load_board(store))  # a bundle's model facts: the Hub's first
    return StoredBoard(data, load_conversations(store), left, trust.source)
