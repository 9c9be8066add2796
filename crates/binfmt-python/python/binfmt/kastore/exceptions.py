"""The exceptions of :mod:`binfmt.kastore`, with kastore's names and hierarchy.

``KastoreException`` is the superclass of the others (and itself a
``binfmt.BinfmtError``). Built-in exceptions are raised where kastore raises
them: ``EOFError`` when a load finds no bytes at all, ``OSError`` (and its
subclasses) for I/O, ``TypeError``, ``ValueError`` and ``KeyError`` for bad
input to ``dump``.
"""

from .._binfmt import (
    FileFormatError,
    KastoreException,
    StoreClosedError,
    VersionTooNewError,
    VersionTooOldError,
)

__all__ = [
    "FileFormatError",
    "KastoreException",
    "StoreClosedError",
    "VersionTooNewError",
    "VersionTooOldError",
]
