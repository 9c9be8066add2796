"""Times the reference iTar indexer on one fold; prints JSON for `cargo xtask bench taridx`.

  taridx_bench.py ROOT FOLD GLZN_CHECKOUT OUT.taridx

Runs what iTarDirectory.parse_folder does for one fold (parse_tar over the
sorted shards, finalize, save) and reports the seconds it took.
"""

import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "reference"))
from make_reference_fixtures import load_indexer  # noqa: E402


def main():
    root, fold, glzn, out = pathlib.Path(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3]), sys.argv[4]
    entry = load_indexer(glzn)
    shards = sorted(root.glob(f"{fold}_*.tar"))
    start = time.perf_counter()
    state = None
    for shard in shards:
        state = entry.parse_tar(shard, state=state)
    state = state.finalize()
    state.save(out)
    seconds = time.perf_counter() - start
    json.dump({"seconds": seconds, "rows": int(len(state.arr))}, sys.stdout)


if __name__ == "__main__":
    main()
