from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.client.live import LiveGateway, gateway_on


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with gateway_on(request, tmp_path_factory.mktemp("gateway")) as gw:
        yield gw
