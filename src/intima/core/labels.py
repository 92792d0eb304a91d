"""How a configuration is named wherever it is shown: one function for the run's stored label
(``intima run``, hence the CLI tables and ``intima compare``) and for the board (the site, the
app and the Space), so a reader sees one name per configuration everywhere.

A name is the model, then the first words of the system prompt in quotes (a hash such as
``system 1742a6`` tells a reader nothing), then every generation setting that differs from the
defaults: ``openai-compat:smollm2 · "You are Juniper, a warm…" [temperature=0.2]``. The full
settings and the system prompt's hash go in the tooltip (:func:`config_title`). Labels are
untrusted text (a system prompt is anyone's): every view escapes them.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from intima.core.ids import content_id

#: The longest label a user gives a configuration or a judge (``--label``, a run file's
#: ``label``): a label names it in every table and chart, and a 100,000-character one made
#: ``board build`` spend minutes wrapping it.
MAX_LABEL_CHARS = 200
#: The longest name a published row may hold where names are shown (a run's label made from its
#: spec and settings, a model, a judge, a scorer): a spec of :data:`MAX_SPEC_CHARS`, a system
#: prompt's excerpt and every generation setting fit.
MAX_NAME_CHARS = 1_200
#: The longest model spec a configuration takes (provider, model and server URLs).
MAX_SPEC_CHARS = 1_000
#: How much of a system prompt a label quotes: enough words to recognise it, short enough for
#: a chart's margin.
EXCERPT_WORDS, EXCERPT_CHARS = 5, 26
#: The label the runner stored before readable names: ``model [system 1742a6, seed=1]``.
_OLD_SYSTEM = re.compile(r" \[system [0-9a-f]{6}(?:, (?P<rest>[^\]]*))?\]$")


def excerpt(system_prompt: str) -> str:
    """The first words of a system prompt, in quotes, with an ellipsis when cut."""
    words = system_prompt.split()
    shown = " ".join(words[:EXCERPT_WORDS])
    cut = len(words) > EXCERPT_WORDS or len(shown) > EXCERPT_CHARS
    if len(shown) > EXCERPT_CHARS:
        shown = shown[: EXCERPT_CHARS - 1].rstrip()
    return f'"{shown.rstrip(",.;:")}…"' if cut else f'"{shown}"'


def readable_label(
    model: str, system_prompt: str | None, settings: Mapping[str, Any], label: str | None = None
) -> str:
    """A configuration's name: a label its user gave wins; else the model, the system prompt's
    first words and ``settings`` (the generation settings that differ from the defaults)."""
    if label:
        return label
    name = model + (f" · {excerpt(system_prompt)}" if system_prompt else "")
    parts = [f"{k}={v}" for k, v in settings.items()]
    return name + (f" [{', '.join(parts)}]" if parts else "")


def config_title(model: str, system_prompt: str | None, generation: Mapping[str, Any]) -> str:
    """The tooltip: the model, the system prompt's hash and length, every setting given."""
    parts = [model]
    if system_prompt:
        parts.append(
            f"system prompt {content_id(system_prompt, length=6)} ({len(system_prompt):,} "
            "characters)"
        )
    parts += [f"{k}={v}" for k, v in sorted(generation.items()) if v is not None]
    return "; ".join(parts)


@dataclass(frozen=True)
class Named:
    """What the board knows of a configuration to name it."""

    key: str  # the run id
    label: str  # as stored with the run
    model: str
    system_prompt: str | None = None
    generation: Mapping[str, Any] = field(default_factory=dict)
    dataset: tuple[str, str | None, str] = ("", None, "")  # id, revision, sha256


def board_labels(configs: Sequence[Named]) -> dict[str, str]:
    """Per run id, its name on a board: stored labels in the old hash form read as
    :func:`readable_label`, and names that would be the same are told apart by what those
    configurations differ in: the model (two given one label), the settings, the system
    prompt's hash, the dataset; else (never two runs of one configuration and dataset, which
    the board shows as one) the run id."""
    names = {c.key: _readable(c) for c in configs}
    groups: dict[str, list[Named]] = defaultdict(list)
    for c in configs:
        groups[names[c.key]].append(c)
    for name, same in groups.items():
        if len(same) < 2:
            continue
        keys = sorted({k for c in same for k in c.generation})
        differing = [k for k in keys if len({repr(c.generation.get(k)) for c in same}) > 1]
        prompts = {c.system_prompt for c in same}
        models = {c.model for c in same}
        for c in same:
            extra = [c.model] if len(models) > 1 else []
            extra += [f"{k}={c.generation.get(k)}" for k in differing]
            if len(prompts) > 1 and c.system_prompt:
                extra.append(f"system {content_id(c.system_prompt, length=6)}")
            if where := _dataset_difference(c, same):
                extra.append(where)
            names[c.key] = f"{name} ({', '.join(extra) or 'run ' + c.key[:8]})"
    counts = Counter(names.values())
    return {k: v if counts[v] == 1 else f"{v} (run {k[:8]})" for k, v in names.items()}


def _dataset_difference(c: Named, same: Sequence[Named]) -> str:
    """How ``c``'s dataset differs from the others' of ``same``: "on <id>", else its revision,
    else its file's hash; "" when they share one dataset."""
    ids, revisions = {o.dataset[0] for o in same}, {o.dataset[1] for o in same}
    if len({o.dataset for o in same}) < 2:
        return ""
    dataset_id, revision, sha256 = c.dataset
    if len(ids) > 1:
        return f"on {dataset_id}"
    if len(revisions) > 1:
        return f"on {dataset_id} @ {(revision or 'unversioned')[:12]}"
    return f"on {dataset_id} sha256 {sha256[:8]}"


def _readable(c: Named) -> str:
    """The stored label, with an old ``[system <hash>, ...]`` suffix read as the prompt's
    first words (runs stored before readable names keep their other settings)."""
    m = _OLD_SYSTEM.search(c.label)
    if m is None or not c.system_prompt:
        return c.label
    rest = m.group("rest")
    head = c.label[: m.start()] + f" · {excerpt(c.system_prompt)}"
    return head + (f" [{rest}]" if rest else "")
