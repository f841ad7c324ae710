"""Print the API's OpenAPI document as YAML: `python -m registry.api.openapi > openapi.yaml`.

`make openapi` runs this; `tests/api/test_openapi.py` fails when the file at the
repository root and the app disagree.
"""

from __future__ import annotations

import sys
from typing import Any

import yaml

from registry.api.app import create_app
from registry.api.settings import Settings

__all__ = ["openapi_document", "openapi_yaml"]


def openapi_document() -> dict[str, Any]:
    # The app is only built, never started: the URL is not connected to.
    app = create_app(Settings(database_url="postgresql://registry@localhost/openapi"))
    document: dict[str, Any] = app.openapi_schema.to_schema()
    return document


def openapi_yaml() -> str:
    return yaml.safe_dump(openapi_document(), sort_keys=False, allow_unicode=True, width=100)


if __name__ == "__main__":
    sys.stdout.write(openapi_yaml())
