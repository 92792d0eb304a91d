"""The app's "Request a model" tab and its action: a public form, so every answer is escaped and
the public rules and a rate limit apply (:mod:`intima.service.public`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from markupsafe import Markup

from intima.core.errors import IntimaError
from intima.service.public import RateLimit


def request_model(
    store_path: Path | None,
    spec: str,
    requester: str,
    session: str = "",
    limit: RateLimit | None = None,
) -> Markup:
    """The form's action: queue a request; the answer is escaped HTML for the page. Public
    rules apply (:mod:`intima.service.public`): a Hub model or an allow-listed API model, and a
    rate limit per session and per hour."""
    if store_path is None:
        return Markup(
            '<p class="intima-error">Requests are off: the app was started without a store.</p>'
        )
    from intima.service.queue import add_request
    from intima.store import Store

    try:
        if limit is not None:
            limit.take(session or "anonymous")
        with Store.open(store_path) as store:
            rec = add_request(store, spec, requester.strip() or None, allow_urls=False)
    except IntimaError as exc:
        return Markup('<p class="intima-error" role="alert">Rejected: {}</p>').format(exc)
    if not rec.is_new and rec.status == "cancelled":
        return Markup(
            '<p class="intima-error" role="status">Not queued: {} was cancelled '
            "by the maintainers, and stays cancelled unless they reopen it.</p>"
        ).format(rec.spec)
    if not rec.is_new:
        return Markup('<p class="intima-ok">Already requested: {} (status {}).</p>').format(
            rec.spec, rec.status
        )
    return Markup('<p class="intima-ok">Queued request {} for {}.</p>').format(
        rec.request_id, rec.spec
    )


def request_tab(
    store_path: Path | None, closed: str | None, submit: Callable[[str, str, str], str] | None
) -> None:
    """The tab's parts, inside an open ``gr.Tab`` (``closed``: why requests are off, if so;
    ``submit``: the Space's own action, else :func:`request_model` on ``store_path``)."""
    import gradio as gr

    gr.Markdown(
        "Ask for a model to be benchmarked: a Hugging Face Hub model as "
        "`openai-compat:OWNER/NAME` (e.g. `openai-compat:Qwen/Qwen3-8B`), or a listed "
        "API model (e.g. `openai:gpt-4o-mini`). Duplicates are recognised; a few "
        "requests per hour per visitor."
    )
    if closed:
        note = Markup('<p class="intima-error" role="status">{}</p>').format(closed)
        gr.HTML(note, elem_id="req-closed")
    is_open = not closed
    spec = gr.Textbox(label="Model spec", elem_id="req-spec", interactive=is_open)
    requester = gr.Textbox(
        label="Your name or handle (optional)", elem_id="req-who", interactive=is_open
    )
    send = gr.Button("Request", elem_id="req-submit", interactive=is_open)
    result = gr.HTML("", elem_id="req-result")
    limit = RateLimit()

    def on_submit(s: str, w: str, request: gr.Request) -> str:
        session = request.session_hash or ""
        if submit is not None:
            return submit(s, w, session)
        return request_model(store_path, s, w, session, limit)

    # Gradio passes the request by the parameter's type; annotations here are strings.
    on_submit.__annotations__["request"] = gr.Request

    send.click(on_submit, [spec, requester], result)
