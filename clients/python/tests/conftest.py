"""Fixtures: one service for the whole run (tests use experiment ids of their own), a client of
it with short retry delays, and CSV files."""

from pathlib import Path
from typing import Iterator

import pytest
from _support import REPO, Server, csv_bytes, write

from abn_client import Client


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    started = Server()
    yield started
    started.stop()


@pytest.fixture
def client(server: Server) -> Client:
    return Client(server.url, server.api_key, retry_base=0.01)


@pytest.fixture(scope="session")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Paths of test files: ``small`` (4 rows), ``large`` (~3 MB, several chunks), ``invalid``
    (a short row on line 2), ``invalid_large`` (~3 MB whose line 2 is short)."""
    d = tmp_path_factory.mktemp("csv")
    large = csv_bytes(3 * 1024 * 1024)
    small = (REPO / "tests" / "testdata" / "small.csv").read_bytes()
    bad_head = b"user_id,variant,date,converted\nu1,A,2026-01-01\n"
    return {
        "small": write(d / "small.csv", small),
        "large": write(d / "large.csv", large),
        "invalid": write(d / "invalid.csv", bad_head),
        "invalid_large": write(d / "invalid_large.csv", bad_head + large.split(b"\n", 1)[1]),
        "dir": str(d),
    }


def read(path: str) -> bytes:
    return Path(path).read_bytes()
