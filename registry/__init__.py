"""MCP tool schema registry: engine, digests, SDK and service."""

__version__ = "0.1.0"
