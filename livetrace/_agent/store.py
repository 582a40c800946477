"""Where the agent's files may go besides this host's disk: a filesystem
that pyarrow opens from a URI (``s3://BUCKET/PREFIX``, ``gs://``,
``abfs://``, ``hdfs://``; ``file://`` is a local directory).

A local directory (a path, or a ``file://`` URI) keeps the agent's own
writers: each file whole under a hidden temporary name, renamed into
place, never through a link, 0600 in 0700 directories (``_outfile``,
``_dataset``). Elsewhere a file is written the same way through the
filesystem (a hidden ``.NAME.part-ID`` beside it, then moved), except on an
object store, which has no rename (pyarrow's move copies the object, then
deletes it): there the object is written under its final name in one
upload, which the store makes visible whole only once it completes, so a
reader never sees part of one either.
"""

from __future__ import annotations

import contextlib
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from livetrace._errors import OutputPathError

__all__ = ["LOCATION_SCHEMES", "Store", "check_location", "local_path"]

# The URI schemes pyarrow's FileSystem.from_uri opens (mock: its in-memory filesystem, for tests).
LOCATION_SCHEMES = ("file", "s3", "gs", "gcs", "abfs", "abfss", "hdfs", "viewfs", "mock")
# Filesystems whose files are objects, written whole by one upload and without a rename.
OBJECT_STORES = frozenset({"s3", "gcs", "abfs"})
COPY_CHUNK = 1 << 20


def local_path(location: str) -> Path | None:
    """The local directory a location names (a path, or a ``file://`` URI); None for another filesystem."""
    if "://" not in location:
        return Path(location)
    parts = urlsplit(location)
    return Path(unquote(parts.path)) if parts.scheme == "file" else None


def check_location(text: str) -> str:
    """``text`` if it is an absolute path or a filesystem URI pyarrow opens;
    else a ValueError that says what is wrong (no network: for ``--check``)."""
    if "://" not in text:
        if not Path(text).is_absolute():
            raise ValueError(f"must be an absolute path or a filesystem URI (s3://BUCKET/PREFIX), not {text!r}")
        return text
    parts = urlsplit(text)
    if parts.scheme not in LOCATION_SCHEMES:
        raise ValueError(
            f"{text!r}: {parts.scheme!r} is not a filesystem pyarrow opens: give a path, or a URI that starts "
            "with file://, s3://, gs://, abfs:// or hdfs://"
        )
    if parts.scheme == "file" and (parts.netloc not in ("", "localhost") or not parts.path.startswith("/")):
        raise ValueError(f"{text!r}: a file:// URI names an absolute path on this host: file:///var/lib/...")
    if parts.scheme != "mock" and not (parts.netloc + parts.path).strip("/"):
        raise ValueError(f"{text!r} names no bucket, container or directory")
    return text


class Store:
    """A directory on a pyarrow filesystem: ``fs`` and the ``root`` path in it
    (``shown``: the location as the user gave it, for messages and rows)."""

    def __init__(self, fs: Any, root: str, shown: str) -> None:
        self.fs = fs
        self.root = root.rstrip("/")
        self.shown = shown.rstrip("/")
        self.renames = fs.type_name not in OBJECT_STORES

    @classmethod
    def open(cls, location: str) -> Store:
        """The filesystem a URI names; :class:`OutputPathError` in one line if pyarrow cannot open it."""
        import pyarrow as pa
        import pyarrow.fs as pafs

        try:
            fs, root = pafs.FileSystem.from_uri(location)
        except (pa.ArrowException, OSError, ValueError) as e:
            raise OutputPathError(f"cannot open {location}: {str(e).splitlines()[0]}") from None
        return cls(fs, root, location)

    def path(self, relative: str) -> str:
        return f"{self.root}/{relative}" if self.root else relative

    def where(self, relative: str) -> str:
        """A file's location as the user would name it (the store's URI and the file's path in it)."""
        return f"{self.shown}/{relative}"

    def put(self, relative: str, data: bytes | Path) -> str:
        """``data`` (bytes, or a local file's) as the file ``relative``, whole
        (see the module's docstring); its location. Raises OSError (pyarrow's
        errors are OSErrors) if the filesystem refuses."""
        final = self.path(relative)
        parent, _, name = final.rpartition("/")
        if parent:
            self.fs.create_dir(parent, recursive=True)
        target = f"{parent}/.{name}.part-{secrets.token_hex(4)}" if self.renames else final
        try:
            with self.fs.open_output_stream(target) as out:
                if isinstance(data, Path):
                    with data.open("rb") as src:
                        while chunk := src.read(COPY_CHUNK):
                            out.write(chunk)
                else:
                    out.write(data)
            if self.renames:
                self.fs.move(target, final)
        except BaseException:
            if self.renames:
                with contextlib.suppress(OSError):  # a part never made is not found: nothing to clean
                    self.fs.delete_file(target)
            raise
        return self.where(relative)

    def files(self, relative: str, suffix: str) -> list[str]:
        """The paths of the files under ``relative`` whose names end in ``suffix``, not hidden ones."""
        import pyarrow.fs as pafs

        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self.path(relative), recursive=True, allow_not_found=True))
        except OSError:
            return []
        return [
            i.path
            for i in infos
            if i.type == pafs.FileType.File and i.base_name.endswith(suffix) and not i.base_name.startswith(".")
        ]
