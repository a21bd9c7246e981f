"""Every test gets its own data folder: sessions, checkpoints and the audit log written by a
server under test (children inherit the environment) never reach the user's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def private_data_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("data")
    monkeypatch.setenv("GATEHOUSE_DATA_DIR", str(folder))
    yield folder
