"""``intima worker``'s own options, declared once here so the command stays a list of them:
how the worker takes requests from the queue, what it runs them with, and where their results
go. The server options are :mod:`intima.cli._serve`'s, the judges' :mod:`intima.cli.judge`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from intima.cli._params import max_cost_option, nonempty

# Taking requests from the queue.
OnceOpt = Annotated[bool, typer.Option(help="Process one request, then exit.")]
DrainOpt = Annotated[
    bool, typer.Option(help="Exit when nothing is pending or running (else wait for more).")
]
LeaseOpt = Annotated[
    float,
    typer.Option(
        min=1.0, max=86400.0, help="Seconds a claim holds a request; renewed while working."
    ),
]
PollOpt = Annotated[
    float, typer.Option(min=0.01, max=3600.0, help="Seconds between looks at an empty queue.")
]
MaxAttemptsOpt = Annotated[
    int, typer.Option(min=1, max=100, help="Give up on a request after N claims.")
]
GiveUpAfterOpt = Annotated[
    float,
    typer.Option(
        min=0.0,
        max=86400.0,
        help="With --drain: seconds the queue may stay unreachable before the worker stops "
        "with the reason (exit 2).",
    ),
]

# What each request is run with.
WorkerJudgeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--judge",
        "-j",
        parser=nonempty,
        help="Judge model spec PROVIDER[:MODEL][@URL,...]; repeatable (default: no judge).",
    ),
]
ScoreOpt = Annotated[bool, typer.Option(help="Also score with the offline affect measure.")]
WorkerDatasetOpt = Annotated[
    Path | None,
    typer.Option(
        exists=True,
        help="Local copy of INTIMA (file or folder) for 'hub' requests (default: the Hub).",
    ),
]
SmokeLimitOpt = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Smoke test: run only the first N prompts of each request, then give it back "
        "to the queue for a full run (never finished, never published; default: all).",
    ),
]
WorkerBaseUrlOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--base-url",
        parser=nonempty,
        help="Server for requests that name no server; repeatable (default: none).",
    ),
]
WorkerConcurrencyOpt = Annotated[
    int | None,
    typer.Option(
        min=1,
        max=4096,
        help="Requests in flight per model and per judge on this machine (default: the "
        "provider's).",
    ),
]
WorkerMaxRetriesOpt = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=50,
        help="Retries per prompt and per judge request (default: the request's, 6).",
    ),
]
WorkerTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        min=0.1,
        max=86400.0,
        help="Seconds before a request is retried (default: the request's; judges 120).",
    ),
]

# Where the results go, and what they may cost.
ResultsOpt = Annotated[
    str | None,
    typer.Option(
        parser=nonempty,
        help="Publish each finished request's results bundle here: a folder (each bundle in "
        "its bundles/BUNDLE_ID, as in a results repo) or hf://datasets/OWNER/NAME (default: "
        "keep them in the store).",
    ),
]
WorkerMaxCostOpt = Annotated[
    float | None,
    max_cost_option(
        " over every request this worker runs, plus one call's worst case, held as `run "
        "--max-cost` holds it; a request for a model with no price fails; once spent, the "
        "request in hand goes back to the queue and the worker stops"
    ),
]
