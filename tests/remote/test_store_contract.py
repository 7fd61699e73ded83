"""``StoreContract`` on the local store, the HTTP store (a range server on 127.0.0.1) and the
S3 store (moto on 127.0.0.1), all over the same files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from range_server import RangeServer
from store_contract import StoreContract

from viewer.format.store import LocalStore, Store, open_store


@pytest.fixture
def contract_root(data_root: Path) -> Path:
    return data_root


class TestLocalStore(StoreContract):
    @pytest.fixture
    def contract_store(self, data_root: Path) -> Store:
        return LocalStore(data_root)


class TestHttpStore(StoreContract):
    @pytest.fixture
    def contract_store(self, http: RangeServer) -> Iterator[Store]:
        yield open_store(http.url)


class TestS3Store(StoreContract):
    @pytest.fixture
    def contract_store(self, s3: dict[str, Any]) -> Store:
        return open_store("s3://bkt/data")
