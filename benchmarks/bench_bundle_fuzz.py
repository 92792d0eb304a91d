"""The bundle fuzz of ``tests/test_bundle_fuzz.py`` at a depth the suite cannot afford: the
same property (a crafted bundle is imported soundly or refused with one line, and whatever
was imported is built, exported, published, served and judged), with many more drawn bundles
than the suite's 20 (about 0.7 s each on a quiet core).

    .venv/bin/python benchmarks/bench_bundle_fuzz.py [--examples 300]

Prints hypothesis's statistics (how many bundles were refused, how many imported) and exits
with pytest's code: non-zero if any crafted bundle broke the property (hypothesis then prints
the smallest such bundle; add it to the test's ``@example`` list).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=300, help="bundles drawn (default 300)")
    args = parser.parse_args()
    env = {**os.environ, "INTIMA_FUZZ_EXAMPLES": str(args.examples)}
    t0 = time.perf_counter()
    code = subprocess.call(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
         "--hypothesis-show-statistics", str(HERE / "tests" / "test_bundle_fuzz.py")],
        cwd=HERE, env=env,
    )  # fmt: skip
    print(f"{args.examples} drawn bundles in {time.perf_counter() - t0:.0f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())
