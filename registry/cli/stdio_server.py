"""A stdio MCP server's process, and its pipes as the official `ClientSession`'s streams.

    server = await StdioServer.spawn(["python", "server.py"], errlog)  # OSError, ValueError
    server = StdioServer.spawn_on_pipes(command, errlog, stdin=r, stdout=w)  # pipes of yours
    async with server:                         # leaving: the server stopped, never left behind
        ...                                    # import the mcp SDK while the server boots
        async with server.session_streams() as (read, write):
            ...                                # ClientSession(read, write): the protocol
        ...                                    # the server exits meanwhile

Hand-written rather than `mcp.client.stdio.stdio_client`, so that the server is spawned
before the `mcp` package is imported: the server's start and the SDK's import overlap.
It mirrors stdio_client (mcp 2.3): the server in a new session (its own process group),
with this process's environment and working directory, its stderr into `errlog`;
newline-delimited JSON-RPC in UTF-8, one line at a time, a line that is not JSON-RPC
handed to the session as the exception its parsing raised; leaving the streams, the
messages accepted are flushed (0.5 s at most) and stdin is closed; stopping, the server
has 2 s from that close to exit on its own, then its process group gets SIGTERM and,
2 s later, SIGKILL; its stdout is drained meanwhile. The one difference: the wait for
the exit is the server's own context exit, not the streams', so what the caller does
in between (`registry capture` writes its files) overlaps the server's exit.

POSIX only (process groups); on Windows `registry.cli.live` uses stdio_client.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from types import TracebackType
from typing import Any, TextIO

import anyio
from anyio.abc import AsyncResource, Process

__all__ = ["EXIT_GRACE", "KILL_GRACE", "StdioServer"]

EXIT_GRACE = 2.0  # from closing the server's stdin to SIGTERM (the SDK's, as the MCP spec asks)
KILL_GRACE = 2.0  # from SIGTERM to SIGKILL
_REAP_TIMEOUT = 2.0  # for the event loop to see a killed process go
_FLUSH_TIMEOUT = 0.5  # for the messages accepted to reach stdin when the streams close
_POLL_INTERVAL = 0.01


class StdioServer:
    """A spawned server: `session_streams()` to speak to it, `async with` to stop it."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self._stdin_closed_at: float | None = None

    @classmethod
    async def spawn(cls, command: Sequence[str], errlog: TextIO) -> StdioServer:
        """Start the server; raises OSError (or ValueError) when it cannot be started.
        Enter the result at once (no await in between) so that it is always stopped."""
        process = await anyio.open_process(list(command), stderr=errlog, start_new_session=True)
        return cls(process)

    @classmethod
    def spawn_on_pipes(
        cls, command: Sequence[str], errlog: TextIO, *, stdin: int, stdout: int
    ) -> StdioServer:
        """Start the server on pipe ends of the caller's (the read end of its stdin, the
        write end of its stdout: the caller writes, closes the other end when done, and
        reads until the server is stopped; `session_streams` is not for it). The server
        gets a process group of its own, stopped as above, but stays in this process's
        session: where the kernel groups tasks by session for CPU shares (Linux
        autogroup), a server in a session of its own is scheduled apart from the relay
        that feeds it, which wakes the relay per message instead of per batch.
        OSError (or ValueError) when it cannot be started; enter it at once."""
        popen = subprocess.Popen(  # anyio's open_process offers no process group
            list(command), stdin=stdin, stdout=stdout, stderr=errlog, process_group=0
        )
        return cls(_Popened(popen))

    async def __aenter__(self) -> StdioServer:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        with anyio.CancelScope(shield=True):  # every wait in it is bounded
            await self._stop()

    @asynccontextmanager
    async def session_streams(self) -> AsyncIterator[tuple[Any, Any]]:
        """(read, write) for `ClientSession`: the server's stdout as `SessionMessage`s
        (or exceptions), and messages to write on its stdin. Leaving: the messages
        accepted flushed, then stdin closed, the server's signal to exit."""
        from anyio.streams.text import TextReceiveStream
        from mcp.shared.message import SessionMessage
        from mcp.types import jsonrpc_message_adapter

        process = self.process
        assert process.stdin is not None and process.stdout is not None
        stdin, stdout = process.stdin, process.stdout
        read_sender, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, write_receiver = anyio.create_memory_object_stream[SessionMessage](0)
        writer_done = anyio.Event()

        def parsed(line: str) -> SessionMessage | Exception:
            try:
                return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
            except ValueError as error:  # pydantic's ValidationError: the session reports it
                return error

        async def stdout_reader() -> None:
            try:
                async with read_sender:
                    try:
                        buffer = ""  # one line at a time: no read-ahead while a delivery waits
                        async for chunk in TextReceiveStream(stdout, encoding="utf-8"):
                            lines = (buffer + chunk).split("\n")
                            buffer = lines.pop()
                            for line in lines:
                                try:
                                    await read_sender.send(parsed(line))
                                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                                    return  # the session is gone; the drain below remains
                    finally:
                        await _drain(process)  # a server blocked on stdout cannot read stdin
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
                pass  # the session sees the connection end when the read stream closes

        async def stdin_writer() -> None:
            try:
                async with write_receiver:
                    async for message in write_receiver:
                        line = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await stdin.send((line + "\n").encode())
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                await read_sender.aclose()  # a request waiting for an answer sees the end
            finally:
                writer_done.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(stdout_reader)
            tasks.start_soon(stdin_writer)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    read_stream.close()  # the reader goes on to drain stdout
                    write_stream.close()
                    with anyio.move_on_after(_FLUSH_TIMEOUT):
                        await writer_done.wait()
                    await self._close_stdin()
                    for stream in (read_stream, write_stream, read_sender, write_receiver):
                        await stream.aclose()
                tasks.cancel_scope.cancel()  # the drain goes on in _stop

    async def _close_stdin(self) -> None:
        if self._stdin_closed_at is None:
            await _close(self.process.stdin)
            self._stdin_closed_at = anyio.current_time()

    async def _stop(self) -> None:
        """stdin closed; EXIT_GRACE from that close for the server to exit; then its
        process group terminated (SIGTERM, SIGKILL after KILL_GRACE); stdout drained
        all along."""
        process = self.process
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_drain, process)
            await self._close_stdin()
            assert self._stdin_closed_at is not None
            if not await _exited(process, self._stdin_closed_at + EXIT_GRACE):
                await _terminate_group(process)
                await _exited(process, anyio.current_time() + _REAP_TIMEOUT)
            await _close(process.stdout)  # ends the drain, even if a survivor holds the pipe
            tasks.cancel_scope.cancel()
        _close_transport(process)


async def _drain(process: Process) -> None:
    """Read and drop what the server still writes on stdout, until it closes (the
    caller's own pipe: the caller drains it)."""
    if process.stdout is None:
        return
    with suppress(
        anyio.EndOfStream,
        anyio.ClosedResourceError,
        anyio.BrokenResourceError,
        ConnectionError,
        OSError,
    ):
        while True:
            await process.stdout.receive()


async def _close(stream: AsyncResource | None) -> None:
    if stream is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.aclose()


async def _exited(process: Process, deadline: float) -> bool:
    """Whether the process is gone by `deadline`. Polled: `process.wait()` also waits for
    its pipes to close, which a child that inherited them can hold open."""
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(_POLL_INTERVAL)
    return True


async def _terminate_group(process: Process) -> None:
    """SIGTERM to the server's process group (its pid: it leads its group), SIGKILL to what is
    left after KILL_GRACE. Only ESRCH proves the group gone (EPERM can be a zombie)."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    except PermissionError:
        pass  # wait, then escalate anyway
    with anyio.move_on_after(KILL_GRACE):
        while _group_alive(process.pid):
            _ = process.returncode  # reaps the leader where reading it does
            await anyio.sleep(_POLL_INTERVAL)
        return
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


class _Popened(Process):
    """A `subprocess.Popen` on the caller's pipes as anyio's Process (no streams)."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen

    async def wait(self) -> int:
        while (code := self._popen.poll()) is None:
            await anyio.sleep(_POLL_INTERVAL)
        return code

    def terminate(self) -> None:
        self._popen.terminate()

    def kill(self) -> None:
        self._popen.kill()

    def send_signal(self, signum: signal.Signals) -> None:
        self._popen.send_signal(signum)

    async def aclose(self) -> None:
        await self.wait()

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.poll()  # reaps it once it exited

    @property
    def stdin(self) -> None:
        return None

    @property
    def stdout(self) -> None:
        return None

    @property
    def stderr(self) -> None:
        return None


def _close_transport(process: Process) -> None:
    """Close asyncio's subprocess transport, which a survivor holding a pipe would keep
    open (and warn about when collected); nothing public reaches it."""
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with suppress(PermissionError):
            close()
