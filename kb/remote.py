"""SSH to GPU hosts, behind one entry point: `connect(target)` gives a session that runs
commands and forwards ports; `fetch_host_key` reads a host's key for first contact;
`script(name)` is one of the scripts run on hosts (kb/remote_scripts/, linted by shellcheck).

asyncssh is asynchronous; the validation code is not. The session runs its own event
loop in a thread so callers stay plain, blocking Python. Nothing here knows Django.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import stat
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import asyncssh

T = TypeVar("T")
# At INFO asyncssh logs every channel and command; the run's own log already has them.
logging.getLogger("asyncssh").setLevel(logging.WARNING)
log = logging.getLogger(__name__)
CONNECT_TIMEOUT_S = 15.0
KEEPALIVE_S = 10  # a host that vanished is noticed within ~3 keepalives
SCRIPTS_DIR = Path(__file__).resolve().parent / "remote_scripts"


@cache
def script(name: str) -> str:
    """The text of a script run on hosts, e.g. `script("launch.sh")`."""
    return (SCRIPTS_DIR / name).read_text(encoding="utf-8")


def sh_command(script_text: str, *args: str) -> str:
    """`sh -c SCRIPT fixgraph ARGS...` for a remote shell: the script and every argument
    one quoted word, so nothing in them is read as shell by the login shell."""
    words = [shlex.quote(word) for word in ("fixgraph", *args)]
    return " ".join(["sh", "-c", shlex.quote(script_text), *words])


def python_command(script_name: str, *args: str) -> str:
    """`python3 -c SCRIPT ARGS...` for a remote shell, every word quoted."""
    words = [shlex.quote(word) for word in args]
    return " ".join(["python3", "-c", shlex.quote(script(script_name)), *words])


def key_warning(key_path: str) -> str | None:
    """A warning when the private key file can be read by others than its owner.

    OpenSSH refuses such a key; FixGraph uses it (the worker may not own the file it
    was given) but says so, once per connection, so the operator can fix the mode."""
    if not key_path:
        return None
    try:
        mode = stat.S_IMODE(os.stat(key_path).st_mode)
    except OSError:
        return None
    if mode & 0o077:
        return (
            f"warning: the private key {key_path} is readable by others (mode {mode:04o}); "
            f"run `chmod 600 {key_path}`"
        )
    return None


@dataclass(frozen=True)
class Target:
    """Where and as whom to connect. `key_path` empty: use the worker's SSH agent."""

    address: str
    port: int
    username: str
    key_path: str
    host_key: str  # pinned, OpenSSH format ("ssh-ed25519 AAAA..."); empty = unknown host


@dataclass(frozen=True)
class CommandResult:
    exit_status: int | None  # None when the command was killed by a signal
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


class RemoteError(Exception):
    """SSH failed in a way that retrying will not fix by itself."""


class HostUnreachable(RemoteError):
    """Connection refused or timed out: nothing ran, so trying again later is safe."""


class HostKeyMismatch(RemoteError):
    """The host offered a key other than the pinned one: refuse, it may be an impostor."""


class CommandTimeout(RemoteError):
    """A remote command ran past its time limit."""


def connect(target: Target, *, timeout: float = CONNECT_TIMEOUT_S) -> Session:
    """An open SSH session to `target`, its host key checked against the pinned one.

    Use as a context manager; the connection and its forwards close on exit.
    """
    if not target.host_key.strip():
        raise HostKeyMismatch(
            f"no host key pinned for {target.address}:{target.port}; register the host "
            "with --accept-host-key after checking its fingerprint"
        )
    session = Session()
    session.warning = key_warning(target.key_path)
    if session.warning:
        log.warning("%s", session.warning)
    try:
        session.open(target, timeout)
    except BaseException:
        session.close()
        raise
    return session


def fetch_host_key(address: str, port: int, *, timeout: float = CONNECT_TIMEOUT_S) -> str:
    """The host's public key in OpenSSH format, for a first contact the user approves."""

    async def fetch() -> str:
        key = await asyncssh.get_server_host_key(address, port, config=[])
        if key is None:
            raise RemoteError(f"{address}:{port} offered no host key")
        return key.export_public_key().decode().strip()

    try:
        return run_to_end(asyncio.wait_for(fetch(), timeout + 1))
    except (OSError, TimeoutError) as exc:
        raise HostUnreachable(f"cannot reach {address}:{port}: {exc}") from exc


def run_to_end(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run`, also for a caller whose thread already runs an event loop (an
    async view, a notebook, Playwright's sync API), where `asyncio.run` refuses."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(1) as pool:  # a thread of its own, with a loop of its own
        return pool.submit(asyncio.run, coroutine).result()


def fingerprint(public_key: str) -> str:
    """SHA256 fingerprint, as `ssh-keygen -l` prints it."""
    return str(asyncssh.import_public_key(public_key).get_fingerprint())


class Session:
    """One SSH connection driven from blocking code: its event loop lives in a thread."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._conn: asyncssh.SSHClientConnection | None = None
        self.warning: str | None = None  # e.g. a private key others can read

    def open(self, target: Target, timeout: float) -> None:
        self._conn = self._call(_open(target, timeout), timeout + 5)

    def run(self, command: str, *, timeout: float, stdin: str | None = None) -> CommandResult:
        """Run `command` in the login shell; a non-zero exit is a result, not an error."""
        return self._call(_run(self._connection(), command, timeout, stdin), timeout + 5)

    def forward(self, remote_port: int) -> int:
        """Forward a local loopback port to the host's 127.0.0.1:`remote_port`; its number."""
        return self._call(_forward(self._connection(), remote_port), 30)

    def close(self) -> None:
        if self._conn is not None and self._loop.is_running():
            conn, self._conn = self._conn, None
            # Closing a connection that already died may fail; that is fine.
            with contextlib.suppress(Exception):
                self._call(_close(conn), 10)
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        if not self._loop.is_running():
            self._loop.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _connection(self) -> asyncssh.SSHClientConnection:
        if self._conn is None:
            raise RemoteError("the SSH session is closed")
        return self._conn

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except TimeoutError as exc:
            future.cancel()
            raise CommandTimeout(f"no answer from the host within {timeout:.0f} s") from exc


async def _open(target: Target, timeout: float) -> asyncssh.SSHClientConnection:
    pinned = asyncssh.import_public_key(target.host_key.strip())
    options: dict[str, Any] = {"client_keys": [target.key_path]} if target.key_path else {}
    try:
        return await asyncssh.connect(
            target.address,
            target.port,
            username=target.username,
            known_hosts=([pinned], [], []),
            server_host_key_algs=[pinned.get_algorithm()],
            connect_timeout=timeout,
            keepalive_interval=KEEPALIVE_S,
            config=[],
            **options,
        )
    except asyncssh.HostKeyNotVerifiable as exc:
        offered = await _offered_fingerprint(target)
        raise HostKeyMismatch(
            f"the host key of {target.address}:{target.port} changed: pinned "
            f"{pinned.get_fingerprint()}, offered {offered}; refusing to connect. If the host "
            "was reinstalled, check the new key and register it again with --accept-host-key."
        ) from exc
    except asyncssh.PermissionDenied as exc:
        raise RemoteError(f"{target.username}@{target.address} refused our key: {exc}") from exc
    except (OSError, TimeoutError, asyncssh.ConnectionLost) as exc:
        raise HostUnreachable(f"cannot reach {target.address}:{target.port}: {exc}") from exc
    except asyncssh.Error as exc:
        raise RemoteError(f"SSH to {target.address}:{target.port} failed: {exc}") from exc


async def _offered_fingerprint(target: Target) -> str:
    try:
        key = await asyncssh.get_server_host_key(target.address, target.port, config=[])
    except (OSError, asyncssh.Error):
        return "(unknown)"
    return str(key.get_fingerprint()) if key else "(none)"


async def _run(
    conn: asyncssh.SSHClientConnection, command: str, timeout: float, stdin: str | None
) -> CommandResult:
    try:
        done = await conn.run(command, input=stdin, check=False, timeout=timeout)
    except asyncssh.TimeoutError as exc:
        raise CommandTimeout(f"command ran past {timeout:.0f} s") from exc
    except (asyncssh.Error, OSError) as exc:
        raise RemoteError(f"the SSH connection failed: {exc}") from exc
    return CommandResult(done.exit_status, _text(done.stdout), _text(done.stderr))


async def _forward(conn: asyncssh.SSHClientConnection, remote_port: int) -> int:
    listener = await conn.forward_local_port("127.0.0.1", 0, "127.0.0.1", remote_port)
    return int(listener.get_port())


async def _close(conn: asyncssh.SSHClientConnection) -> None:
    conn.close()
    await conn.wait_closed()


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data
