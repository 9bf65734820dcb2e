from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.client.live import LiveGateway, serve_gateway


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    with serve_gateway(tmp_path_factory.mktemp("gateway")) as gw:
        yield gw
