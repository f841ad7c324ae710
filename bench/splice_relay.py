"""The cheapest stdio relay a process can be, the floor under `registry proxy` in
bench/proxy_bench.py: spawns COMMAND and moves bytes both ways with os.splice (the
kernel copies pipe to pipe, no byte reaches Python), one thread per direction.

    python bench/splice_relay.py [--own-session] COMMAND [ARGS...]

What it costs over calling COMMAND directly is the extra process hop alone: two more
pipes, a wakeup per read, a third process on the machine's cores. Linux only.
`--own-session`: COMMAND in a session of its own (as `setsid` would), which Linux's
autogroup schedules apart from this relay: what `registry proxy` did before its
upstream stayed in the proxy's session.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import IO

_CHUNK = 1 << 16


def pump(source: int, target: int) -> None:
    try:
        while os.splice(source, target, _CHUNK):
            pass
    except OSError:
        pass  # a side closed: the relay ends with it


def to_child(stdin: IO[bytes]) -> None:
    pump(0, stdin.fileno())
    stdin.close()  # the host's EOF, passed on


def main(command: list[str]) -> int:
    own_session = command[:1] == ["--own-session"]
    child = subprocess.Popen(
        command[own_session:],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=own_session,
    )
    assert child.stdin is not None and child.stdout is not None
    threading.Thread(target=to_child, args=(child.stdin,), daemon=True).start()
    pump(child.stdout.fileno(), 1)
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
