"""Dataset locations: a local path (the default) or an object-storage prefix `s3://bucket/prefix`.

`location(x)` gives a `pathlib.Path` for a local path and an `S3Path` for an `s3://` URL; an
S3Path offers the few Path operations the dataset code uses (`/`, name, parent, exists, is_dir,
rglob, glob, read_text, write_bytes...), so that code reads and writes either kind alike.

Credentials and endpoint come from the standard AWS chain. pyarrow's S3FileSystem (the AWS C++
SDK) reads AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, AWS_PROFILE and
~/.aws/credentials and config, but its constructor ignores AWS_ENDPOINT_URL; s3fs (botocore)
reads all of them. So the endpoint (AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL) and the region
(AWS_REGION, else AWS_DEFAULT_REGION, else the profile's) are resolved here once and handed to
both explicitly.

Writes and listings go through pyarrow's filesystem; DuckDB reads `s3://` globs through an
fsspec filesystem (s3fs) registered on the connection (`register_duckdb`): DuckDB's httpfs
extension is not available offline. A write is one PUT of the complete object (or a multipart
upload completed at the end), so no partial object is ever visible under its name; locally a
file is written under a hidden temporary name and renamed.
"""

from __future__ import annotations

import fnmatch
from glob import escape as glob_escape
import functools
import os
import posixpath
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from .errors import ConfigError, DatasetError, ShadowReplayError, TargetError

if TYPE_CHECKING:
    import duckdb
    import pyarrow.fs as pafs

S3_SCHEME = "s3://"


def is_remote(loc: Any) -> bool:
    """True for an `s3://` URL or an S3Path."""
    return isinstance(loc, S3Path) or (isinstance(loc, str) and loc.startswith(S3_SCHEME))


def location(loc: Union[str, os.PathLike, "S3Path"]) -> Union[Path, "S3Path"]:
    """A Path for a local path (`~` expanded), an S3Path for `s3://bucket/prefix`."""
    if isinstance(loc, S3Path):
        return loc
    if is_remote(loc):
        require_s3()
        return S3Path(str(loc))
    return Path(os.path.expanduser(os.fspath(loc)))


S3_EXTRA = "s3:// paths need the s3 extra: pip install 'shadowreplay[s3]'"


@functools.lru_cache(maxsize=1)
def s3_installed() -> bool:
    """Whether the `s3` extra (s3fs, with botocore) is installed; nothing is imported."""
    import importlib.util

    try:
        return importlib.util.find_spec("s3fs") is not None
    except (ImportError, ValueError):
        return False


def require_s3() -> None:
    """ConfigError naming the extra when s3:// is asked for without it."""
    if not s3_installed():
        raise ConfigError(S3_EXTRA)


Location = Union[Path, "S3Path"]


def endpoint_url() -> str | None:
    """The S3 endpoint of an S3-compatible store, from the environment or the AWS profile."""
    url = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if url:
        return url
    return _profile_value("endpoint_url")


def region() -> str | None:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or _profile_value("region")


def _profile_value(name: str) -> str | None:
    try:
        import botocore.session

        return botocore.session.Session().get_scoped_config().get(name)
    except Exception:  # no config file, unknown profile: the libraries' own defaults apply
        return None


def _settings() -> tuple[str | None, str | None]:
    return endpoint_url(), region()


@functools.lru_cache(maxsize=4)
def _arrow_s3(endpoint: str | None, reg: str | None) -> "pafs.S3FileSystem":
    import pyarrow.fs as pafs

    kw: dict[str, Any] = {
        "connect_timeout": 5,
        "request_timeout": 30,
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=3),
    }
    if endpoint:
        kw["endpoint_override"] = endpoint
    if reg:
        kw["region"] = reg
    return pafs.S3FileSystem(**kw)


def arrow_filesystem() -> "pafs.S3FileSystem":
    """pyarrow's S3 filesystem for the current environment (cached per endpoint and region)."""
    return _arrow_s3(*_settings())


@functools.lru_cache(maxsize=4)
def _fsspec_s3(endpoint: str | None, reg: str | None) -> Any:
    import s3fs

    client: dict[str, Any] = {}
    if reg:
        client["region_name"] = reg
    kw: dict[str, Any] = {"client_kwargs": client, "config_kwargs": {"connect_timeout": 5, "retries": {"max_attempts": 3}}}
    if endpoint:
        kw["endpoint_url"] = endpoint
    return s3fs.S3FileSystem(**kw)


def fsspec_filesystem() -> Any:
    """The s3fs filesystem DuckDB reads `s3://` through (cached per endpoint and region)."""
    return _fsspec_s3(*_settings())


def register_duckdb(con: "duckdb.DuckDBPyConnection") -> None:
    """Lets `read_parquet('s3://...')` on this connection read through s3fs (idempotent)."""
    fs = fsspec_filesystem()
    name = fs.protocol[0] if isinstance(fs.protocol, (tuple, list)) else fs.protocol
    if name in con.list_filesystems():
        return
    con.register_filesystem(fs)


def describe_error(e: BaseException, where: str) -> ShadowReplayError:
    """One clear line for a failed object-storage call: which of bucket, credentials or endpoint."""
    msg = str(e)
    low = msg.lower()
    ep = endpoint_url() or "the AWS default endpoint"
    if "no_such_bucket" in low or "nosuchbucket" in low or "bucket does not exist" in low:
        return DatasetError(f"{where}: no such bucket (endpoint {ep})")
    if any(s in low for s in ("invalid_access_key", "invalidaccesskeyid", "signature_does_not_match",
                              "signaturedoesnotmatch", "access_denied", "accessdenied", "forbidden",
                              "invalidtoken", "expiredtoken", "unable to locate credentials")):
        return ConfigError(f"{where}: access denied by {ep}; check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY "
                           "(or the AWS profile)")
    if any(s in low for s in ("network_connection", "could not connect", "could not resolve", "connection refused",
                              "couldn't connect", "connect timeout", "timed out", "endpointconnectionerror")):
        return TargetError(f"{where}: cannot reach the object store at {ep} (AWS_ENDPOINT_URL)")
    first = msg.strip().splitlines()[0] if msg.strip() else type(e).__name__
    return DatasetError(f"{where}: object storage error: {first[:300]}")


@contextmanager
def guarded(where: str) -> Iterator[None]:
    """Turns an object-storage failure inside the block into one ShadowReplayError line."""
    try:
        yield
    except ShadowReplayError:
        raise
    except Exception as e:  # pyarrow raises OSError, botocore and s3fs their own types
        raise describe_error(e, where) from None


class S3Path:
    """`s3://bucket/key`: the few pathlib.Path operations the dataset code uses, on pyarrow's
    S3 filesystem. A prefix is a folder when some object lies under it; folders need no making."""

    __slots__ = ("bucket", "key")

    def __init__(self, url: str) -> None:
        if not url.startswith(S3_SCHEME):
            raise ConfigError(f"{url}: not an s3:// URL")
        bucket, _, key = url[len(S3_SCHEME):].partition("/")
        key = key.strip("/")
        if not bucket:
            raise ConfigError(f"{url}: no bucket named (write s3://bucket/prefix)")
        self.bucket = bucket
        self.key = posixpath.normpath(key) if key else ""
        if self.key in (".", "/"):
            self.key = ""

    # --- pure path operations ---
    def __str__(self) -> str:
        return f"{S3_SCHEME}{self.bucket}/{self.key}" if self.key else f"{S3_SCHEME}{self.bucket}"

    def __repr__(self) -> str:
        return f"S3Path({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, S3Path) and (self.bucket, self.key) == (other.bucket, other.key)

    def __hash__(self) -> int:
        return hash((self.bucket, self.key))

    def __lt__(self, other: "S3Path") -> bool:
        return str(self) < str(other)

    def __truediv__(self, part: str | os.PathLike) -> "S3Path":
        part = os.fspath(part).strip("/")
        return S3Path(f"{S3_SCHEME}{self.bucket}/{posixpath.join(self.key, part) if self.key else part}")

    @property
    def name(self) -> str:
        return posixpath.basename(self.key)

    @property
    def parent(self) -> "S3Path":
        return S3Path(f"{S3_SCHEME}{self.bucket}/{posixpath.dirname(self.key)}")

    @property
    def parents(self) -> list["S3Path"]:
        out, p = [], self
        while p.key:
            p = p.parent
            out.append(p)
        return out

    def with_name(self, name: str) -> "S3Path":
        return self.parent / name

    def is_absolute(self) -> bool:
        return True

    def resolve(self) -> "S3Path":
        return self

    def expanduser(self) -> "S3Path":
        return self

    @property
    def fs_path(self) -> str:
        """The path pyarrow's S3 filesystem takes: bucket/key."""
        return f"{self.bucket}/{self.key}" if self.key else self.bucket

    # --- queries ---
    def _info(self):
        import pyarrow.fs as pafs

        with guarded(str(self)):
            return arrow_filesystem().get_file_info(self.fs_path), pafs

    def exists(self) -> bool:
        info, pafs = self._info()
        return info.type != pafs.FileType.NotFound

    def is_dir(self) -> bool:
        info, pafs = self._info()
        return info.type == pafs.FileType.Directory

    def is_file(self) -> bool:
        info, pafs = self._info()
        return info.type == pafs.FileType.File

    def check_bucket(self) -> None:
        """Raises one clear line when the bucket is missing, the credentials are refused or the
        endpoint cannot be reached (a listing of the prefix, which needs all three)."""
        import pyarrow.fs as pafs

        with guarded(str(self)):
            arrow_filesystem().get_file_info(pafs.FileSelector(self.fs_path, recursive=False, allow_not_found=True))
            if arrow_filesystem().get_file_info(self.bucket).type == pafs.FileType.NotFound:
                raise DatasetError(f"{self}: no such bucket (endpoint {endpoint_url() or 'the AWS default endpoint'})")

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Prefixes need no making; checks the bucket can be written to be reached."""
        self.check_bucket()

    def _walk(self, recursive: bool) -> list[Any]:
        import pyarrow.fs as pafs

        with guarded(str(self)):
            return arrow_filesystem().get_file_info(pafs.FileSelector(self.fs_path, recursive=recursive, allow_not_found=True))

    def _child(self, fs_path: str) -> "S3Path":
        return S3Path(S3_SCHEME + fs_path)

    def rglob(self, pattern: str) -> Iterator["S3Path"]:
        """Objects below this prefix whose name matches `pattern` (e.g. '*.parquet')."""
        import pyarrow.fs as pafs

        for info in self._walk(True):
            if info.type == pafs.FileType.File and fnmatch.fnmatchcase(posixpath.basename(info.path), pattern):
                yield self._child(info.path)

    def iterdir(self) -> Iterator["S3Path"]:
        for info in self._walk(False):
            yield self._child(info.path)

    def glob(self, pattern: str) -> Iterator["S3Path"]:
        """Children matching a relative pattern of one or more parts ('run-*', '*/requests')."""
        parts = pattern.strip("/").split("/")
        level = [self]
        for part in parts:
            level = [c for p in level for c in p.iterdir() if fnmatch.fnmatchcase(c.name, part)]
        yield from level

    # --- content ---
    def read_bytes(self) -> bytes:
        with guarded(str(self)), arrow_filesystem().open_input_stream(self.fs_path) as f:
            return f.read()

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)

    def write_bytes(self, data: bytes) -> int:
        """One PUT of the whole object: readers see the old object or the new one, never part."""
        with guarded(str(self)):
            with arrow_filesystem().open_output_stream(self.fs_path) as f:
                f.write(data)
        return len(data)

    def write_text(self, text: str, encoding: str = "utf-8") -> int:
        return self.write_bytes(text.encode(encoding))

    def unlink(self, missing_ok: bool = False) -> None:
        with guarded(str(self)):
            try:
                arrow_filesystem().delete_file(self.fs_path)
            except FileNotFoundError:
                if not missing_ok:
                    raise


TMP_SUFFIX = ".tmp"  # a local Parquet file being written is NAME.parquet.tmp: **/*.parquet never matches it


def write_atomic(path: Location, data: bytes) -> None:
    """Writes `data` as `path` so that a reader sees the old content or the new, never a part:
    locally a hidden temporary in the same folder, then a rename; on S3 one PUT."""
    if isinstance(path, S3Path):
        path.write_bytes(data)
        return
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}{TMP_SUFFIX}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise


def remove_temporaries(path: Location) -> None:
    """Removes the hidden temporaries that `write_atomic` leaves beside a local `path` when the
    process writing it is killed; only call it when no one is writing `path`."""
    if isinstance(path, S3Path):
        return
    path = Path(path)
    for tmp in path.parent.glob(f".{glob_escape(path.name)}.*{TMP_SUFFIX}"):
        tmp.unlink(missing_ok=True)


def write_parquet(table: Any, path: Location, **kw: Any) -> None:
    """pyarrow.parquet.write_table, atomically: on S3 the file is encoded in memory and PUT whole
    (a writer killed meanwhile leaves nothing; an unfinished multipart upload is never visible);
    locally it is written as NAME.tmp beside the final name and renamed. Every page carries its
    CRC, so `verify_parquet` finds a damaged one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    kw.setdefault("write_page_checksum", True)

    if isinstance(path, S3Path):
        buf = pa.BufferOutputStream()
        pq.write_table(table, buf, **kw)
        path.write_bytes(buf.getvalue().to_pybytes())
        return
    path = Path(path)
    tmp = path.with_name(path.name + TMP_SUFFIX)
    try:
        pq.write_table(table, tmp, **kw)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_parquet_metadata(path: Location) -> Any:
    import pyarrow.parquet as pq

    if isinstance(path, S3Path):
        with guarded(str(path)):
            return pq.read_metadata(path.fs_path, filesystem=arrow_filesystem())
    return pq.read_metadata(path)


def verify_parquet(path: Location) -> None:
    """Reads every page of a Parquet file once, one row group at a time, checking the pages' CRCs
    where the writer stored them; raises what pyarrow raises for a damaged page (a failed
    decompression, a bad checksum, a short read)."""
    import pyarrow.parquet as pq

    if isinstance(path, S3Path):
        with guarded(str(path)), arrow_filesystem().open_input_file(path.fs_path) as f:
            _read_every_page(pq.ParquetFile(f, page_checksum_verification=True))
        return
    with open(path, "rb") as f:
        _read_every_page(pq.ParquetFile(f, page_checksum_verification=True))


def _read_every_page(pf: Any) -> None:
    for i in range(pf.num_row_groups):
        pf.read_row_group(i, use_threads=False)


def read_parquet(path: Location, columns: list[str] | None = None) -> Any:
    import pyarrow.parquet as pq

    if isinstance(path, S3Path):
        with guarded(str(path)):
            return pq.read_table(path.fs_path, columns=columns, filesystem=arrow_filesystem())
    return pq.read_table(path, columns=columns)
