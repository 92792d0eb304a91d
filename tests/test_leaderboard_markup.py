"""Escaping by construction (issue 41): every view builds its HTML as ``markupsafe.Markup``.

Two halves. The rule, read from the source: the leaderboard's only HTML templates are literals
wrapped in ``Markup(...)``, nothing else is ``.format()``ed, no f-string holds markup, and a
function that builds Markup says so in its return type (mypy then refuses a plain ``str``
where Markup is due). The proof, on a real store: a hostile string in every field a stranger
writes, every fragment of the site, the app and the Space rendered, and each parsed as a
browser would: no element or attribute comes from the string, and the string reads back whole.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from fake_openai import FakeOpenAI, FaultPlan
from full_bundle import HashEmbedder
from intima.core.config import ModelConfig
from intima.dataset import PromptSet, load_prompts

LEADERBOARD = Path(__file__).resolve().parents[1] / "src" / "intima" / "leaderboard"
#: A tag's start in a string literal: what makes it HTML.
TAG = re.compile(r"<[A-Za-z/!]")
#: The one Markup made from a computed string: JSON with no '<', '>' or '&' left, for a script.
TRUSTED_CALLS = {("site.py", "safe_json")}


def _is_markup_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Markup"


def _markup_constants(tree: ast.Module) -> set[str]:
    """Module-level names bound to ``Markup("literal")`` (reusable templates)."""
    return {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign) and _is_markup_call(node.value)
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    }


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    templates = _markup_constants(tree)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef)
        and n.body
        and isinstance(n.body[0], ast.Expr)
    }

    def where(node: ast.AST) -> str:
        return f"{path.name}:{getattr(node, 'lineno', '?')}"

    def function_of(node: ast.AST) -> str | None:
        while node in parents:
            node = parents[node]
            if isinstance(node, ast.FunctionDef):
                return node.name
        return None

    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            literal = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
            if TAG.search(literal):
                out.append(f"{where(node)}: an f-string builds markup")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docstrings or not TAG.search(node.value):
                continue
            parent = parents.get(node)
            if isinstance(parent, ast.JoinedStr):
                continue  # reported as an f-string
            if not (_is_markup_call(parent) and parent.args and parent.args[0] is node):
                out.append(f"{where(node)}: markup outside Markup(...): {node.value[:40]!r}")
        elif _is_markup_call(node):
            args = node.args
            literal = not args or isinstance(args[0], ast.Constant)
            if not literal and (path.name, function_of(node)) not in TRUSTED_CALLS:
                out.append(f"{where(node)}: Markup() of a computed string")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
        ):
            recv = node.func.value
            if not (_is_markup_call(recv) or getattr(recv, "id", None) in templates):
                out.append(f"{where(node)}: .format() of something not a Markup template")
        elif isinstance(node, ast.FunctionDef) and node.returns is not None:
            builds = any(_is_markup_call(n) for n in ast.walk(node))
            if builds and ast.unparse(node.returns) in ("str", "str | None"):
                out.append(f"{where(node)}: {node.name} builds Markup but returns str")
    return out


def test_the_leaderboard_builds_html_only_from_markup_templates() -> None:
    """The rule, checked on every leaderboard module. (ruff's S704 also flags Markup() of a
    computed string; this test says why each pattern is refused and covers .format.)"""
    modules = sorted(LEADERBOARD.glob("*.py"))
    assert len(modules) > 10
    found = [v for path in modules for v in _violations(path)]
    assert found == []


def test_the_rule_catches_what_it_refuses(tmp_path: Path) -> None:
    """Each refused pattern is reported (the check can fail)."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from markupsafe import Markup\n"
        "def a(x: str) -> str:\n    return f'<td>{x}</td>'\n"
        "def b(x: str) -> str:\n    return '<td>' + x + '</td>'\n"
        "def c(x: str) -> Markup:\n    return Markup(x)\n"
        "def d(x: str) -> str:\n    return '{}'.format(x)\n"
        "def e(x: str) -> str:\n    return Markup('<p>{}</p>').format(x)\n"
        "def f(x: str) -> Markup:\n    return Markup('<p>{}</p>').format(x)\n"
    )
    found = _violations(bad)
    assert sorted(int(v.split(":")[1]) for v in found) == [3, 5, 5, 7, 9, 10], found


# -- the proof: a hostile string in every field, every fragment --------------------------------

#: What a stranger might write: markup, a closing script tag, template and format syntax,
#: quotes and an entity that must stay five characters.
EVIL = "\"'><img src=x onerror=alert(1)></script><script>alert(2)</script>{{7*7}}{0}%s &amp; <b>"
#: The fields a stranger writes, each marked so that a leak names its field.
FIELDS = (
    "label", "system", "prompt", "response", "judge", "rationale", "card", "source", "request",
    "problem", "bundle", "model", "licence", "publisher",
)  # fmt: skip


def hostile(field: str) -> str:
    return f"[{field}]{EVIL}"


#: What each field reads back as (a card is named after its file: no "/" in a file's name).
EXPECTED = {f: hostile(f) for f in FIELDS} | {"card": hostile("card").replace("/", "_")}


class _Page(HTMLParser):
    """Every tag, every attribute and all text (entities decoded) of one fragment."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self.text += [v for _, v in attrs if v]

    handle_startendtag = handle_starttag

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _check(name: str, html: str, seen: set[str], page: bool = False) -> None:
    """No element or attribute of ``html`` comes from a hostile string; which fields' strings
    read back whole go into ``seen``."""
    parsed = _Page()
    parsed.feed(html)
    parsed.close()
    for tag, attrs in parsed.tags:
        assert tag not in ("img", "b"), (name, tag)
        assert not any(a.startswith("on") or (a == "src" and v == "x") for a, v in attrs.items())
        if tag == "script":  # only the page's own: its scripts and its JSON blocks
            assert page and (attrs.get("src") or attrs.get("type") == "application/json"), name
    text = "".join(parsed.text)
    assert "&amp;amp;" not in text, name  # never escaped twice
    seen.update(f for f, shown in EXPECTED.items() if shown in text)


#: The data files' fields that hold plain text, which the scripts put in with textContent:
#: the explorer's list and the transcript menu. Every other string there is a fragment.
TEXT_KEYS = {"id", "prompt_id", "code", "prompt", "choice"}


def _strings(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """Every string in decoded JSON, with the key it is under (its list's key, in a list)."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v, key)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from intima.affect.measure import AffectScorer
    from intima.affect.store_io import score_store
    from intima.converse import converse
    from intima.generate import generate
    from intima.judges.loop import judge
    from intima.judges.samples import SampleSpec
    from intima.providers.model_info import record
    from intima.store import Store
    from intima.validate.run import ValidationSettings, validate

    root = tmp_path_factory.mktemp("hostile")
    demo = load_prompts("demo")
    prompts = PromptSet(
        info=demo.info.model_copy(update={"n_prompts": 20}),
        prompts=[p.model_copy(update={"text": hostile("prompt")}) if i == 0 else p
                 for i, p in enumerate(demo.prompts[:20])],
    )  # fmt: skip
    labels = root / f"{EXPECTED['card']}.jsonl"
    labels.write_text(
        "".join(
            json.dumps({"id": f"v{i}", "prompt": f"p {i}", "response": f"r {i}", "label": lab})
            + "\n"
            for i, lab in enumerate(["reinforcing", "boundary", "neutral"] * 4)
        )
    )
    server = FakeOpenAI(
        FaultPlan(reply_text=hostile("response"), judge_rationale=hostile("rationale"))
    ).start_in_thread()
    try:
        url = server.base_url

        def config(label: str, system: str | None = None) -> ModelConfig:
            return ModelConfig(spec=f"openai-compat:fake@{url}", label=label,
                               system_prompt=system, max_retries=0)  # fmt: skip

        with Store.open(root / "s.db") as s:
            generate(s, prompts, [config(hostile("label"), hostile("system")), config("plain")])
            two = PromptSet(info=prompts.info.model_copy(update={"n_prompts": 2}),
                            prompts=prompts.prompts[:2])  # fmt: skip
            converse(s, config(hostile("label")), config("user"), two, 2)
            how = ValidationSettings(scorers=[], bootstrap=20, labels_from=hostile("source"))
            validate(s, labels, how)
            judge(s, [config(hostile("judge"))], sample=SampleSpec(size=15))
            score_store(s, scorer=AffectScorer(embedder=HashEmbedder()))
            record(s)
    finally:
        server.stop()
    yield root / "s.db"


def test_a_hostile_string_in_every_field_never_becomes_markup(store: Path, tmp_path: Path) -> None:
    from dataclasses import replace

    from intima.leaderboard import drift_render, models_view
    from intima.leaderboard.app import header_html, methodology_html
    from intima.leaderboard.chunks import read_chunk
    from intima.leaderboard.page import BoardIndex
    from intima.leaderboard.request_tab import request_model
    from intima.leaderboard.site import build_site
    from intima.leaderboard.space import Board
    from intima.leaderboard.space_form import _fields
    from intima.leaderboard.views import VIEWS, Pick
    from intima.providers.model_info import ModelInfo
    from intima.results.board import assemble_board
    from intima.results.conversations import drift_tables, load_conversations
    from intima.results.data import load_board
    from intima.results.table import LABEL_METRICS, METRICS
    from intima.store import Store

    with Store.open(store, create=False) as s:
        data, conv = load_board(s), load_conversations(s)
    # What a bundle brings beside its rows (its rows' checks: tests/test_bundle_*.py): the
    # facts of a model and who published it, claimed by whoever signed it.
    run = data.runs[0].run_id
    info = ModelInfo(source="hub", hub_id=hostile("model"), kind=hostile("licence"),
                     license=hostile("licence"), date=hostile("licence"))  # fmt: skip
    data = replace(
        data,
        models={**data.models, run: info},
        run_publishers={run: (hostile("publisher"),)},
        methodology=replace(data.methodology, publishers=(hostile("publisher"),)),
    )
    view = assemble_board(data, bootstrap=20, seed=0, conversations=conv)
    seen: set[str] = set()
    # The site: the page and every fragment of every data file.
    site = build_site(data, tmp_path / "site", bootstrap=20, seed=0, conversations=conv)
    index = site.index.read_text(encoding="utf-8")
    _check("index.html", index, seen, page=True)
    blocks = re.findall(r'<script type="application/json" id="[\w-]+">(.*?)</script>', index)
    assert len(blocks) == 2  # the board's data and the drift view's, whole
    for block in blocks:  # plain text (menus, names): read back whole, no fragment in it
        text = "".join(t for _, t in _strings(json.loads(block)))
        assert "<" not in block and EVIL.replace("/", "").replace("<", "") not in block
        seen.update(f for f, shown in EXPECTED.items() if shown in text)
    files = sorted((tmp_path / "site" / "data").glob("*.js"))
    assert files
    for f in files:
        for key, text in _strings(read_chunk(f)):
            if key in TEXT_KEYS:
                seen.update(f for f, shown in EXPECTED.items() if shown in text)
            else:
                _check(f"{f.name}: {key}", text, seen)
    # The app and the Space: every view, in every scope, for every scorer, metric and pair.
    ix = BoardIndex(view)
    configs = [run_id for run_id, _ in view.table.configs]
    fragments = [header_html(view, hostile("label")), methodology_html(view)]
    for scorer in view.table.scorers:
        for scope in view.scopes:
            fragments += [ix.scores(scorer, scope, m) for m in LABEL_METRICS]
        for drift_scorer in view.drift:  # every declared view, the drift ones included
            picked = Pick(scorer, sort="reinforcing", drift_scorer=drift_scorer)
            fragments += [v.render(view, picked) for v in VIEWS]
        fragments += [ix.compare(scorer, m, a, b) for m in METRICS for a in configs
                      for b in configs]  # fmt: skip
    fragments += [ix.detail(r.run_id, r.prompt_id) for r in data.responses]
    rows = models_view.model_rows(data, view.table.configs)
    fragments += [models_view.models_html(rows), models_view.models_html(rows, hostile("request"))]
    fragments.append(models_view.hide_css(rows, hostile("request")))
    tables = drift_tables(conv, bootstrap=20, seed=0)
    runs = [run_id for run_id, _ in conv.runs]
    for t in tables.values():
        for scope in t.scopes:
            fragments += [drift_render.table_html(t, scope, runs)]
    ratings = drift_render.ratings_by_response(conv.rating_sets)
    fragments += [drift_render.transcript_html(c, ratings)
                  for convs in drift_render.conversations(conv).values() for c in convs]  # fmt: skip
    # What the request forms answer, and the Space's notice.
    fragments.append(request_model(store, hostile("request"), hostile("request")))
    fragments.append(_fields([("Model spec", hostile("request"))]))
    space_board = Board(1, ix, refused=((hostile("bundle"), hostile("problem")),),
                        problem=hostile("problem"))  # fmt: skip
    fragments.append(space_board.notice)
    for k, html in enumerate(fragments):
        _check(f"app fragment {k}", html, seen)
    # Each field a stranger wrote reads back whole somewhere (so each was really shown).
    assert seen == set(FIELDS)
