"""The static site's data files (``data/<key>.js``): each a script holding one body as
gzipped JSON in base64, written once by the build and read back by the page and the tests."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import orjson


def chunk_file(folder: Path, key: str, body: Any) -> None:
    """``<folder>/<key>.js``: one call of ``window.intimaChunk`` (the one loader of the site's
    scripts, ``board.js``, which ``drift.js`` uses too) with ``body`` as gzipped JSON in
    base64. The fragments repeat their markup row after row, so gzip takes the benchmark
    board's response files from 60 MB to under 5 MB; base64 in a script (not a fetched .gz) keeps
    the site working from file:// and from any static host, and the page inflates it with
    the browser's own ``DecompressionStream``. ``mtime=0``: the same board writes the same
    bytes. :func:`read_chunk` reads one back."""
    packed = base64.b64encode(gzip.compress(chunk_json(body), CHUNK_GZIP_LEVEL, mtime=0))
    (folder / f"{key}.js").write_bytes(b'window.intimaChunk("%s","%s");\n' % (key.encode(), packed))


#: gzip's level for the data files. On the benchmark's board (bench_board.py) level 1 packs
#: the fragments 17 to 1 in 6 ms of CPU a megabyte, level 6 25 to 1 in 16 ms: the site is
#: far under its size target either way, and the build's time is the tighter one.
CHUNK_GZIP_LEVEL = 1


def chunk_json(body: Any) -> bytes:
    """``body`` as compact JSON in UTF-8 (what the page's ``Response.text()`` decodes): by
    orjson, which writes the benchmark board's 100 MB of fragments six times faster than
    ``json``; by ``json`` (its non-ASCII as escapes, read the same) what orjson refuses, a
    lone surrogate (which a store cannot hold) or an integer past 64 bits."""
    try:
        return orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
    except orjson.JSONEncodeError:
        return json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def read_chunk(path: Path) -> Any:
    """The body of one of the site's ``data/<key>.js`` files, as :func:`chunk_file` wrote it."""
    text = path.read_text("ascii")
    packed = text[text.index(',"') + 2 : text.rindex('")')]
    return json.loads(gzip.decompress(base64.b64decode(packed)))
