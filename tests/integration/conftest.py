import pytest

from harness.models.engine import EngineError, find_server_binary
from harness.models.model_files import cache_dir


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def embedded_engine_installed():
    try:
        find_server_binary()
    except EngineError as exc:
        pytest.fail(f"integration tests need the embedded engine: {exc}")
