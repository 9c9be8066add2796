"""Tar shards for the TARIDX tests, written with Python's tarfile.

  make_shards.py flat OUT_DIR     the flat USTAR folds the golden indexes were made from
  make_shards.py bench OUT_DIR SAMPLES SHARDS
                                  fold `bench`: SAMPLES samples of jpg (1000 bytes), json and
                                  cls, split evenly over SHARDS shards (3 members a sample)
  make_shards.py variety OUT_DIR  USTAR, GNU and PAX shards with long and non-ASCII names,
                                  directories, empty and 512-multiple payloads; writes
                                  OUT_DIR/manifest.json: per shard, tarfile's regular
                                  members as [name, offset_data, size]

Everything is deterministic: fixed mtime, mode, owner and payload bytes.
"""

import io
import json
import pathlib
import sys
import tarfile


def payload(name, size):
    seed = sum(name.encode())
    return bytes((seed + i * 31) % 251 for i in range(size))


def add(tar, name, size=None, data=None, kind=tarfile.REGTYPE):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mtime = 1_700_000_000
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    info.uname = info.gname = "binfmt"
    if kind == tarfile.REGTYPE:
        data = payload(name, size) if data is None else data
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    else:
        tar.addfile(info)


def write(path, members, fmt=tarfile.USTAR_FORMAT):
    with tarfile.open(path, "w", format=fmt) as tar:
        for member in members:
            add(tar, *member)


def flat(out):
    """Fold `golden`: samples of jpg/json/cls, a stem split across shards,
    upper-case and multi-dot extensions, a member without extension.
    Fold `mixed`: the same stems interleaved, so rows are not contiguous."""
    golden = [
        [("s/000001.jpg", 700), ("s/000001.json", 40), ("s/000001.cls", 1),
         ("s/000002.JPG", 512), ("s/000002.json", 41), ("s/000002.cls", 0),
         ("s/000003.jpg", 1024), ("s/000003.json", 13)],
        [("s/000003.cls", 2), ("s/000004.seg.mask.PNG", 300), ("s/000004.jpg", 3000),
         ("s/000004.json", 7), ("s/000005.jpg", 1), ("s/README", 20)],
        [("s/000006.tar.gz", 900), ("s/000006.json", 5), ("s/000007.Json", 6)],
    ]
    mixed = [
        [("a.jpg", 10), ("b.jpg", 20), ("a.json", 3), ("c.jpg", 5)],
        [("b.json", 4), ("c.json", 6), ("a.cls", 1), ("b.cls", 1), ("c.cls", 1)],
    ]
    for fold, shards in (("golden", golden), ("mixed", mixed)):
        for i, members in enumerate(shards):
            write(out / f"{fold}_{i:04d}.tar", members)


def variety(out):
    long_dir = "very/long/directory/name/" * 5
    shards = {
        "ustar_0000.tar": (tarfile.USTAR_FORMAT, [
            ("dir", None, None, tarfile.DIRTYPE),
            ("dir/empty.txt", 0),
            ("dir/one.block.BIN", 512),
            ("dir/two.blocks.bin", 1024),
            (long_dir + "prefixed.jpg", 33),
            ("split/across.jpg", 64),
        ]),
        "gnu_0001.tar": (tarfile.GNU_FORMAT, [
            ("split/across.json", 9),
            ("g", None, None, tarfile.DIRTYPE),
            (long_dir + long_dir + "gnu_long_name.json", 77),
            ("g/plain.JPEG", 1500),
        ]),
        "pax_0002.tar": (tarfile.PAX_FORMAT, [
            ("p", None, None, tarfile.DIRTYPE),
            ("p/caf\u00e9/\u65e5\u672c.txt", 12),
            (long_dir + long_dir + "pax_long.tar.GZ", 513),
            ("p/empty", 0),
        ]),
    }
    manifest = {}
    for name, (fmt, members) in shards.items():
        path = out / name
        write(path, members, fmt)
        with tarfile.open(path) as tar:
            manifest[name] = [[m.name, m.offset_data, m.size] for m in tar.getmembers() if m.isreg()]
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")


def bench(out, samples, shards):
    jpg, per_shard = bytes(range(256)) * 3 + bytes(232), -(-samples // shards)
    for shard in range(shards):
        with tarfile.open(out / f"bench_{shard:04d}.tar", "w", format=tarfile.USTAR_FORMAT) as tar:
            for sample in range(shard * per_shard, min(samples, (shard + 1) * per_shard)):
                stem = f"shard{shard:02d}/{sample:08d}"
                add(tar, stem + ".jpg", data=jpg)
                add(tar, stem + ".json", data=b'{"label": %d}' % (sample % 1000))
                add(tar, stem + ".cls", data=b"%d" % (sample % 10))


if __name__ == "__main__":
    mode, out = sys.argv[1], pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    if mode == "bench":
        bench(out, int(sys.argv[3]), int(sys.argv[4]))
    else:
        {"flat": flat, "variety": variety}[mode](out)
