"""The live registry of tests/api, served to the TypeScript end-to-end tests as is."""

from tests.api.conftest import registry

__all__ = ["registry"]
