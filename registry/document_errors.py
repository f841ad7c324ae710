"""What refusing a document takes: its limits and its error (registry/documents.py
reads JSON and YAML under them; registry/yaml_documents.py is the YAML side,
imported on the first YAML document)."""

from __future__ import annotations

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_DOCUMENT_DEPTH",
    "MAX_DOCUMENT_NODES",
    "MAX_EXPANDED_NODES",
    "MAX_YAML_ALIASES",
    "DocumentError",
    "located",
]

MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
MAX_DOCUMENT_DEPTH = 256
# Twice the engine's 100,000 schema nodes: a schema at that limit also holds its
# `properties` maps, `required` and `enum` arrays.
MAX_DOCUMENT_NODES = 200_000
MAX_YAML_ALIASES = 1_000
MAX_EXPANDED_NODES = 1_000_000


class DocumentError(ValueError):
    """A document that cannot be read or is refused. Lines and columns are 1-based."""

    def __init__(
        self,
        source: str,
        message: str,
        line: int | None = None,
        column: int | None = None,
        pointer: str | None = None,
    ) -> None:
        self.source = source
        self.message = message
        self.line = line
        self.column = column
        self.pointer = pointer
        super().__init__(self._render())

    def _render(self) -> str:
        return located(self.source, self.line, self.column, self.pointer, self.message)


def located(
    source: str, line: int | None, column: int | None, pointer: str | None, message: str
) -> str:
    """`file:line:col: /pointer: message`, leaving out the parts not known."""
    where = source
    if line is not None:
        where += f":{line}"
        if column is not None:
            where += f":{column}"
    if pointer:
        where += f": {pointer}"
    return f"{where}: {message}"
