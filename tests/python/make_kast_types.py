"""Writes the kastore project's standard valid files with the real
`kastore` package: all_types_N_elements.kas (N = 0..9), ten keys named
after their dtype, each holding 0..N-1. Usage: python make_kast_types.py DIR
"""

import os
import sys

import numpy as np

import kastore

DTYPES = [
    "int8", "uint8", "int16", "uint16", "uint32",
    "int32", "uint64", "int64", "float32", "float64",
]

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for n in range(10):
    data = {dtype: np.arange(n, dtype=dtype) for dtype in DTYPES}
    kastore.dump(data, os.path.join(out, f"all_types_{n}_elements.kas"))
