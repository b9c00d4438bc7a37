"""A real S3-compatible server for tests: moto's server mode (`moto_server`) as its own process on
a free port, and fixtures that point the standard AWS environment at it."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from shadowreplay.ports import free_ports

from tests.recorder_helpers import port_open, wait_for

CREDS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret", "AWS_REGION": "us-east-1"}


def moto_server_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "moto_server"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "moto.server"]


@dataclass
class MotoServer:
    """moto_server -H 127.0.0.1 -p PORT; `auth=True` checks credentials (every key is unknown)."""

    log_dir: Path
    auth: bool = False
    proc: subprocess.Popen | None = None
    port: int = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "MotoServer":
        self.port = free_ports(1)[0]
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        if self.auth:
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = "0"
        self._log = open(self.log_dir / f"moto-{self.port}.log", "wb")
        self.proc = subprocess.Popen(moto_server_cmd() + ["-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=self._log, stderr=subprocess.STDOUT, env=env)
        wait_for(lambda: self._alive() and port_open("127.0.0.1", self.port), timeout=30, what="moto_server to listen")
        return self

    def _alive(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"moto_server exited with {self.proc.returncode}")
        return True

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def aws_env(endpoint: str) -> dict[str, str]:
    """The standard AWS variables for a store at `endpoint`, isolated from the user's ~/.aws."""
    return {**CREDS, "AWS_ENDPOINT_URL": endpoint, "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull, "AWS_EC2_METADATA_DISABLED": "true"}


def set_aws_env(mp: pytest.MonkeyPatch, endpoint: str) -> None:
    for k in [k for k in os.environ if k.startswith("AWS_")]:
        mp.delenv(k)
    for k, v in aws_env(endpoint).items():
        mp.setenv(k, v)


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory) -> Iterator[MotoServer]:
    s = MotoServer(tmp_path_factory.mktemp("moto")).start()
    yield s
    s.stop()


@pytest.fixture
def s3(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> Iterator["S3"]:
    """The AWS environment pointed at the session's moto server, and a fresh bucket."""
    set_aws_env(monkeypatch, moto_server.endpoint)
    s = S3(moto_server.endpoint, f"test-{secrets.token_hex(4)}")
    s.client().create_bucket(Bucket=s.bucket)
    yield s


@dataclass
class S3:
    endpoint: str
    bucket: str

    def url(self, prefix: str = "") -> str:
        return f"s3://{self.bucket}/{prefix}".rstrip("/")

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=CREDS["AWS_REGION"],
                            aws_access_key_id=CREDS["AWS_ACCESS_KEY_ID"], aws_secret_access_key=CREDS["AWS_SECRET_ACCESS_KEY"])

    def keys(self, prefix: str = "") -> list[str]:
        out, token = [], None
        while True:
            kw = {"Bucket": self.bucket, "Prefix": prefix} | ({"ContinuationToken": token} if token else {})
            r = self.client().list_objects_v2(**kw)
            out += [o["Key"] for o in r.get("Contents", [])]
            if not r.get("IsTruncated"):
                return sorted(out)
            token = r["NextContinuationToken"]

    def get(self, key: str) -> bytes:
        return self.client().get_object(Bucket=self.bucket, Key=key)["Body"].read()

    def download(self, prefix: str, dest: Path) -> Path:
        """Copies every object under prefix into dest (to compare with a local run)."""
        for k in self.keys(prefix):
            p = dest / k[len(prefix):].lstrip("/")
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(self.get(k))
        return dest


def wait_keys(s3: S3, prefix: str, cond, timeout: float = 30.0, what: str = "objects") -> list[str]:
    """Polls the bucket until cond(keys) holds; returns the keys."""
    deadline = time.monotonic() + timeout
    while True:
        keys = s3.keys(prefix)
        if cond(keys):
            return keys
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; have {keys}")
        time.sleep(0.05)
