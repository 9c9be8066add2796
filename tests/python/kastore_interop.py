"""The Python side of the KAST interop tests.

  kastore_interop.py write SPEC.json OUT.kas ENGINE   dump the arrays in SPEC with kastore.dump
  kastore_interop.py read FILE.kas READ_ALL           print what kastore.load sees, as JSON

SPEC.json is a list of [key, dtype, hex of the little-endian bytes]; `read`
prints the same shape, in the store's key order.
"""

import json
import sys

import kastore
import numpy as np


def write(spec_path, out_path, engine):
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    data = {key: np.frombuffer(bytes.fromhex(data), dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype) for key, dtype, data in spec}
    kastore.dump(data, out_path, engine=engine)


def read(path, read_all):
    with kastore.load(path, read_all=read_all == "1") as store:
        out = []
        for key in store:
            array = store[key]
            out.append([key, str(array.dtype), array.astype(array.dtype.newbyteorder("<")).tobytes().hex()])
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"write": write, "read": read}[command](*args)
