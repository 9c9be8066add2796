"""webdataset's side of the TARIDX interop tests.

    write DIR PATTERN COUNT MAXCOUNT [plain]
                                       ShardWriter writes COUNT samples into
                                       DIR/PATTERN (e.g. src_%04d.tar) and
                                       DIR/samples.json lists them; "plain":
                                       short ASCII keys only, integer mtime
                                       (no pax headers)
    read DIR GLOB OUT.json             WebDataset reads the shards DIR/GLOB
                                       (sorted) back: OUT.json lists each
                                       shard's samples
    pack TREE COUNT                    writes COUNT samples as files
                                       TREE/KEY.EXT, and TREE.json lists them

Samples are {"__key__": key, ext: hex(bytes), ...}. Keys include
directories, long paths (pax `path` records) and non-ASCII names.
"""

import glob
import json
import os
import sys

import webdataset as wds


def samples(count, plain=False):
    out = []
    for i in range(count):
        if plain:
            key = f"{'cat' if i % 2 else 'dog'}/{i:05d}"
        elif i % 10 == 3:
            key = "deep/" * 30 + f"long{i:04d}"
        elif i % 10 == 7:
            key = f"caf\u00e9/\u65e5\u672c{i:04d}"
        else:
            key = f"{'cat' if i % 2 else 'dog'}/{i:05d}"
        sample = {
            "__key__": key,
            "cls": str(i % 10).encode(),
            "jpg": bytes((i + j) % 256 for j in range(100 + 37 * (i % 13))),
        }
        if i % 3 == 0:
            sample["json"] = json.dumps({"i": i}).encode()
        out.append(sample)
    return out


def as_json(sample):
    return {k: (v if k == "__key__" else v.hex()) for k, v in sample.items()}


def write(out_dir, pattern, count, maxcount, plain=False):
    os.makedirs(out_dir, exist_ok=True)
    all_samples = samples(count, plain)
    extra = {"mtime": 1700000000} if plain else {}
    with wds.ShardWriter(os.path.join(out_dir, pattern), maxcount=maxcount, verbose=0, **extra) as sink:
        for sample in all_samples:
            sink.write(sample)
    with open(os.path.join(out_dir, "samples.json"), "w", encoding="utf-8") as f:
        json.dump([as_json(s) for s in all_samples], f, ensure_ascii=False)


def read(directory, pattern, out):
    shards = []
    for url in sorted(glob.glob(os.path.join(directory, pattern))):
        dataset = wds.WebDataset(url, shardshuffle=False, empty_check=False)
        shard = []
        for sample in dataset:
            shard.append({k: (v if k == "__key__" else v.hex())
                          for k, v in sample.items() if not k.startswith("__") or k == "__key__"})
        shards.append({"url": os.path.basename(url), "samples": shard})
    with open(out, "w", encoding="utf-8") as f:
        json.dump(shards, f, ensure_ascii=False)


def pack(tree, count):
    all_samples = samples(count)
    for sample in all_samples:
        for ext, data in sample.items():
            if ext == "__key__":
                continue
            path = os.path.join(tree, f"{sample['__key__']}.{ext}")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
    with open(tree + ".json", "w", encoding="utf-8") as f:
        json.dump([as_json(s) for s in all_samples], f, ensure_ascii=False)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "write":
        write(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6:] == ["plain"])
    elif mode == "read":
        read(sys.argv[2], sys.argv[3], sys.argv[4])
    elif mode == "pack":
        pack(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(f"unknown mode {mode}")
