"""Every test gets its own user data folder: nothing a test does (rules remembered with
"Always allow", sessions) reaches the real one, and servers started by a test inherit it."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.datadir import ENV


@pytest.fixture(autouse=True)
def private_data_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    folder = tmp_path_factory.mktemp("gatehouse-data")
    monkeypatch.setenv(ENV, str(folder))
    return folder
