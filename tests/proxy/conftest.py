"""The live registry of tests/api, served to the proxy's tests as is."""

from tests.api.conftest import registry

__all__ = ["registry"]
