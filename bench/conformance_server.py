"""An MCP server with the MCP conformance suite's own tools, ungated or gated.

    python bench/conformance_server.py --port 8801                       # the ungated twin
    python bench/conformance_server.py --port 8802 --registry URL \\
        --token T --namespace conformance                                 # gated: synced toolset
    python bench/conformance_server.py --print-tools                     # the tools as listed

Streamable HTTP on http://127.0.0.1:PORT/mcp, the official `mcp` SDK's
`MCPServer` (both servers the same code): the tools named by the server
scenarios of `@modelcontextprotocol/conformance` (tools-call-*, json-schema-2020-12,
elicitation-sep1034-defaults, elicitation-sep1330-enums), and the prompt,
resources and completion its other scenarios read. Gated, the toolset comes
from a registry into which bench/conformance_bench.py published the twin's own
listing, and `gate_mcpserver` gates every call. Run by bench/conformance_bench.py.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
from pathlib import Path
from typing import Any

from mcp import types
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts.base import UserMessage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# a 1x1 red PNG and a 1-sample WAV
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
        "0000000c4944415408d763f8cfc000000301010018dd8db40000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(
    b"RIFF"
    + (38).to_bytes(4, "little")
    + b"WAVEfmt "
    + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (1).to_bytes(2, "little")
    + (8000).to_bytes(4, "little")
    + (16000).to_bytes(4, "little")
    + (2).to_bytes(2, "little")
    + (16).to_bytes(2, "little")
    + b"data"
    + (2).to_bytes(4, "little")
    + b"\x00\x00"
).decode()

JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


async def elicited(ctx: Context, message: str, schema: dict[str, Any], said: str) -> list[Any]:
    """Ask the client (`elicitation/create`) and say what came back."""
    result = await ctx.session.elicit(message, requested_schema=schema)  # type: ignore[arg-type]
    return [text(f"{said}: action={result.action}, content={result.content}")]


def build() -> MCPServer:
    app = MCPServer("conformance-tools")

    @app.tool(name="test_simple_text", description="Returns simple text", structured_output=False)
    def simple_text() -> list[Any]:
        return [text("This is a simple text response for testing.")]

    @app.tool(name="test_image_content", description="Returns an image", structured_output=False)
    def image_content() -> list[Any]:
        return [types.ImageContent(type="image", data=PNG, mime_type="image/png")]

    @app.tool(name="test_audio_content", description="Returns audio", structured_output=False)
    def audio_content() -> list[Any]:
        return [types.AudioContent(type="audio", data=WAV, mime_type="audio/wav")]

    @app.tool(
        name="test_embedded_resource",
        description="Returns an embedded resource",
        structured_output=False,
    )
    def embedded_resource() -> list[Any]:
        return [
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="test://embedded-resource",
                    mime_type="text/plain",
                    text="This is an embedded resource content.",
                ),
            )
        ]

    @app.tool(
        name="test_multiple_content_types",
        description="Returns text, image, resource",
        structured_output=False,
    )
    def multiple_content_types() -> list[Any]:
        return [
            text("Multiple content types test:"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="test://mixed-content-resource",
                    mime_type="application/json",
                    text=json.dumps({"test": "data", "value": 123}),
                ),
            ),
        ]

    @app.tool(
        name="test_tool_with_logging", description="Logs while it runs", structured_output=False
    )
    async def tool_with_logging(ctx: Context) -> list[Any]:
        await ctx.info("Tool execution started")
        await asyncio.sleep(0.05)
        await ctx.info("Tool processing data")
        await asyncio.sleep(0.05)
        await ctx.info("Tool execution completed")
        return [text("Tool with logging executed")]

    @app.tool(
        name="test_tool_with_progress", description="Reports progress", structured_output=False
    )
    async def tool_with_progress(ctx: Context) -> list[Any]:
        for done in (0, 50, 100):
            await ctx.report_progress(done, 100)
            if done < 100:
                await asyncio.sleep(0.05)
        return [text("Tool with progress executed")]

    @app.tool(name="test_error_handling", description="Always fails", structured_output=False)
    def error_handling() -> list[Any]:
        raise RuntimeError("This tool intentionally returns an error for testing")

    @app.tool(name="test_sampling", description="Asks the client's LLM", structured_output=False)
    async def sampling(prompt: str, ctx: Context) -> list[Any]:
        result = await ctx.session.create_message(
            [types.SamplingMessage(role="user", content=text(prompt))], max_tokens=100
        )
        content = result.content
        said = content.text if isinstance(content, types.TextContent) else str(content)
        return [text(f"LLM response: {said}")]

    @app.tool(name="test_elicitation", description="Asks the user", structured_output=False)
    async def elicitation(message: str, ctx: Context) -> list[Any]:
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        return await elicited(ctx, message, schema, "User response")

    @app.tool(
        name="test_elicitation_sep1034_defaults",
        description="Elicits with defaults",
        structured_output=False,
    )
    async def elicitation_defaults(ctx: Context) -> list[Any]:
        schema = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {
                    "type": "string",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "default": True},
            },
        }
        return await elicited(ctx, "Defaults", schema, "Elicitation completed")

    @app.tool(
        name="test_elicitation_sep1330_enums",
        description="Elicits every enum form",
        structured_output=False,
    )
    async def elicitation_enums(ctx: Context) -> list[Any]:
        titled = [{"const": f"value{i}", "title": f"Option {i}"} for i in (1, 2, 3)]
        schema = {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": titled},
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {"type": "array", "items": {"anyOf": titled}},
            },
        }
        return await elicited(ctx, "Enums", schema, "Elicitation completed")

    @app.tool(
        name="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features",
        structured_output=False,
    )
    def json_schema_tool(name: str | None = None, address: dict[str, Any] | None = None) -> str:
        return f"name={name} address={address}"

    # the suite's listing must show the 2020-12 schema as written, not one derived
    app._tool_manager.get_tool("json_schema_2020_12_tool").parameters = JSON_SCHEMA_2020_12  # type: ignore[union-attr]

    @app.resource("test://static-text", name="static-text", mime_type="text/plain")
    def static_text() -> str:
        return "This is the content of the static text resource."

    @app.resource("test://static-binary", name="static-binary", mime_type="image/png")
    def static_binary() -> bytes:
        return base64.b64decode(PNG)

    @app.resource("test://template/{id}/data", name="template", mime_type="application/json")
    def template(id: str) -> str:
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @app.prompt(name="test_simple_prompt", description="A simple prompt")
    def simple_prompt() -> str:
        return "This is a simple prompt for testing."

    @app.prompt(name="test_prompt_with_arguments", description="A prompt with arguments")
    def prompt_with_arguments(arg1: str, arg2: str) -> str:
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @app.prompt(name="test_prompt_with_image", description="A prompt with an image")
    def prompt_with_image() -> list[UserMessage]:
        return [
            UserMessage(types.ImageContent(type="image", data=PNG, mime_type="image/png")),
            UserMessage("Please analyze the image above."),
        ]

    @app.prompt(name="test_prompt_with_embedded_resource", description="A prompt with a resource")
    def prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
        resource = types.TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        )
        return [
            UserMessage(types.EmbeddedResource(type="resource", resource=resource)),
            UserMessage("Please process the embedded resource above."),
        ]

    # logging/setLevel and resources/(un)subscribe: handshake-era methods MCPServer
    # leaves to the low-level server (deprecated in 2026-07-28)
    lowlevel = app._lowlevel_server

    async def accepted(ctx: Any, params: Any) -> types.EmptyResult:
        return types.EmptyResult()

    lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, accepted)
    lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, accepted)
    lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, accepted)

    @app.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> types.Completion:
        return types.Completion(values=[], total=0, has_more=False)

    return app


async def listed_tools() -> list[dict[str, Any]]:
    """The twin's own tools as it lists them (what the bench publishes)."""
    tools = await build().list_tools()
    return [
        {
            k: v
            for k, v in t.model_dump(by_alias=True, exclude_none=True, mode="json").items()
            if k != "_meta"
        }
        for t in tools
    ]


async def gated(app: MCPServer, registry: str, token: str, namespace: str) -> None:
    from registry.sdk import Toolset
    from registry.sdk.mcp_adapter import gate_mcpserver

    toolset = await Toolset.sync(registry, namespace, token=token)
    gate_mcpserver(app, toolset)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int)
    parser.add_argument("--registry")
    parser.add_argument("--token")
    parser.add_argument("--namespace", default="conformance")
    parser.add_argument("--print-tools", action="store_true")
    args = parser.parse_args()
    if args.print_tools:
        print(json.dumps(asyncio.run(listed_tools())))
        return
    app = build()
    if args.registry:
        asyncio.run(gated(app, args.registry, args.token, args.namespace))
    import uvicorn

    uvicorn.run(app.streamable_http_app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
