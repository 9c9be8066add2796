"""Type stubs of ``binfmt._binfmt``, the native half of the package.

Everything here is internal: the public API is :mod:`binfmt`,
:mod:`binfmt.kastore`, :mod:`binfmt.arcx`, :mod:`binfmt.taridx` and
:mod:`binfmt.par4`.
"""

from typing import Any, Iterator, Optional

import numpy as np

__version__: str

class BinfmtError(Exception):
    """A file is not what its format requires, or could not be handled."""

class RemoteWarning(UserWarning):
    """A remote object is read in a degraded way (a server ignoring
    ranges, or sending no strong ETag)."""

class KastoreException(BinfmtError):
    """Superclass of all exceptions defined in kastore."""

class FileFormatError(KastoreException):
    """An error was detected in the file format."""

class VersionTooOldError(KastoreException):
    """File version is too old."""

class VersionTooNewError(KastoreException):
    """File version is too new."""

class StoreClosedError(KastoreException):
    """The store has been closed and cannot be accessed."""

# kastore -------------------------------------------------------------------

KASTORE_TYPES: tuple[tuple[str, int, int], ...]
KASTORE_SIGNATURE: bytes
KASTORE_HEADER_SIZE: int
KASTORE_DESCRIPTOR_SIZE: int
KASTORE_ARRAY_ALIGN: int
KASTORE_VERSION: tuple[int, int]

class _StoreBytes:
    """The memory of a lazily loaded store: the base object of its arrays."""

class ValueInfo:
    """The type, shape and size of one array of a store."""

    def __init__(self, dtype: str, shape: tuple[int], size: int) -> None: ...
    @property
    def dtype(self) -> str:
        """The numpy type name, such as ``"float64"``."""
    @property
    def shape(self) -> tuple[int]:
        """``(number of elements,)``."""
    @property
    def size(self) -> int:
        """The size in bytes."""

class _NativeStore:
    """The native part of :class:`binfmt.kastore.Store`."""

    def __new__(
        cls, kind: str, value: Any, start: int, read_all: bool, key_encoding: Any
    ) -> Any: ...
    @property
    def key_encoding(self) -> Any:
        """The encoding of the keys."""
    @property
    def _nbytes(self) -> int:
        """The size of the store in bytes."""
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[str]: ...
    def __contains__(self, key: object) -> bool: ...
    def __getitem__(self, key: str) -> np.ndarray: ...
    def info(self, key: str) -> ValueInfo:
        """The type, shape and size of the array under ``key``."""
    def close(self) -> None:
        """Closes the store; arrays already handed out stay valid."""
    def __enter__(self) -> Any: ...
    def __exit__(self, *args: object) -> bool: ...

def kastore_load_dict(kind: str, value: Any, start: int) -> tuple[dict[str, np.ndarray], int]:
    """The C engine's load: writable arrays that own their memory, and the size."""

def kastore_dump(
    items: list[tuple[bytes, str, np.ndarray]], kind: str, target: Any
) -> Optional[bytes]:
    """Writes a store of ``items`` (key bytes, type name, bytes as uint8)."""

def kastore_layout(
    items: list[tuple[bytes, str, np.ndarray]],
) -> tuple[list[tuple[int, int, int, int, int]], int]:
    """Where the writer puts each item, and the file size."""

def kastore_header(num_items: int, file_size: int) -> bytes:
    """The 64-byte header of a store."""

def kastore_descriptor(
    item_type: int, key_start: int, key_len: int, array_start: int, array_len: int
) -> bytes:
    """The 64 bytes of one item descriptor, fields as given."""

def kastore_unpack_descriptor(bytes: bytes) -> tuple[int, int, int, int, int]:
    """The fields of a 64-byte item descriptor."""

# streams -------------------------------------------------------------------

class _NativeStream:
    """A stream of bytes produced by Rust."""

    @property
    def size(self) -> Optional[int]:
        """The number of bytes the stream holds, when known."""
    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` more bytes; empty at the end."""
    def seekable(self) -> bool:
        """Whether the stream moves to any offset."""
    def seek(self, offset: int, whence: int = 0) -> int:
        """Moves to ``offset`` (from the start, current position or end)."""
    def tell(self) -> int:
        """The position of the next byte read."""
    def close(self) -> None:
        """Releases what the stream reads from."""

# ARCX ----------------------------------------------------------------------

class _NativeArchive:
    """An ARCX archive opened for reading."""

    def __init__(self, location: str) -> None: ...
    @property
    def path(self) -> str: ...
    @property
    def dialect(self) -> str: ...
    def names(self) -> list[str]: ...
    def entries(self) -> list[tuple[str, int, str, int, int]]: ...
    def __len__(self) -> int: ...
    def __contains__(self, name: str) -> bool: ...
    def read(self, name: str) -> bytes: ...
    def open(self, name: str) -> _NativeStream: ...
    def extract(self, dir: str, *, symlinks: bool = False, metadata: bool = True) -> dict[str, int]: ...
    def verify(self) -> dict[str, int]: ...
    def entry_blocks(self) -> list[Optional[int]]: ...
    @property
    def block_count(self) -> int: ...

def arcx_pack(
    dir: str, out: str, level: int = 3, dialect: str = "spec", jobs: Optional[int] = None
) -> dict[str, Any]:
    """Packs a directory tree into an archive."""

class _NativeWriter:
    """An ARCX archive written entry by entry."""

    def __init__(
        self, location: str, *, level: int = 3, dialect: str = "spec", jobs: Optional[int] = None
    ) -> None: ...
    @property
    def location(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def add(
        self, path: str, data: bytes, *, mode: Optional[int] = None, mtime_ns: Optional[int] = None
    ) -> int: ...
    def add_directory(
        self, path: str, *, mode: Optional[int] = None, mtime_ns: Optional[int] = None
    ) -> None: ...
    def finish(self) -> dict[str, Any]: ...
    def abort(self) -> None: ...

def arcx_merge(parts: list[str], location: str, *, dialect: Optional[str] = None) -> dict[str, Any]:
    """Merges part archives into one, their blocks copied as stored."""

# the umbrella library ------------------------------------------------------

class _NativeEntries:
    """A file of any supported format, as named entries."""

    @property
    def format(self) -> str: ...
    @property
    def file(self) -> str: ...
    def list(self) -> list[tuple[str, int, Optional[str]]]: ...
    def read(self, name: str) -> bytes: ...
    def open(self, name: str) -> _NativeStream: ...
    def verify(self) -> None: ...
    def extract(self, dir: str, *, symlinks: bool = False) -> int: ...

def open_entries(location: str) -> _NativeEntries:
    """Opens a file of any supported format as named entries."""

def run_cli(argv: list[str]) -> int:
    """Runs the ``binfmt`` command on ``argv`` (the program name first); its exit status."""

def sniff(location: str) -> str:
    """The format of a file."""

def convert(
    src: str, dst: str, to: Optional[str] = None, dialect: str = "spec", shard_size: int = ...
) -> dict[str, Any]:
    """Converts a file into another format."""

# TARIDX --------------------------------------------------------------------

def taridx_index(
    shards: list[str], out: str, key_rule: str = "glzn", jobs: Optional[int] = None
) -> None:
    """Indexes shards (paths or patterns) into an index file."""

def is_remote(location: str) -> bool: ...
def taridx_find_shards(index: str) -> list[str]:
    """The shards of an index: its shard list's, else its fold's by name."""

def taridx_index_fold(
    root: str, fold: str, key_rule: str = "glzn", jobs: Optional[int] = None
) -> str:
    """Indexes a fold's shards; returns the index path."""

class _NativeIndex:
    """A TARIDX index file."""

    def __init__(self, location: str) -> None: ...
    @property
    def version(self) -> tuple[int, int]: ...
    @property
    def num_rows(self) -> int: ...
    @property
    def extensions(self) -> list[str]: ...
    @property
    def key_rule(self) -> str: ...
    @property
    def is_contiguous(self) -> bool: ...
    def crash_stems(self) -> list[str]: ...
    def row_bytes(self) -> np.ndarray: ...
    def verify(self, shards: Optional[list[str]] = None) -> int: ...

class _MemberBytes:
    """A member's payload in a mapped shard: the base of its zero-copy views."""

class _NativeDataset:
    """An index with its shards, as samples."""

    def __init__(
        self,
        index: str,
        shards: Optional[list[str]],
        extensions: list[str],
        open_shards: int,
        map_shards: bool,
        cache_dir: Optional[str] = None,
        cache_size: int = 1 << 30,
    ) -> None: ...
    def __len__(self) -> int: ...
    def sample(self, index: int, zero_copy: bool = False) -> dict[str, Any]: ...
    def get_batch(self, indices: np.ndarray, zero_copy: bool = False) -> list[dict[str, Any]]:
        """Samples ``indices`` (int64, each in range), read with the GIL released."""
    def lookup(self, key: str, zero_copy: bool = False) -> Optional[dict[str, Any]]: ...
    def extensions(self) -> list[str]: ...
    @property
    def key_rule(self) -> str: ...
    def sample_shards(self) -> np.ndarray: ...
    def shard_names(self) -> list[str]: ...
    def open_shard_count(self) -> int: ...
    def verify(self) -> int: ...

class _EpochOrder:
    """One epoch's global order of ``n`` samples (spec/sampler.md)."""

    def __init__(
        self,
        n: int,
        seed: int,
        epoch: int,
        shuffle: bool,
        chunk_size: Optional[int],
        shard_starts: Optional[list[int]],
    ) -> None: ...
    @property
    def n(self) -> int: ...
    @property
    def chunk_count(self) -> Optional[int]: ...
    def take(self, first: int, stride: int, count: int) -> np.ndarray:
        """``g((first + k * stride) mod n)`` for ``k < count``, int64."""
    def get(self, position: int) -> int: ...
    def position_of(self, sample: int) -> int: ...

def sample_share(n: int, start: int, rank: int, world_size: int, drop_last: bool) -> tuple[int, int, int]:
    """``(first, stride, len)``: one rank's positions of an epoch from ``start``."""

class _Mixture:
    """A weighted interleaving of sources (spec/mixture.md)."""

    def __init__(self, weights: list[float], lengths: list[int], samples: int, seed: int) -> None: ...
    @property
    def samples(self) -> int: ...
    @property
    def quotas(self) -> list[int]: ...
    def locate(self, epoch: int, position: int) -> tuple[int, int]:
        """``(source, sample)`` at ``position`` of epoch ``epoch``."""
    def take(self, epoch: int, first: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Sources and samples of positions ``first .. first + count``, int64."""

# PAR4 ----------------------------------------------------------------------

class _NativePar4:
    """A PAR4 file opened for reading."""

    def __init__(self, location: str) -> None: ...
    @property
    def file_size(self) -> int: ...
    def inspect(self) -> str: ...
    def tree(self) -> dict[str, Any]: ...
    def verify(self) -> tuple[int, int]: ...
    def map_lens(self) -> list[tuple[str, int]]: ...
    def map_get(self, key: str) -> Optional[bytes]: ...


class _NativeShardWriter:
    def __init__(
        self,
        directory: str,
        prefix: str,
        *,
        shard_bytes: Optional[int] = None,
        shard_samples: Optional[int] = None,
        key_rule: str = "webdataset",
    ) -> None: ...
    def write(self, key: str, members: list[tuple[str, bytes]]) -> None: ...
    def finish(self) -> list[tuple[str, list[tuple[str, int, int]], int]]: ...
    def abort(self) -> None: ...

def taridx_write_index(
    location: str,
    shards: list[tuple[str, list[tuple[str, int, int]], int]],
    key_rule: str = "webdataset",
) -> int:
    """Writes the index of reported shards."""
    ...

def rename(src: str, dst: str) -> None: ...
def remove(location: str) -> None: ...
def list_prefix(location: str) -> list[str]: ...
