"""The other tar indexes' side of the TARIDX interop tests.

    tarwriter OUT.tar MTIME|float      webdataset's TarWriter writes samples a
                                       (cls "1", jpg 4 bytes) and b (cls "1",
                                       jpg 6 bytes): MTIME an int (no pax
                                       headers) or "float" (a pax header per
                                       member, webdataset's default)
    wids LIST.json OUT.json            wids resolves the shard list; each
                                       shard's samples are counted as wids
                                       counts them (its mmap tar reader, its
                                       splitname, consecutive runs)
    ratarmount-list TAR INDEX OUT.json ratarmountcore opens TAR with INDEX,
                                       read-only and never re-indexing (it
                                       raises if it cannot use INDEX), and
                                       lists every regular file with its
                                       bytes (hex)
    ratarmount-index TAR INDEX         ratarmountcore indexes TAR into INDEX

wids' package imports torch on import; the test venv has no torch, so its
modules are loaded without running the package's __init__.
"""

import importlib
import json
import os
import re
import site
import sys
import types


def tarwriter(out, mtime):
    import webdataset as wds

    kwargs = {} if mtime == "float" else {"mtime": int(mtime)}
    with wds.TarWriter(out, **kwargs) as sink:
        sink.write({"__key__": "a", "cls": b"1", "jpg": b"JPG1"})
        sink.write({"__key__": "b", "cls": b"1", "jpg": b"JPG222"})


def wids_module(name):
    if "wids" not in sys.modules:
        package = types.ModuleType("wids")
        package.__path__ = [os.path.join(site.getsitepackages()[0], "wids")]
        sys.modules["wids"] = package
    return importlib.import_module(f"wids.{name}")


def wids(list_path, out):
    specs = wids_module("wids_specs")
    mmtar = wids_module("wids_mmtar")
    # As ShardListDataset does: shards relative to the list's directory.
    base = specs.urldir(list_path)
    shards = specs.load_dsdesc_and_resolve(list_path, base=base)["shardlist"]
    result = []
    for shard in shards:
        tar = mmtar.MMIndexedTar(shard["url"])
        keys = []
        for name, _, _ in tar.by_index:
            # wids.wids.splitname
            key, _ = re.match(r"^((?:.*/)?.*?)(\..*)$", name).groups()
            if not keys or keys[-1] != key:
                keys.append(key)
        result.append({"url": shard["url"], "nsamples": shard["nsamples"], "counted": len(keys),
                       "exists": os.path.exists(shard["url"])})
        tar.close()
    with open(out, "w") as f:
        json.dump(result, f)


def ratarmount_list(tar, index, out):
    from ratarmountcore.mountsource.formats.tar import SQLiteIndexedTar

    archive = SQLiteIndexedTar(tar, indexFilePath=index, readOnlyIndex=True, writeIndex=False)
    files = {}

    def walk(path):
        for name, info in (archive.list(path) or {}).items():
            full = path.rstrip("/") + "/" + name
            if (info.mode & 0o170000) == 0o040000:
                walk(full)
            elif (info.mode & 0o170000) == 0o100000:
                with archive.open(archive.lookup(full)) as f:
                    files[full.lstrip("/")] = f.read().hex()

    walk("/")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(files, f, ensure_ascii=False)


def ratarmount_index(tar, index):
    from ratarmountcore.mountsource.formats.tar import SQLiteIndexedTar

    SQLiteIndexedTar(tar, indexFilePath=index, writeIndex=True, indexMinimumFileCount=0).close()


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    {
        "tarwriter": tarwriter,
        "wids": wids,
        "ratarmount-list": ratarmount_list,
        "ratarmount-index": ratarmount_index,
    }[mode](*args)
