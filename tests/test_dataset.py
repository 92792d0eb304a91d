import collections
import json
from pathlib import Path

import pytest

from intima.core.errors import DatasetError
from intima.core.taxonomy import Dimension
from intima.dataset.loaders import load_prompts, prompt_id_for, split_glued
from intima.dataset.types import PromptSet

EXPECTED_SHA = "31b683f0592a88db078e9cd8f3b03eefbd59edeac14b7894a92894d1518eb136"


def test_default_is_the_papers_368_prompts(intima_jsonl: Path) -> None:
    ps = load_prompts(intima_jsonl)
    assert len(ps) == 368
    assert ps.info.sha256 == EXPECTED_SHA
    dims = collections.Counter(p.dimension for p in ps.prompts)
    assert dims == {
        Dimension.ASSISTANT_TRAITS: 143,
        Dimension.USER_VULNERABILITIES: 84,
        Dimension.RELATIONSHIP_INTIMACY: 93,
        Dimension.EMOTIONAL_INVESTMENT: 48,
    }
    by_model = collections.Counter(p.source_model for p in ps.prompts)
    assert by_model["Llama-3.1-8B-Instruct"] == 120
    assert by_model["Mistral-Small-24B-Instruct-2501"] == 124
    assert by_model["Qwen2.5-72B-Instruct"] == 124
    assert len({p.code for p in ps.prompts}) == 31


def test_memory_option_gives_380_under_its_own_id(intima_jsonl: Path) -> None:
    full = load_prompts(intima_jsonl, include_memory=True)
    assert len(full) == 380
    assert full.info.dataset_id.endswith(":full")
    assert sum(p.code == "memory" for p in full.prompts) == 12


def test_prompt_ids_are_stable_and_unique_even_for_duplicates(intima_jsonl: Path) -> None:
    a, b = load_prompts(intima_jsonl), load_prompts(intima_jsonl)
    assert [p.prompt_id for p in a.prompts] == [p.prompt_id for p in b.prompts]
    ids = [p.prompt_id for p in a.prompts]
    assert len(set(ids)) == 368
    assert sum(i.endswith("-2") for i in ids) == 4  # the 4 published duplicates
    assert a.fingerprint == b.fingerprint


def test_cleaned_variant_splits_glued_rows_and_drops_duplicates(intima_jsonl: Path) -> None:
    rows = [json.loads(line) for line in intima_jsonl.read_text().splitlines()]
    glued = [r for r in rows if len(split_glued(r["prompt"])) > 1]
    assert len(glued) == 5
    cleaned = load_prompts(intima_jsonl, cleaned=True)
    assert cleaned.info.dataset_id.endswith(":cleaned")
    texts = [(p.code, p.text) for p in cleaned.prompts]
    assert len(texts) == len(set(texts))
    assert not any(len(split_glued(t)) > 1 for _, t in texts)
    # The 10 new pieces minus the ones that duplicate existing rows.
    assert any(t.startswith("Your constant cheerfulness") for _, t in texts)


def test_split_glued_leaves_ages_and_single_numbers_alone() -> None:
    assert split_glued("I'm 15. I feel like nobody gets me.") == [
        "I'm 15. I feel like nobody gets me."
    ]
    assert split_glued("First thing. 2. Second thing. 3. Third.") == [
        "First thing.",
        "Second thing.",
        "Third.",
    ]


def test_demo_prompts_cover_every_code_twice_and_are_not_intima(intima_jsonl: Path) -> None:
    demo = load_prompts("demo")
    counts = collections.Counter(p.code for p in demo.prompts)
    assert len(counts) == 31 and min(counts.values()) >= 2
    assert demo.info.dataset_id == "intima-demo"
    real = {json.loads(line)["prompt"] for line in intima_jsonl.read_text().splitlines()}
    assert not any(p.text in real for p in demo.prompts)


@pytest.mark.parametrize(
    ("content", "suffix", "needle"),
    [
        ('{"code": "love", "prompt": "hi"}\n{"code": "love"\n', ".jsonl", "line 2: invalid JSON"),
        (
            '{"code": "love", "prompt": ""}\n{"code": "telepathy", "prompt": "x"}\n',
            ".jsonl",
            "row 1: missing or empty prompt; row 2: unknown code 'telepathy'",
        ),
        ("text,label\nhello,love\n", ".csv", "row 1: missing or empty prompt, code"),
        ("", ".jsonl", "empty"),
        (
            '{"id": "a", "code": "love", "prompt": "x"}\n{"id": "a", "code": "love", "prompt": "y"}\n',
            ".jsonl",
            "row 2: duplicate id 'a'",
        ),
        ("[1, 2]", ".json", "row 1: not an object"),
    ],
)
def test_bad_rows_are_rejected_naming_rows(
    tmp_path: Path, content: str, suffix: str, needle: str
) -> None:
    path = tmp_path / f"bad{suffix}"
    path.write_text(content)
    with pytest.raises(DatasetError) as err:
        load_prompts(path)
    assert needle in str(err.value)


def test_non_utf8_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "latin.jsonl"
    path.write_bytes('{"code": "love", "prompt": "caf\xe9"}\n'.encode("latin-1"))
    with pytest.raises(DatasetError, match="not valid UTF-8"):
        load_prompts(path)
    with pytest.raises(DatasetError, match="does not exist"):
        load_prompts(tmp_path / "nope.jsonl")


def test_csv_and_parquet_load_like_jsonl(tmp_path: Path, intima_jsonl: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [json.loads(line) for line in intima_jsonl.read_text().splitlines()][:20]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "x.parquet")
    import csv

    with (tmp_path / "x.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["code", "prompt", "model"])
        w.writeheader()
        w.writerows(rows)
    a, b = load_prompts(tmp_path / "x.parquet"), load_prompts(tmp_path / "x.csv")
    assert [p.prompt_id for p in a.prompts] == [p.prompt_id for p in b.prompts]
    assert a.prompts[0].prompt_id == prompt_id_for(
        rows[0]["code"], rows[0]["prompt"], rows[0]["model"]
    )


def _fake_hub_cache(cache: Path, source: Path, commit: str) -> None:
    repo = cache / "datasets--AI-companionship--INTIMA"
    snap = repo / "snapshots" / commit / "data"
    snap.mkdir(parents=True)
    (snap / "train.jsonl").write_bytes(source.read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)


def test_hub_loading_goes_through_the_hf_cache_offline(
    tmp_path: Path, intima_jsonl: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    _fake_hub_cache(tmp_path, intima_jsonl, commit)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    ps = load_prompts()
    assert len(ps) == 368
    assert ps.info.dataset_id == "AI-companionship/INTIMA"
    assert ps.info.revision == commit
    assert ps.info.sha256 == EXPECTED_SHA
    # An unknown revision cannot be resolved offline: a clear error, not a crash.
    with pytest.raises(DatasetError, match="Hugging Face Hub"):
        load_prompts(revision="v9")


def test_a_conversation_file_in_the_dev_set_shape_loads_and_runs(
    tmp_path: Path, dev_set: Path
) -> None:
    """Rows with `messages` (earlier turns, then the user turn to answer) are prompts whose id
    covers the whole conversation; generation sends every turn, in order."""
    from typing import Any, ClassVar

    from intima.core.config import GenerationSettings, ModelConfig
    from intima.generate import generate
    from intima.providers import register
    from intima.providers.base import Completion, Message, Model
    from intima.store import Store

    class Recorder(Model):
        seen: ClassVar[list[list[Message]]] = []

        async def generate(
            self,
            messages: list[Message],
            settings: GenerationSettings,
            *,
            json_schema: dict[str, Any] | None = None,
        ) -> Completion:
            Recorder.seen.append(list(messages))
            return Completion(text="ok", prompt_tokens=1, completion_tokens=1)

    rows = [json.loads(line) for line in dev_set.read_text().splitlines()[:4]]
    path = tmp_path / "conversations.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ps = load_prompts(path, include_memory=True)
    assert len(ps) == 4
    first = ps.prompts[0]
    assert first.text == rows[0]["messages"][-1]["content"]
    assert [t.content for t in first.context] == [m["content"] for m in rows[0]["messages"][:-1]]
    # Same final turn after other earlier turns: another prompt.
    assert first.prompt_id != prompt_id_for(first.code, first.text, None)
    register("recorder", Recorder)
    with Store.open(tmp_path / "s.db") as store:
        [s] = generate(store, ps, [ModelConfig(spec="recorder:x")])
        [stored] = [r for r in store.responses([s.run_id]) if r.prompt_id == first.prompt_id]
    assert s.generated == 4
    sent = next(m for m in Recorder.seen if m[-1].content == first.text)
    assert [m.content for m in sent] == [m["content"] for m in rows[0]["messages"]]
    assert [m.role for m in sent] == [m["role"] for m in rows[0]["messages"]]
    assert json.loads(stored.context or "[]") == rows[0]["messages"][:-1]


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_row_nested_too_deeply_is_one_error_naming_file_and_line(
    tmp_path: Path, suffix: str
) -> None:
    """40,000 levels of nesting made json raise RecursionError (a traceback), not a line."""
    good = json.dumps({"code": "love", "prompt": "A prompt written for this test."})
    deep = '{"code": "love", "prompt": "x", "extra": ' + "[" * 40_000 + "]" * 40_000 + "}"
    path = tmp_path / f"deep{suffix}"
    path.write_text(f"{good}\n{deep}\n" if suffix == ".jsonl" else f"[{good},\n{deep}]\n")
    with pytest.raises(DatasetError) as err:
        load_prompts(path)
    assert str(path) in str(err.value) and "line 2" in str(err.value)
    assert "nested too deeply" in str(err.value)


def test_a_prompt_set_indexes_and_slices_like_a_sequence() -> None:
    """`prompts[:5]` raised TypeError (issue 23.7)."""
    prompts = load_prompts("demo")
    head = prompts[:5]
    assert isinstance(head, PromptSet) and len(head) == 5 == head.info.n_prompts
    assert head.prompts == prompts.prompts[:5] and head.info.dataset_id == prompts.info.dataset_id
    assert head.fingerprint == prompts.first(5).fingerprint != prompts.fingerprint
    assert prompts[0] == prompts.prompts[0] and prompts[-1] == prompts.prompts[-1]
    assert [p.prompt_id for p in prompts[1:4]] == [p.prompt_id for p in prompts.prompts[1:4]]


def test_a_conversation_cell_nested_too_deeply_is_one_error_naming_the_row(tmp_path: Path) -> None:
    path = tmp_path / "deep.csv"
    deep = "[" * 40_000 + "]" * 40_000
    path.write_text(f'code,messages\nlove,"{deep}"\n')
    with pytest.raises(DatasetError) as err:
        load_prompts(path)
    assert str(path) in str(err.value) and "row 1: messages nested too deeply" in str(err.value)


def test_a_byte_order_mark_is_read_past_and_an_over_long_csv_cell_is_one_error(
    tmp_path: Path,
) -> None:
    """Files saved by spreadsheet tools start with a UTF-8 BOM: the CSV header read
    '\\ufeffcode' (every row 'missing code') and JSONL's first line was invalid JSON. A CSV cell
    over the csv module's limit raised _csv.Error (a traceback)."""
    rows = {".csv": "code,prompt\nlove,A prompt written for this test.\n",
            ".jsonl": '{"code": "love", "prompt": "A prompt written for this test."}\n'}  # fmt: skip
    for suffix, text in rows.items():
        path = tmp_path / f"bom{suffix}"
        path.write_bytes(b"\xef\xbb\xbf" + text.encode())
        assert [p.text for p in load_prompts(path)] == ["A prompt written for this test."]
    long = tmp_path / "long.csv"
    long.write_text('code,prompt\nlove,short\nlove,"' + "x" * 200_000 + '"\n')
    with pytest.raises(DatasetError) as err:
        load_prompts(long)
    assert str(long) in str(err.value) and "line 3" in str(err.value)


@pytest.mark.parametrize(
    ("given", "says"),
    [("dmeo", "; did you mean --dataset demo?"), ("hbu", "; did you mean --dataset hub?"),
     ("nothing-like-it", " (give a file or folder, 'hub' for INTIMA on the Hub, or 'demo')")],
)  # fmt: skip
def test_a_mistyped_source_name_is_named_back(given: str, says: str) -> None:
    """`--dataset dmeo` said only that the path does not exist (issue 23.8)."""
    with pytest.raises(DatasetError) as err:
        load_prompts(given)
    assert str(err.value) == f"dataset path {given} does not exist{says}"


def test_a_local_copy_of_the_published_file_is_filed_as_intima_in_any_format_and_order(
    tmp_path: Path, intima_jsonl: Path
) -> None:
    """The README's offline path (``--dataset path/to/INTIMA.jsonl``) is the benchmark, not
    custom prompts: recognised by content (the rows' prompt ids), as Parquet with its rows
    reversed too; one changed row makes it custom prompts again."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from intima.leaderboard.wording import board_title

    rows = [json.loads(line) for line in intima_jsonl.read_text().splitlines()]
    pq.write_table(pa.Table.from_pylist(rows[::-1]), tmp_path / "copy.parquet")
    for source in (intima_jsonl, tmp_path / "copy.parquet"):
        ps = load_prompts(source)
        assert ps.info.dataset_id == "AI-companionship/INTIMA" and len(ps) == 368
        assert ps.info.source == str(source.resolve()) and ps.info.revision is None
    full = load_prompts(tmp_path / "copy.parquet", include_memory=True).info.dataset_id
    assert full == "AI-companionship/INTIMA:full"
    assert board_title([full]) == board_title(["AI-companionship/INTIMA"])
    assert board_title([full]) == "INTIMA companionship leaderboard"

    edited = [dict(rows[0], prompt=rows[0]["prompt"] + " Please."), *rows[1:]]
    (tmp_path / "edited.jsonl").write_text("\n".join(json.dumps(r) for r in edited))
    custom = load_prompts(tmp_path / "edited.jsonl").info.dataset_id
    assert custom == "file:edited.jsonl"
    assert "custom prompts" in board_title([custom])
    assert "custom prompts" in board_title([custom, "AI-companionship/INTIMA"])
