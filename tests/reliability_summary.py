"""Pytest plugin: the fault-injection suite's figures, printed as one line at the end of a run.

``tests/test_reliability.py`` records what it actually did (faults the fake servers injected,
processes it killed, results it found missing or doubled, bad inputs and crafted bundles it
tried, long replies it had stored) into ``TALLY``; this plugin prints the line and writes the
figures to ``tests/artifacts/reliability.json``. Under pytest-xdist (``make test`` runs two
workers) each worker's figures are added up into the one line.
Nothing here is hard-coded: with no reliability test run, nothing is printed.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest


@dataclass
class Tally:
    faults: Counter[str] = field(default_factory=Counter)
    crashes: Counter[str] = field(default_factory=Counter)
    results_checked: int = 0
    results_lost: int = 0
    duplicates: int = 0
    bad_inputs_tried: int = 0
    bad_inputs_rejected: int = 0
    bundles_crafted: int = 0
    bundles_refused: int = 0
    #: hostile request files put in a queue, and those a worker refused or the queue skipped
    requests_crafted: int = 0
    requests_refused: int = 0
    secret_places_searched: int = 0
    secrets_found: int = 0
    hostile_outputs_checked: int = 0
    hostile_leaks: int = 0
    long_replies: int = 0
    long_replies_stored: int = 0
    #: commands run under --max-cost, and those whose spending stayed within the cap plus one
    #: request's worst case (replies without usage among them)
    caps_tried: int = 0
    caps_held: int = 0
    #: requests cancelled (or whose lease was taken over) while a worker ran them, and those
    #: the worker still published
    taken_away: int = 0
    taken_away_published: int = 0

    def add_faults(self, server: Any) -> None:
        """Add a fake server's fault counts (call once per server, after its work)."""
        self.faults.update(server.faults)

    def empty(self) -> bool:
        return not (
            self.faults
            or self.crashes
            or self.results_checked
            or self.bad_inputs_tried
            or self.bundles_crafted
            or self.requests_crafted
            or self.secret_places_searched
            or self.hostile_outputs_checked
            or self.long_replies
            or self.caps_tried
            or self.taken_away
        )

    def line(self) -> str:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items()))
        crashes = ", ".join(f"{k} {v}" for k, v in sorted(self.crashes.items()))
        return (
            f"reliability: faults injected {sum(self.faults.values())} ({faults}); "
            f"crashes injected {sum(self.crashes.values())} ({crashes}); "
            f"results checked {self.results_checked}, lost {self.results_lost}, "
            f"duplicates {self.duplicates}; "
            f"bad inputs tried {self.bad_inputs_tried}, rejected {self.bad_inputs_rejected}; "
            f"bundles crafted {self.bundles_crafted}, refused {self.bundles_refused}; "
            f"request files crafted {self.requests_crafted}, refused {self.requests_refused}; "
            f"secret searches {self.secret_places_searched}, secrets found {self.secrets_found}; "
            f"hostile outputs checked {self.hostile_outputs_checked}, "
            f"leaked {self.hostile_leaks}; "
            f"long replies {self.long_replies}, stored whole {self.long_replies_stored}; "
            f"spending caps tried {self.caps_tried}, held {self.caps_held}; "
            f"requests taken away mid-run {self.taken_away}, "
            f"published {self.taken_away_published}"
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["faults"] = dict(self.faults)
        data["crashes"] = dict(self.crashes)
        return data

    def merge(self, data: dict[str, Any]) -> None:
        """Add another process's figures (a pytest-xdist worker's ``to_dict()``)."""
        for name, value in data.items():
            if isinstance(value, dict):
                getattr(self, name).update(value)
            else:
                setattr(self, name, getattr(self, name) + value)


TALLY = Tally()
_KEY = "intima_reliability"


def pytest_sessionfinish(session: Any) -> None:
    # Under pytest-xdist each worker has its own TALLY; it hands its figures to the
    # controller, which adds them up in pytest_testnodedown before printing one line.
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_KEY] = json.dumps(TALLY.to_dict())


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    figures = getattr(node, "workeroutput", {}).get(_KEY)
    if figures:
        TALLY.merge(json.loads(figures))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TALLY.empty() or hasattr(terminalreporter.config, "workeroutput"):
        return
    terminalreporter.write_sep("=", "reliability summary")
    terminalreporter.write_line(TALLY.line())
    # The variable lets this plugin's own test write elsewhere than the suite's artifacts.
    default = Path(__file__).parent / "artifacts" / "reliability.json"
    out = Path(os.environ.get("INTIMA_RELIABILITY_JSON", default))
    out.parent.mkdir(parents=True, exist_ok=True)
    data = TALLY.to_dict()
    out.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
