"""``intima compare A B``: the board's paired numbers in the terminal, and one-line errors."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import invoke_cli
from intima.results.data import load_board
from intima.results.paired import PairedBoard
from intima.store import Store
from synthetic import synthetic_board, write_store


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("compare") / "store.db"
    with Store.open(path) as store:
        write_store(store, synthetic_board(3, 62, 2, seed=4))
    return path


def test_compare_prints_the_paired_difference_the_board_shows(store_path: Path) -> None:
    res = invoke_cli(
        "compare", "synthetic-0", "synthetic-2", "--scorer", "panel", "--bootstrap", "200",
        "--store", str(store_path),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    with Store.open(store_path) as store:
        data = load_board(store)
    ids = {r.label: r.run_id for r in data.runs}
    pb = PairedBoard(data.infos(), data.rating_sets, bootstrap=200, seed=0)
    d = pb.difference("panel", ids["synthetic-0"], ids["synthetic-2"], "overall", "reinforcing")
    assert d.diff is not None and d.lo is not None and d.hi is not None and d.mde is not None
    line = next(ln for ln in res.stdout.splitlines() if "Overall" in ln)
    assert f"{100 * d.diff:+.1f} [{100 * d.lo:+.1f}, {100 * d.hi:+.1f}]" in line
    assert f"{100 * d.mde:.1f}" in line and str(d.n_common) in line
    assert ("different" if d.different else "no detectable difference") in line
    assert "smallest detectable" in res.stdout.lower() or "smallest" in res.stdout
    # Overall and the four dimensions; --by-code adds the codes.
    assert len([ln for ln in res.stdout.splitlines() if re.search(r"\d+\.\d% \[", ln)]) == 5
    by_code = invoke_cli(
        "compare", "synthetic-0", "synthetic-2", "--by-code", "--bootstrap", "200",
        "--store", str(store_path),
    )  # fmt: skip
    assert by_code.returncode == 0 and "code:" in by_code.stdout


def test_compare_refuses_unknown_names_in_one_line(store_path: Path) -> None:
    res = invoke_cli("compare", "synthetic-0", "no-such-model", "--store", str(store_path))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "no configuration 'no-such-model' on the board" in res.stderr
    assert "synthetic-0, synthetic-1, synthetic-2" in res.stderr
    res = invoke_cli("compare", "synthetic-0", "synthetic-1", "--scorer", "nobody",
                     "--store", str(store_path))  # fmt: skip
    assert res.returncode == 2 and "--scorer 'nobody'" in res.stderr
    res = invoke_cli("compare", "synthetic-0", "synthetic-1", "--metric", "kindness",
                     "--store", str(store_path))  # fmt: skip
    assert res.returncode == 2 and "--metric 'kindness' is not a rate" in res.stderr
    res = invoke_cli("compare", "a", "b", "--store", str(store_path.parent / "missing.db"))
    assert res.returncode == 2 and "no store at" in res.stderr


def test_compare_and_the_pages_round_a_number_once_and_alike() -> None:
    """Issue 40: a smallest detectable difference of 0.48949 read 49.0 on the site (rounded to
    ten-thousandths, then to tenths) and 48.9 in ``compare``; both now take one path, which
    rounds once: 48.9. Under the minimum of judged pairs: no number, no verdict (issue 39)."""
    from intima.leaderboard.compare_view import difference_texts, pair_columns
    from intima.leaderboard.tenths import tenth_array
    from intima.results.paired import Difference

    def site_cells(*numbers: float) -> tuple[str, ...]:
        """One pair's slots as the site's files fill them (rounded once to tenths)."""
        tenths = (tenth_array(np.array([x])) for x in numbers)
        return tuple(c[0] for c in pair_columns(*tenths, np.array([True]), np.array([40])))

    d = Difference("a", "b", 0.12345, 0.0123, 0.23451, 0.1, 0.48949, True, 40, 0.2, 0.32345)
    assert difference_texts(d) == ("+12.3", " [+1.2, +23.5]", "48.9", "different", "40")
    cells = site_cells(d.diff, d.lo, d.hi, d.mde)
    assert cells[:3] + cells[4:] == ("+12.3", " [+1.2, +23.5]", "48.9", "40")
    # A and B swapped read as each other's negation.
    swapped = site_cells(-d.diff, -d.hi, -d.lo, d.mde)
    assert swapped[:2] == ("-12.3", " [-23.5, -1.2]")
    # No detectable difference above 100 points is ever shown.
    wide = d._replace(mde=1.679)
    assert difference_texts(wide)[2] == "over 100"
    few = d._replace(n_common=9)  # the documented minimum is 10 judged pairs
    assert difference_texts(few) == ("–", "", "–", "too few judged pairs", "9")
