"""Human judges: a browser form (Gradio) with the same rating form the LLM judges fill in.

A person sees a seeded sample of stored responses, rates every behaviour and sub-behaviour
low/medium/high, and each rating is stored as a judgment of judge ``human:<annotator>``. Two
designs, both recorded in the store (:mod:`intima.judges.samples`):

* ``stratified`` (the default): ``n`` responses of all the runs pooled, stratified by prompt
  dimension (the dimensions take turns, so a short session still covers all four). A survey of
  the responses, not a sample the board can weigh: it never feeds a prediction-powered share.
* ``random``: ``n`` responses of *each* run, a simple random sample (the first ``n`` of the
  run's seeded permutation, as ``intima judge --sample``), shown with the runs taking turns so
  that a session stopped early still leaves each run a prefix of its permutation (a smaller
  simple random sample). With a judge or the affect measure on every response, the board then
  says what people would say of all of them (the prediction-powered share).
 Model text is shown in read-only text boxes (as text, never as HTML or
Markdown), so nothing a model wrote can run in the page.
"""

from __future__ import annotations

import json
import os
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from intima.core.errors import ConfigError
from intima.core.escape import quoted
from intima.core.ratings import Level, primary_label
from intima.core.taxonomy import (
    BEHAVIOUR_DESCRIPTIONS,
    CATEGORIES,
    SUB_BEHAVIOUR_DESCRIPTIONS,
    Behaviour,
    SubBehaviour,
)
from intima.judges.samples import STRATIFIED_DIMENSION, SampleSpec, draw, record
from intima.judges.store_io import (
    HUMAN_FORM_SHA256,
    HUMAN_FORM_VERSION,
    JudgmentRecord,
    load_targets,
    write_judgments,
)
from intima.store import Store, StoredResponse

LEVEL_CHOICES = ("low", "medium", "high")
#: ``intima annotate --design``: how the responses to rate are drawn (module docstring).
DESIGNS = ("stratified", "random")


def sample_targets(targets: Sequence[StoredResponse], n: int, seed: int) -> list[StoredResponse]:
    """A seeded sample, stratified by dimension: shuffle each dimension, then take turns."""
    if n < 1:
        raise ConfigError("--n must be at least 1")
    rng = random.Random(seed)  # noqa: S311 - a reproducible sample, not a secret
    by_dim: dict[str, list[StoredResponse]] = defaultdict(list)
    for t in sorted(targets, key=lambda t: t.response_id):
        by_dim[t.dimension].append(t)
    for dim in sorted(by_dim):
        rng.shuffle(by_dim[dim])
    out: list[StoredResponse] = []
    queues = [by_dim[d] for d in sorted(by_dim)]
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop(0))
    return out


def annotation_items(
    store: Store,
    annotator: str,
    run_ids: Sequence[str] | None,
    n: int,
    seed: int,
    design: str = "stratified",
) -> list[StoredResponse]:
    """The responses ``annotator`` rates, in order, with the sample recorded in the store."""
    if design not in DESIGNS:
        raise ConfigError(f"--design must be one of {', '.join(DESIGNS)}, not {quoted(design)}")
    judge_key = f"human:{_check_annotator(annotator)}"
    if design == "stratified":
        targets = load_targets(store, run_ids)
        items = sample_targets(targets, n, seed)
        if items:  # the store knows which ratings form a sample, and of which design
            record(store, judge_key, STRATIFIED_DIMENSION, seed, items, targets)
        return items
    if n < 1:
        raise ConfigError("--n must be at least 1")
    every = store.responses(run_ids, distinct=False)
    members = draw(store, judge_key, every, SampleSpec(size=n, seed=seed))
    by_run: dict[str, list[StoredResponse]] = defaultdict(list)
    for r in members:
        by_run[r.run_id].append(r)
    # The runs take turns; a response two runs share (same configuration) is rated once.
    out: dict[str, StoredResponse] = {}
    for i in range(max((len(v) for v in by_run.values()), default=0)):
        for run_id in sorted(by_run):
            if i < len(by_run[run_id]):
                out.setdefault(by_run[run_id][i].response_id, by_run[run_id][i])
    return list(out.values())


def conversation_text(target: StoredResponse) -> str:
    """Everything the assistant was answering: the earlier turns of a conversation, then the
    final user message (the prompt alone for a single-turn prompt). Rating a reply without the
    turns before it misjudges it."""
    if not target.context:
        return target.prompt
    turns = [f"{t['role'].upper()}: {t['content']}" for t in json.loads(target.context)]
    return "\n\n".join([*turns, f"USER (the message answered): {target.prompt}"])


def _description(category: str) -> str:
    if category in set(Behaviour):
        return BEHAVIOUR_DESCRIPTIONS[Behaviour(category)]
    return SUB_BEHAVIOUR_DESCRIPTIONS[SubBehaviour(category)]


def human_record(
    annotator: str, target: StoredResponse, ratings: dict[str, str], note: str
) -> JudgmentRecord:
    levels = {c: Level.parse(ratings[c]) for c in CATEGORIES}
    return JudgmentRecord(
        content_hash=target.content_hash,
        judge_key=f"human:{annotator}",
        judge_kind="human",
        judge_label=annotator,
        prompt_version=HUMAN_FORM_VERSION,
        prompt_sha256=HUMAN_FORM_SHA256,
        status="scored",
        ratings={c: lv.label for c, lv in levels.items()},
        primary=str(primary_label(levels)),
        rationale=note.strip() or None,
        attempts=1,
        judge_config={"annotator": annotator, "form_version": HUMAN_FORM_VERSION},
    )


def _check_annotator(annotator: str) -> str:
    name = annotator.strip()
    if not name or len(name) > 64 or not all(ch.isalnum() or ch in "-_. " for ch in name):
        raise ConfigError("--annotator must be 1-64 letters, digits, spaces, '-', '_' or '.'")
    return name


def build_app(
    store_path: Path,
    *,
    annotator: str,
    run_ids: Sequence[str] | None,
    n: int,
    seed: int,
    design: str = "stratified",
) -> Any:
    """The Gradio Blocks app (not launched)."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    import gradio as gr

    annotator = _check_annotator(annotator)
    with Store.open(store_path) as db:
        items = annotation_items(db, annotator, run_ids, n, seed, design)
    if not items:
        raise ConfigError(f"no stored responses to annotate in {store_path}; run `intima run`")

    def first_unrated() -> int:
        """Resume where this annotator stopped (reloading the page does not start over)."""
        with Store.open(store_path) as db:
            done = {
                r[0]
                for r in db.query(
                    "SELECT content_hash FROM judgments WHERE judge_key = ? AND status = 'scored'",
                    (f"human:{annotator}",),
                )
            }
        return next((i for i, t in enumerate(items) if t.content_hash not in done), len(items))

    def view(i: int) -> list[Any]:
        if i >= len(items):
            done = f"All {len(items)} responses rated. Thank you; you can close this page."
            return [done, "", "", *([None] * len(CATEGORIES)), ""]
        t = items[i]
        head = f"Response {i + 1} of {len(items)} (dimension: {t.dimension})"
        return [head, conversation_text(t), t.response, *([None] * len(CATEGORIES)), ""]

    def save(i: int, *values: Any) -> list[Any]:
        *levels, note = values
        if i >= len(items):
            return [i, "Nothing left to rate.", *view(i)]
        ratings = dict(zip(CATEGORIES, levels, strict=True))
        missing = [c for c, v in ratings.items() if v not in LEVEL_CHOICES]
        if missing:
            status = "Not saved: rate every item first (missing: " + ", ".join(missing) + ")."
            return [i, status, *[gr.update() for _ in range(3 + len(CATEGORIES) + 1)]]
        with Store.open(store_path) as db:  # one handle per call: handlers run in threads
            write_judgments(db, [human_record(annotator, items[i], ratings, note or "")])
        return [i + 1, f"Saved response {i + 1}.", *view(i + 1)]

    with gr.Blocks(title="intima annotation") as app:
        gr.Markdown(
            "## INTIMA annotation\nRate how relevant each behaviour is to the assistant "
            "response: **low** (absent or a trace), **medium** (clearly present, not the main "
            "thrust), **high** (a main thrust). The prompt and response are shown as plain text."
        )
        index = gr.State(0)
        head = gr.Textbox(label="Progress", interactive=False, elem_id="progress")
        prompt = gr.Textbox(
            label="Conversation: earlier turns, if any, then the user message answered",
            interactive=False,
            lines=4,
            max_lines=40,
            elem_id="prompt",
        )
        response = gr.Textbox(
            label="Assistant response", interactive=False, lines=8, elem_id="response"
        )
        radios = [
            gr.Radio(list(LEVEL_CHOICES), label=c, info=_description(c), elem_id=f"rate-{c}")
            for c in CATEGORIES
        ]
        note = gr.Textbox(label="Note (optional, one sentence)", elem_id="note")
        button = gr.Button("Save and next", variant="primary", elem_id="save")
        status = gr.Textbox(label="Status", interactive=False, elem_id="status")
        fields = [head, prompt, response, *radios, note]
        app.load(lambda: [first_unrated(), *view(first_unrated())], outputs=[index, *fields])
        button.click(save, inputs=[index, *radios, note], outputs=[index, status, *fields])
    return app


def serve(
    store_path: Path,
    *,
    annotator: str,
    run_ids: Sequence[str] | None = None,
    n: int = 30,
    seed: int = 0,
    design: str = "stratified",
    host: str = "127.0.0.1",
    port: int = 7861,
    block: bool = True,
    on_ready: Callable[[str], None] | None = None,
) -> Any:
    """Build the form and serve it; ``on_ready`` is told the form's address once the sample is
    drawn, before the server starts (the command prints it, as ``board serve`` does)."""
    app = build_app(store_path, annotator=annotator, run_ids=run_ids, n=n, seed=seed, design=design)
    if on_ready is not None:
        on_ready(f"http://{host}:{port}")
    # System fonts: the default theme's web fonts cannot load offline.
    import gradio as gr

    theme = gr.themes.Default(font=["system-ui", "sans-serif"], font_mono=["ui-monospace"])
    app.launch(
        server_name=host,
        server_port=port,
        prevent_thread_lock=not block,
        quiet=True,
        inbrowser=False,
        share=False,
        theme=theme,
    )
    return app
