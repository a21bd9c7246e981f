"""The one entry point through which approved code runs: :func:`execute`.

A command runs in its own session with a scrubbed environment, stdout and stderr merged into one
pipe, a timeout and output caps. However it stops (exit, timeout, output flood, cancellation),
what is left of its process tree is killed: background processes never outlive the call.
Isolation tiers plug in at :func:`prepare_launch` (request -> final argv, env and folder).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from sandbox.binding import Binding, BindingMismatch
from sandbox.bwrap import ReadOnly
from sandbox.guard import Snapshot, WorkspaceGuard, describe
from sandbox.info import ProtectedChange, SandboxInfo
from sandbox.lifeline import HANDSHAKE_ENV
from sandbox.output import CommandOutput, OutputLimits, human_size, notice
from sandbox.tiers import Launch, RuntimeChanged, Sandbox, close_readonly, unsandboxed

__all__ = ["ExecRequest", "ExecResult", "execute", "prepare_launch"]

log = logging.getLogger(__name__)

_READ_CHUNK = 64 * 1024
_EXIT_GRACE_SECONDS = 0.2  # after the group is killed, before hunting holders of the output pipe
_DRAIN_SECONDS = 2.0  # after a kill, before the rest of the output is abandoned


@dataclass(frozen=True)
class ExecRequest:
    """One approved command."""

    argv: tuple[str, ...]
    cwd: Path
    timeout_seconds: float
    stdin: bytes | None = None
    """Written to the command then closed; ``None`` gives it ``/dev/null``."""
    bypass: bool = False
    """Run without the box (still a scrubbed environment, timeout and caps); reports UNSANDBOXED."""
    model_output_limit: int = 32 * 1024
    """Characters the model receives: head and tail are kept, the middle is cut with a notice."""
    stream_output_limit: int = 1 << 20
    """Bytes streamed live through ``on_output``; past it one notice line is streamed, then none."""
    kill_output_limit: int = 16 << 20
    """Total output bytes past which the whole process tree is killed."""
    env_extra: Mapping[str, str] | None = None
    """Variables added to the scrubbed environment (secret-looking ones are dropped)."""
    scratch_dir: Path | None = None
    """The session's private temporary folder (``/tmp`` inside the strong tier)."""
    binding: Binding | None = None
    """What the decision to run it approved (see :mod:`sandbox.binding`): checked against
    ``cwd`` right before the process starts, and a mismatch never starts. None: the caller did
    not go through a gate (the sandbox's own tests and benchmarks)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "argv", tuple(self.argv))
        if not self.argv:
            raise ValueError("ExecRequest.argv must name a program")
        if not self.timeout_seconds > 0:
            raise ValueError("ExecRequest.timeout_seconds must be positive")
        if self.model_output_limit < 0 or self.stream_output_limit < 0:
            raise ValueError("ExecRequest output limits must not be negative")
        if self.kill_output_limit <= 0:
            raise ValueError("ExecRequest.kill_output_limit must be positive")


@dataclass(frozen=True)
class ExecResult:
    """What a finished command produced."""

    exit_code: int | None
    """The exit code; minus the signal number when a signal killed it; None if it never started."""
    output: str
    """Exactly what the model receives: capped, with notices (timeout, output limit, truncation)."""
    timed_out: bool
    output_limit_exceeded: bool
    duration_seconds: float
    sandbox: SandboxInfo
    protected: tuple[ProtectedChange, ...] = ()
    """Auto-run paths the command created or changed, and what was done about each (moved to
    the quarantine, restored); the model's ``output`` says the same in words."""


def prepare_launch(
    request: ExecRequest, sandbox: Sandbox, protected: Sequence[ReadOnly] | None = None
) -> tuple[Launch, SandboxInfo]:
    """What is really executed for ``request`` (argv, scrubbed environment, cgroups), and the
    isolation it gets: the seam between the runner and the isolation tiers."""
    return sandbox.prepare(
        request.argv,
        cwd=request.cwd,
        scratch=request.scratch_dir,
        bypass=request.bypass,
        env_extra=request.env_extra,
        protected=protected,
        handshake=True,
    )


async def execute(
    request: ExecRequest,
    on_output: Callable[[str], None] = lambda _text: None,
    *,
    sandbox: Sandbox | None = None,
) -> ExecResult:
    """Run an approved command and return what the model receives.

    ``on_output`` gets the merged output live, chunk by chunk (capped at
    ``stream_output_limit``). ``sandbox`` is the configured isolation (default: none, only a
    scrubbed environment); a ``bypass`` request runs outside it. A program that cannot be started
    gives ``exit_code=None`` and a message, not an exception. If the awaiting task is cancelled,
    the process tree is killed and reaped before ``CancelledError`` propagates.
    """
    sandbox = sandbox or unsandboxed()
    started = time.monotonic()
    guard = None if request.bypass or not request.cwd.is_dir() else sandbox.guard(request.cwd)
    problem = None if guard is None else sandbox.runtime_refusal(request.cwd)
    snapshot: Snapshot | None = None
    readonly: list[ReadOnly] | None = None
    if guard is not None and problem is None:
        recording = asyncio.ensure_future(asyncio.to_thread(_before, guard, sandbox, request.cwd))
        try:
            snapshot, readonly, problem = await asyncio.shield(recording)
        except asyncio.CancelledError:  # the thread still finishes: close what it opened
            recording.add_done_callback(_close_when_recorded)
            raise
    try:
        launch, info = prepare_launch(request, sandbox, readonly)

        def not_started(message: str) -> ExecResult:
            log.info("Command did not start: %s", message)
            text = notice(message)
            on_output(text)
            return ExecResult(None, text, False, False, time.monotonic() - started, info)

        if problem is not None:
            return not_started(problem)
        if not request.cwd.is_dir():
            return not_started(f"The working folder {request.cwd} does not exist.")
        if request.binding is not None:
            try:  # the last moment before the process starts: what runs is what was decided
                request.binding.check(request.cwd)
            except BindingMismatch as exc:
                log.warning("refused a call whose content does not match its approval")
                return not_started(str(exc))
        try:
            result = await _run(
                request, launch, info, on_output, started=started, not_started=not_started
            )
        finally:
            if launch.group is not None:  # whatever is left (daemons included) dies with it
                await asyncio.shield(asyncio.to_thread(launch.group.remove))
    finally:
        close_readonly(readonly or ())
        changes = await _check_after(guard, snapshot)
    if not changes:
        return result
    lines = [notice(line) for line in describe(changes)]
    for line in lines:
        on_output(f"\n{line}")
    output = result.output.rstrip("\n") + "\n" + "\n".join(lines)
    return replace(result, output=output, protected=tuple(changes))


def _before(
    guard: WorkspaceGuard, sandbox: Sandbox, cwd: Path
) -> tuple[Snapshot | None, list[ReadOnly] | None, str | None]:
    """Record the auto-run paths and (strong tier) open what will be mounted read-only:
    ``(snapshot, readonly, why the call must not run)``. Fails closed."""
    try:
        snapshot = guard.before()
    except Exception as exc:  # without the record nothing could be undone
        log.exception("recording the auto-run paths failed")
        return None, None, f"Not run: the workspace's auto-run paths could not be recorded ({exc})."
    if sandbox.level != "strong":
        return snapshot, None, None
    try:
        return snapshot, sandbox.readonly(cwd, snapshot.existing_roots()), None
    except RuntimeChanged as exc:
        return None, None, str(exc)


def _close_when_recorded(
    recording: asyncio.Future[tuple[Snapshot | None, list[ReadOnly] | None, str | None]],
) -> None:
    if not recording.cancelled() and recording.exception() is None:
        close_readonly(recording.result()[1] or ())


async def _check_after(
    guard: WorkspaceGuard | None, snapshot: Snapshot | None
) -> list[ProtectedChange]:
    """Undo what the command did to the auto-run paths; runs even when the call is cancelled
    (the changes are then only logged: a cancelled call has no result to report them in)."""
    if guard is None or snapshot is None:
        return []
    try:
        return await asyncio.shield(asyncio.to_thread(guard.after, snapshot))
    except Exception:  # never let the check hide the command's result; it is logged loudly
        log.exception("checking the protected paths after a command failed")
        return []


async def _run(
    request: ExecRequest,
    spec: Launch,
    info: SandboxInfo,
    on_output: Callable[[str], None],
    *,
    started: float,
    not_started: Callable[[str], ExecResult],
) -> ExecResult:
    # With cgroups, the first process (a shell) waits for one line on stdin: it is sent once the
    # process is in its cgroups, so nothing the command starts can escape the process limit.
    gated = spec.group is not None
    stdin_data = (b"\n" if gated else b"") + (request.stdin or b"")
    stdin = asyncio.subprocess.PIPE if stdin_data else asyncio.subprocess.DEVNULL
    env, pass_fds = dict(spec.env), spec.pass_fds
    ours: list[int] = []  # the server's ends of the handshake (sandbox.lifeline)
    theirs: list[int] = []
    if spec.handshake:
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        ours, theirs = [ready_r, go_w], [ready_w, go_r]
        env[HANDSHAKE_ENV] = f"{ready_w},{go_r}"
        pass_fds = (*pass_fds, ready_w, go_r)
    read_fd, write_fd = os.pipe()
    try:
        try:
            proc = await asyncio.create_subprocess_exec(
                *spec.argv,
                cwd=spec.cwd,
                env=env,
                stdin=stdin,
                stdout=write_fd,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
                pass_fds=pass_fds,
            )
        finally:
            os.close(write_fd)  # the child holds its own copy; EOF comes when all copies close
            for fd in theirs:
                os.close(fd)
    except OSError as exc:
        _close(read_fd, *ours)
        return not_started(f"Could not start {spec.argv[0]!r}: {exc.strerror or exc}.")
    except ValueError as exc:  # e.g. a NUL byte in an argument: nothing can start
        _close(read_fd, *ours)
        return not_started(f"Could not start the command: {exc}.")
    except BaseException:
        _close(read_fd, *ours)
        raise

    log.debug("Started pid %d: %s (sandbox %s)", proc.pid, spec.argv[0], info.level)
    if spec.group is not None and not await asyncio.to_thread(spec.group.add, proc.pid):
        _signal_group(proc.pid, signal.SIGKILL)  # fail closed: it never passed the gate
        await proc.wait()
        _close(read_fd, *ours)
        return not_started("Could not put the command in its cgroup; it was not run.")
    limits = OutputLimits(
        request.model_output_limit, request.stream_output_limit, request.kill_output_limit
    )
    output = CommandOutput(on_output, limits)
    answer = asyncio.create_task(_answer_handshake(*ours)) if ours else None
    try:
        timed_out, limit_exceeded = await _supervise(proc, read_fd, output, request, stdin_data)
    finally:
        if answer is not None:
            answer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await answer
    output.finish()
    if limit_exceeded:
        output.addnotice(
            f"Killed: the output passed {human_size(request.kill_output_limit)} (the output limit)."
        )
    if timed_out:
        output.addnotice(f"Killed after {request.timeout_seconds:g} s (toolTimeoutSeconds).")
    duration = time.monotonic() - started
    log.debug("pid %d finished: exit %s in %.2f s", proc.pid, proc.returncode, duration)
    return ExecResult(
        exit_code=proc.returncode,
        output=output.model_text(),
        timed_out=timed_out,
        output_limit_exceeded=limit_exceeded,
        duration_seconds=duration,
        sandbox=info,
    )


async def _supervise(
    proc: asyncio.subprocess.Process,
    read_fd: int,
    output: CommandOutput,
    request: ExecRequest,
    stdin_data: bytes,
) -> tuple[bool, bool]:
    """Read until the command ends, kill what is left, reap: ``(timed_out, limit_exceeded)``."""
    pipe_inode = os.fstat(read_fd).st_ino
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=_READ_CHUNK)
    pipe = os.fdopen(read_fd, "rb", buffering=0)
    transport: asyncio.BaseTransport | None = None
    tasks: list[asyncio.Task[object]] = []
    timed_out = limit_exceeded = False
    try:
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream), pipe
        )
        waiter: asyncio.Task[object] = asyncio.create_task(proc.wait())
        pump: asyncio.Task[object] = asyncio.create_task(_pump(stream, output))
        tasks += [waiter, pump]
        if stdin_data:
            tasks.append(asyncio.create_task(_feed_stdin(proc, stdin_data)))
        try:
            async with asyncio.timeout(request.timeout_seconds):
                await asyncio.wait((waiter, pump), return_when=asyncio.FIRST_COMPLETED)
                if pump.done() and pump.result() is False:
                    limit_exceeded = True
                else:
                    await waiter  # the output ended; the process may still be running
        except TimeoutError:
            timed_out = True
        if timed_out or limit_exceeded:
            log.warning("Killing pid %d: %s", proc.pid, "timeout" if timed_out else "output limit")
            await _kill_tree(proc.pid, pipe_inode)
        else:
            _signal_group(proc.pid, signal.SIGKILL)  # background processes do not outlive it
        await waiter
        if not pump.done():
            await asyncio.wait((pump,), timeout=_EXIT_GRACE_SECONDS)
        if not pump.done():  # something outside the group still holds the output pipe
            await _kill_tree(proc.pid, pipe_inode)
            await asyncio.wait((pump,), timeout=_DRAIN_SECONDS)
        if not pump.done():
            log.warning("pid %d: output still open after the kill; abandoning it", proc.pid)
        elif pump.result() is False:  # the limit was passed while draining
            limit_exceeded = True
        return timed_out, limit_exceeded
    finally:
        if proc.returncode is None:  # cancelled or failed: nothing may outlive the call
            with contextlib.suppress(asyncio.CancelledError):
                await _kill_tree(proc.pid, pipe_inode)
            await proc.wait()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        if transport is not None:
            transport.close()
        else:
            pipe.close()


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


async def _answer_handshake(ready_r: int, go_w: int) -> None:
    """The strong level's handshake (:mod:`sandbox.lifeline`): once the sandbox says it is
    ready, let the command start. Closing ``go`` unanswered (the call ended, or the server
    died) means the command never starts."""
    loop = asyncio.get_running_loop()
    readable: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not readable.done():
            readable.set_result(None)

    try:
        loop.add_reader(ready_r, ready)
        try:
            await readable
        finally:
            loop.remove_reader(ready_r)
        # end of file instead: the sandbox never got there; a closed go: the command is gone
        with contextlib.suppress(OSError):
            if os.read(ready_r, 1) == b"\n":
                os.write(go_w, b"\n")
    finally:
        _close(ready_r, go_w)


async def _pump(stream: asyncio.StreamReader, output: CommandOutput) -> bool:
    """Read until end of output (True) or until the kill limit is passed (False)."""
    while data := await stream.read(_READ_CHUNK):
        if not output.feed(data):
            return False
    return True


async def _feed_stdin(proc: asyncio.subprocess.Process, data: bytes) -> None:
    """Write ``data`` to the command's stdin, then close it (a command may exit without reading)."""
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        log.debug("pid %d closed its stdin before reading all of it", proc.pid)
    finally:
        proc.stdin.close()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _kill_tree(leader: int, pipe_inode: int) -> None:
    """SIGKILL the session ``leader`` started, every descendant still linked to it, and every
    process holding the output pipe (a daemon that left the session but still writes to it).

    The group is stopped first so the tree cannot change while ``/proc`` is read. A process that
    left the session and no longer holds the pipe is not found: that needs an OS isolation tier.
    """
    _signal_group(leader, signal.SIGSTOP)
    try:
        stragglers = await asyncio.to_thread(_find_tree, leader, pipe_inode)
    finally:
        _signal_group(leader, signal.SIGKILL)
    for pid in stragglers:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    if stragglers:
        log.debug("Killed %d processes outside group %d", len(stragglers), leader)


def _find_tree(leader: int, pipe_inode: int) -> set[int]:
    """Processes that belong to the command started as ``leader`` (empty without ``/proc``)."""
    try:
        entries = [int(e) for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return set()
    children: dict[int, list[int]] = {}
    found: set[int] = set()
    for pid in entries:
        if pid in (1, os.getpid()):  # the server itself holds the pipe's read end
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
            ppid, pgrp, session = (int(f) for f in stat[stat.rfind(b")") + 2 :].split()[1:4])
        except (OSError, ValueError):
            continue
        children.setdefault(ppid, []).append(pid)
        if leader in (pgrp, session) or _holds_pipe(pid, pipe_inode):
            found.add(pid)
    queue = [leader, *found]
    while queue:
        for child in children.get(queue.pop(), ()):
            if child not in found:
                found.add(child)
                queue.append(child)
    return found


def _holds_pipe(pid: int, inode: int) -> bool:
    target = f"pipe:[{inode}]"
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                return True
    return False
