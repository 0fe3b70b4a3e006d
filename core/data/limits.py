"""Load limits: how much a file may expand to, in bytes, rows and columns.

One frozen :class:`LoadLimits` holds every limit; :func:`core.data.load_predictions`,
:func:`core.data.read_table`, the stream engine (:mod:`core.stream.sources`), the command
line and the dashboard's uploads all take theirs from :meth:`LoadLimits.from_env` unless
given one. The environment variables (:data:`ENV`) raise or lower a limit for a whole
deployment::

    CALIBSCOPE_MAX_BYTES=4G calibscope metrics big.csv.gz

Which limit applies where:

- the **in-memory loader** holds the whole table: ``max_bytes`` (of the file, after gzip
  decompression; of a Parquet file's uncompressed pages), ``max_rows``, ``max_columns`` and,
  for gzip, ``max_ratio``;
- the **stream engine** reads files larger than memory in batches, so rows and bytes are not
  limited: only ``max_columns`` (a batch holds every column) and ``max_ratio`` (a gzip part
  that expands a thousandfold is a decompression bomb, not a data set). Its batches are
  bounded by :data:`core.stream.sources.BATCH_BYTES` of decoded columns, from each Parquet
  footer, on the Dask engine too.

Gzip is decompressed a block at a time by :class:`GzipReader`, which counts what it returns
and stops as soon as a limit is passed: a bomb is refused after at most one block beyond the
limit, never decompressed first and measured after.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import math
import os
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO

from core.base.errors import ConfigError, DataError

__all__ = ["ENV", "GzipReader", "LoadLimits", "gunzip"]

#: Limit → the environment variable that sets it.
ENV = {
    "max_bytes": "CALIBSCOPE_MAX_BYTES",
    "max_rows": "CALIBSCOPE_MAX_ROWS",
    "max_columns": "CALIBSCOPE_MAX_COLUMNS",
    "max_ratio": "CALIBSCOPE_MAX_RATIO",
}

#: Decompressed bytes allowed whatever the ratio: small files of repeated values (test data,
#: constant columns) compress far better than real predictions, and are harmless.
RATIO_FLOOR = 64 << 20

#: Bytes decompressed per step (the overshoot past a limit is at most this).
BLOCK = 1 << 20

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


@dataclass(frozen=True)
class LoadLimits:
    """Limits of a load, checked while reading.

    Attributes
    ----------
    max_bytes : int, default=1 GiB
        Bytes of table the in-memory loader holds: the file's size, or what a gzip file
        decompresses to, or a Parquet file's uncompressed size (from its footer).
    max_rows : int, default=20,000,000
        Data rows of the in-memory loader.
    max_columns : int, default=25,000
        Columns of a table (in memory and in every part of a stream); room for 21,841
        ImageNet-21k classes.
    max_ratio : float, default=200
        How many times its compressed size a gzip file may expand to, once past
        :data:`RATIO_FLOOR` (64 MiB). Real predictions compress 3–10 times.

    Raises
    ------
    ConfigError
        On construction, for a limit that is not a positive number.

    Notes
    -----
    The stream engine checks ``max_columns`` and ``max_ratio`` only: it is made for files
    larger than memory, whose rows and bytes are read a batch at a time.
    """

    max_bytes: int = 1 << 30
    max_rows: int = 20_000_000
    max_columns: int = 25_000
    max_ratio: float = 200.0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            number = float if f.name == "max_ratio" else int
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ConfigError(f"{f.name} must be a positive number; got {value!r}.")
            if number is int and value != int(value):
                raise ConfigError(f"{f.name} must be a whole number; got {value!r}.")
            object.__setattr__(self, f.name, number(value))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LoadLimits:
        """Return the default limits, with those set by environment variables (:data:`ENV`).

        Parameters
        ----------
        environ : mapping, optional
            Where to look (default ``os.environ``). Sizes may end in ``K``, ``M``, ``G`` or
            ``T`` (powers of 1024), e.g. ``CALIBSCOPE_MAX_BYTES=4G``.

        Returns
        -------
        LoadLimits
            The limits.

        Raises
        ------
        ConfigError
            For a variable that is not a positive number.
        """
        environ = os.environ if environ is None else environ
        values: dict[str, float | int] = {}
        for name, var in ENV.items():
            text = environ.get(var, "").strip()
            if text:
                values[name] = _parse_size(var, text, ratio=name == "max_ratio")
        return cls(**values)

    def ratio_cap(self, compressed: int) -> float:
        """Decompressed bytes allowed for ``compressed`` bytes of gzip."""
        return max(self.max_ratio * compressed, RATIO_FLOOR)

    def check_columns(self, n: int, name: str) -> None:
        """Raise :class:`DataError` when a table of ``name`` has more than ``max_columns``."""
        if n > self.max_columns:
            raise DataError(
                f"{name} has {n:,} columns, more than the limit of {self.max_columns:,}; "
                f"keep the probability, label and role columns, or raise the limit "
                f"({ENV['max_columns']})."
            )

    def check_rows(self, n: int, name: str, *, more: bool = False) -> None:
        """Raise :class:`DataError` when ``name`` has more than ``max_rows`` data rows."""
        if n > self.max_rows:
            count = f"more than {self.max_rows:,}" if more else f"{n:,}"
            raise DataError(
                f"{name} has {count} rows, more than the in-memory loader's limit of "
                f"{self.max_rows:,}; read it with the stream engine (--engine stream) or raise "
                f"the limit ({ENV['max_rows']})."
            )

    def check_bytes(self, n: int, name: str, *, what: str = "", more: bool = False) -> None:
        """Raise :class:`DataError` when ``name`` holds more than ``max_bytes`` of table."""
        if n > self.max_bytes:
            size = f"more than {_size(self.max_bytes)}" if more else _size(n)
            raise DataError(
                f"{name} holds {size}{what}, more than the in-memory loader's limit of "
                f"{_size(self.max_bytes)}; read it with the stream engine (--engine stream) or "
                f"raise the limit ({ENV['max_bytes']})."
            )


def _parse_size(var: str, text: str, *, ratio: bool) -> float | int:
    m = re.fullmatch(r"([0-9][0-9_]*(?:\.[0-9]+)?)\s*([kmgt]?)(?:i?b)?", text.lower())
    if m is None or (ratio and m.group(2)):
        example = "200" if ratio else "4G"
        raise ConfigError(f"{var} must be a positive number such as {example}; got {text!r}.")
    value = float(m.group(1).replace("_", "")) * _UNITS[m.group(2)]
    if value <= 0:
        raise ConfigError(f"{var} must be a positive number; got {text!r}.")
    return value if ratio else int(value)


def _size(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} bytes"


class GzipReader(io.RawIOBase):
    """A gzip file decompressed a block at a time, refused once it expands past the limits.

    Parameters
    ----------
    raw : binary file object
        The compressed bytes (positioned at the gzip header); closed with this reader.
    name : str
        The file as named in messages.
    limits : LoadLimits
        ``max_ratio`` is checked against the compressed bytes read so far.
    max_bytes : int, optional
        Decompressed bytes allowed (the in-memory loader passes ``limits.max_bytes``; a
        stream passes None).

    Raises
    ------
    DataError
        From :meth:`readinto`, naming the file: a damaged gzip stream, or a limit passed.
    """

    def __init__(
        self, raw: IO[bytes], name: str, limits: LoadLimits, *, max_bytes: int | None = None
    ) -> None:
        super().__init__()
        self._raw = raw
        self._gz = gzip.GzipFile(fileobj=raw, mode="rb")
        self.name = name
        self.limits = limits
        self.max_bytes = max_bytes
        self.out = 0

    def readable(self) -> bool:
        """Whether the reader can be read (it can)."""
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        """Decompress at most one block into ``buffer``; return the bytes written."""
        view = memoryview(buffer).cast("B")
        want = min(len(view), BLOCK)
        try:
            chunk = self._gz.read(want)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataError(
                f"{self.name}: the gzip file is damaged ({_first_line(exc)})."
            ) from None
        n = len(chunk)
        view[:n] = chunk
        self.out += n
        if self.max_bytes is not None and self.out > self.max_bytes:
            self.limits.check_bytes(self.out, self.name, what=" once decompressed", more=True)
        # the compressed position moves in the decompressor's read-ahead steps: a ratio
        # measured on it is that of the file so far, never more
        used = self._raw.tell()
        if self.out > self.limits.ratio_cap(used):
            raise DataError(
                f"{self.name} expands to more than {self.limits.max_ratio:g} times its "
                f"compressed size ({_size(self.out)} from {_size(used)} so far), as a "
                "decompression bomb does; if the file is genuine, raise the limit "
                f"({ENV['max_ratio']})."
            )
        return n

    def close(self) -> None:
        """Close the decompressor and the compressed file."""
        if not self.closed:
            self._gz.close()
            self._raw.close()
        super().close()


def gunzip(data: bytes, name: str, limits: LoadLimits) -> bytes:
    """Return gzip ``data`` decompressed, within ``limits.max_bytes`` and ``max_ratio``.

    Raises
    ------
    DataError
        For a damaged gzip stream or a limit passed (checked a block at a time).
    """
    reader = GzipReader(io.BytesIO(data), name, limits, max_bytes=limits.max_bytes)
    chunks = []
    with reader:
        while chunk := reader.read(BLOCK):
            chunks.append(chunk)
    return b"".join(chunks)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
