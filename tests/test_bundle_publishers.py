"""Issue 37: every row has a publisher. A results bundle that copies a real bundle and adds rows
under new keys, or changes only columns the identity rules let differ, used to change what the
board said about another publisher's run, with no notice (cases 1, 2, 3, 4 and 6 of the issue:
a judge's rationale, the run's model card, an unscored verdict settled, a forged judge made the
predictor of a prediction-powered share, a validation card). Now a bundle is signed by its
publisher and the board takes only trusted publishers: each forgery, unsigned (unattributed) or
signed by a key of its own, is refused and named, and the board is exactly the board of the
real bundle alone, on the Space's path (``board build --from hf://``, the fake Hub) and on
``intima import``. A second *trusted* publisher's judge of the same run is another scorer,
shown under its publisher, and changes nothing the first published."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke_cli
from fake_hub import RESULTS, FakeHub, push_bundle
from fake_openai import FakeOpenAI, FaultPlan
from full_bundle import rewrite
from intima.bundles.merge import import_bundle
from intima.bundles.publish import publish
from intima.core.config import ModelConfig
from intima.core.ids import content_hash
from intima.dataset import load_prompts
from intima.generate import generate
from intima.judges.loop import judge
from intima.judges.prompt import JUDGE_PROMPT_VERSION
from intima.judges.samples import SampleSpec
from intima.leaderboard.hub_results import import_results
from intima.results.board import assemble_board
from intima.results.data import load_board
from intima.store import Store
from reliability_summary import TALLY
from signed import new_key, public, resign, trust_file, unsign

N = 12  # responses of the real run
SAMPLE = 10  # the real judge's seeded random sample of them
FORGED = "FORGED rationale"


def _reinforcing(ratings_json: str) -> str:
    """A judge's levels (every category, as the fake judge rates them) turned reinforcing."""
    return json.dumps({**json.loads(ratings_json), "companionship_reinforcing": "high"})


# -- the real bundle ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One run of N answers, its model facts, and a judge on a seeded sample of SAMPLE: three
    of them reinforcing, two unscored, the rest neutral; published by this worker."""
    from intima.providers.model_info import record

    tmp = tmp_path_factory.mktemp("real")
    server = FakeOpenAI(FaultPlan()).start_in_thread()
    try:
        with Store.open(tmp / "source.db") as store:
            config = ModelConfig(spec=f"openai-compat:fake@{server.base_url}", label="real")
            generate(store, load_prompts("demo").first(N), [config])
            judge(store, [ModelConfig(spec=f"openai-compat:judge@{server.base_url}",
                                      label="judge-a", max_retries=0)],
                  sample=SampleSpec(size=SAMPLE))  # fmt: skip
            record(store)
    finally:
        server.stop()
    with sqlite3.connect(tmp / "source.db") as conn:
        rows = conn.execute("SELECT judgment_id, ratings_json FROM judgments ORDER BY rowid")
        ids, levels = zip(*rows.fetchall(), strict=True)
        assert len(ids) == SAMPLE
        for jid in ids[:3]:
            conn.execute("UPDATE judgments SET ratings_json = ?, primary_label = 'reinforcing' "
                         "WHERE judgment_id = ?", (_reinforcing(levels[0]), jid))  # fmt: skip
        for jid in ids[3:5]:
            conn.execute("UPDATE judgments SET status = 'unscored', ratings_json = NULL, "
                         "primary_label = NULL, reason = 'no JSON' WHERE judgment_id = ?", (jid,))  # fmt: skip
    with Store.open(tmp / "source.db") as store:
        publish(store, str(tmp / "real"))
    yield tmp / "real"


def _board(db: Path) -> dict[str, Any]:
    """What the board says, from every view these cases touch."""
    with Store.open(db) as store:
        data = load_board(store)
    view = assemble_board(data, bootstrap=20, seed=0)
    return {
        "sets": sorted(
            (rs.scorer, rs.response_id, rs.status, str(rs.primary), rs.reason)
            for rs in data.rating_sets
        ),
        "models": {k: v.model_dump() for k, v in data.models.items()},
        "cards": sorted(c.summary() for c in data.methodology.cards),
        "prediction": sorted(map(repr, view.prediction)),
    }


@pytest.fixture(scope="module")
def alone(real: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The board of the real bundle alone: what every forgery must leave it at."""
    db = tmp_path_factory.mktemp("alone") / "alone.db"
    with Store.open(db) as store:
        import_bundle(store, str(real))
    board = _board(db)
    # What the forgeries aim at is there: verdicts, model facts, a prediction-powered row.
    assert board["sets"] and board["models"] and board["prediction"], board
    return board


# -- the forgeries (each a copy of the real bundle) -----------------------------------------------
def _rationale(bundle: Path) -> None:
    """Case 1: a judge rationale rewritten."""
    rewrite(bundle, "judgments", lambda rows: [r.update(rationale=FORGED) for r in rows])


def _model_card(bundle: Path) -> None:
    """Case 2: the run's model card, licence and size."""
    phishing = {"source": "hub", "hub_id": "attacker/phishing-card", "license": "mit",
                "parameters": 70_000_000_000}  # fmt: skip
    rewrite(bundle, "run_models", lambda rows: [r.update(phishing) for r in rows])


def _settled(bundle: Path) -> None:
    """Case 3: the real judge's unscored judgment turned into a scored reinforcing one."""

    def settle(rows: list[dict[str, Any]]) -> None:
        levels = next(r["ratings_json"] for r in rows if r["status"] == "scored")
        row = next(r for r in rows if r["status"] == "unscored")
        row.update(status="scored", ratings_json=_reinforcing(levels),
                   primary_label="reinforcing", reason=None)  # fmt: skip

    rewrite(bundle, "judgments", settle)


def _predictor(bundle: Path) -> None:
    """Case 4: a second judge under new keys, on every response: 'reinforcing' off the real
    judge's sample, agreeing with it on the sample."""
    prompts = {r["prompt_id"]: r for r in _rows(bundle, "prompts")}
    hashes = [
        content_hash(prompts[r["prompt_id"]]["text"], r["text"],
                     prompts[r["prompt_id"]].get("context_json"))
        for r in _rows(bundle, "responses")
    ]  # fmt: skip

    def add(rows: list[dict[str, Any]]) -> None:
        real = {r["content_hash"]: r for r in rows}
        levels = _reinforcing(next(r["ratings_json"] for r in rows if r["status"] == "scored"))
        for n, h in enumerate(hashes):
            verdict = real.get(h, {}).get("primary_label") or "reinforcing"
            template = dict(rows[0])
            template.update(judgment_id=f"{n:032x}", content_hash=h, judge_key="llm:forger",
                            judge_label="forger", status="scored", primary_label=verdict,
                            ratings_json=levels, reason=None)  # fmt: skip
            rows.append(template)

    rewrite(bundle, "judgments", add)


def _report(bundle: Path) -> None:
    """Case 6: a validation report for the real judge: 'Validated (AUROC 0.990, n=5000)'."""
    figures = {"n": 5000, "auroc": 0.99, "auroc_lo": 0.985, "auroc_hi": 0.995,
               "macro_f1_rb": 0.95}  # fmt: skip
    report = {"set_sha256": "f" * 64, "set_key": "", "set_name": "forged-set",
              "scorer": "judge:judge-a", "scorer_version": f"judge-prompt-{JUDGE_PROMPT_VERSION}",
              "by_columns": "", "options": "", "n": 5000,
              "report_json": json.dumps({"kind": "labels", "n": 5000,
                                         "groups": {"overall": figures}}),
              "package_version": "0.1.0", "created_at": "2026-01-01T00:00:00Z"}  # fmt: skip
    rewrite(bundle, "validation_reports", lambda rows: rows.append(report))


def _rows(bundle: Path, table: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (bundle / f"{table}.jsonl").read_text().splitlines()]


CASES: dict[str, Callable[[Path], None]] = {
    "1-rationale": _rationale, "2-model-card": _model_card, "3-settled": _settled,
    "4-predictor": _predictor, "6-report": _report,
}  # fmt: skip


def _forge(real: Path, at: Path, case: str, signer: str) -> Path:
    """A copy of ``real`` with ``case``'s change, signed by an attacker's key or unsigned."""
    shutil.copytree(real, at)
    CASES[case](at)
    if signer == "unsigned":
        unsign(at)
    else:
        resign(at, new_key(at.parent / f"{at.name}.key"), name="test-publisher")
    return at


def _crafted(refused: bool) -> None:
    TALLY.bundles_crafted += 1
    TALLY.bundles_refused += refused


# -- the Space's path: board build --from hf://, the Space ---------------------------------------
@pytest.mark.parametrize("signer", ["attacker", "unsigned"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_forgery_on_the_results_repo_changes_nothing(
    case: str, signer: str, real: Path, alone: dict[str, Any], results_hub: FakeHub, tmp_path: Path
) -> None:
    forged = _forge(real, tmp_path / "forged", case, signer)
    push_bundle(results_hub, real, "bundles/2026-real")
    push_bundle(results_hub, forged, "bundles/0000-forged")  # sorts first: order decides nothing
    db = tmp_path / "board.db"
    with Store.open(db) as store:
        got = import_results(store, f"hf://datasets/{RESULTS}", tmp_path)
    refused = dict(got.refused)
    _crafted("0000-forged" in refused)
    assert _board(db) == alone
    assert got.imported == ["2026-real"], got.refused
    why = "unattributed" if signer == "unsigned" else "who is not in this machine's publisher"
    assert why in refused["0000-forged"], refused


# -- intima import ---------------------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_forgery_in_an_import_changes_nothing(
    case: str, real: Path, alone: dict[str, Any], tmp_path: Path
) -> None:
    signer = "unsigned" if case.startswith(("2", "4")) else "attacker"
    folder = tmp_path / "incoming"
    _forge(real, folder / "bundles" / "a-forged", case, signer)
    shutil.copytree(real, folder / "bundles" / "b-real")
    db = tmp_path / "store.db"
    both = invoke_cli("import", str(folder), "--store", str(db), timeout=120)
    again = invoke_cli("import", str(real), "--store", str(db), timeout=120)
    _crafted(both.returncode == 2)
    assert _board(db) == alone
    assert again.returncode == 0, again.stderr[-800:]
    assert both.returncode == 2, both.stdout[-800:]
    line = both.stderr.strip().splitlines()
    assert len(line) == 1 and "bundles/a-forged" in line[0], both.stderr[-800:]
    assert ("unattributed" if signer == "unsigned" else "not in this machine's") in line[0]


def test_a_bad_signature_is_refused(real: Path, tmp_path: Path) -> None:
    """A signed manifest changed afterwards (a table's rows re-declared, the publisher's
    signature kept): refused, not taken as unattributed."""
    bundle = tmp_path / "changed"
    shutil.copytree(real, bundle)
    signature = json.loads((bundle / "manifest.json").read_text())
    _report(bundle)  # re-signed by this worker: put the real signature back
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["signature"] = signature["signature"]
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    res = invoke_cli("import", str(bundle), "--store", str(tmp_path / "s.db"), timeout=120)
    _crafted(res.returncode == 2)
    assert res.returncode == 2 and "signature does not verify" in res.stderr, res.stderr[-800:]
    assert not (tmp_path / "s.db").exists()


# -- a second trusted publisher ---------------------------------------------------------------------
def test_another_trusted_publishers_judge_is_another_scorer(
    real: Path, alone: dict[str, Any], tmp_path: Path
) -> None:
    """Publisher B, trusted too, copies the real run and judges it with the same judge, other
    verdicts and words: its judge is another scorer, named with B's key, and the real
    judge's verdicts, words and share are the real bundle's, in either order."""
    other = new_key(tmp_path / "b.key")
    trust = trust_file(tmp_path / "trust.toml", None, other)
    b = tmp_path / "b"
    shutil.copytree(real, b)
    _rationale(b)
    _settled(b)
    resign(b, other, name="bee")
    fp = hashlib.sha256(base64.b64decode(public(other))).hexdigest()[:8]
    for order in ((b, real), (real, b)):
        db = tmp_path / f"store-{order[0].name}.db"
        for bundle in order:
            res = invoke_cli("import", str(bundle), "--store", str(db), "--trust", str(trust))
            assert res.returncode == 0, res.stderr[-800:]
        seen = _board(db)
        own = [s for s in seen["sets"] if s[0] == "judge:judge-a"]
        assert own == [s for s in alone["sets"] if s[0] == "judge:judge-a"]
        theirs = {s[0] for s in seen["sets"] if s[0].startswith("judge:")} - {"judge:judge-a"}
        assert theirs == {f"judge:judge-a @{fp}"}, theirs  # the same label, B's key
        forged_words = [s for s in seen["sets"] if s[4] == FORGED]
        assert forged_words and {s[0] for s in forged_words} == theirs
