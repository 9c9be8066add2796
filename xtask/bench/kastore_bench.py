"""Times Python kastore on one file; prints JSON for `cargo xtask bench kast`.

  kastore_bench.py FILE REPEATS [ENGINE]

open:  kastore.load(FILE, read_all=True, engine=ENGINE) (ENGINE: "python", the default, or "c")
touch: every array fetched and summed as bytes (numpy)
Each is the median of REPEATS runs.
"""

import json
import statistics
import sys
import time

import kastore
import numpy as np


def main():
    path, repeats = sys.argv[1], int(sys.argv[2])
    engine = sys.argv[3] if len(sys.argv) > 3 else kastore.PY_ENGINE
    opens, touches, total = [], [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        store = kastore.load(path, read_all=True, engine=engine)
        opened = time.perf_counter()
        total = 0
        for key in store:
            total += int(store[key].view(np.uint8).sum(dtype=np.uint64))
        touched = time.perf_counter()
        if hasattr(store, "close"):  # the C engine returns a plain dict
            store.close()
        opens.append(opened - start)
        touches.append(touched - opened)
    json.dump({"open": statistics.median(opens), "touch": statistics.median(touches), "checksum": total}, sys.stdout)


if __name__ == "__main__":
    main()
