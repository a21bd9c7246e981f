"""Running git over a hostile workspace: the binary, the environment and the configuration.

See :mod:`engine.memory.shadow` for why each setting is there. Every command runs from the data
folder with an environment built from scratch and a timeout; nothing of the user's or the
workspace's git configuration is read.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from sandbox.runtime import UntrustedProgram, find_program, verify_program

GIT_TIMEOUT_SECONDS = 120.0
ATTRIBUTES = "* -text -eol -ident -filter -working-tree-encoding -export-subst\n"
CONFIG: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.untrackedCache", "false"),
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.symlinks", "true"),
    ("core.fileMode", "true"),
    ("core.ignoreCase", "false"),
    ("core.precomposeUnicode", "false"),
    ("core.quotePath", "false"),
    ("core.sparseCheckout", "false"),
    ("core.splitIndex", "false"),
    ("core.excludesFile", "/dev/null"),
    ("core.attributesFile", "/dev/null"),
    ("submodule.recurse", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)


class ShadowError(Exception):
    """git could not be run, or failed."""


def find_git(workspace: Path) -> str:
    """The git binary to run (outside the workspace, not writable by others)."""
    git = find_program("git", workspace)
    if git is None:
        raise ShadowError("git is not installed (checkpoints need it)")
    try:
        verify_program(os.path.realpath(git))
    except (OSError, UntrustedProgram) as exc:
        raise ShadowError(f"{git} cannot be trusted: {exc}") from exc
    return git


class Git:
    """git for one shadow repository (``git_dir``, ``index``) over one work tree."""

    def __init__(
        self, *, folder: Path, git_dir: Path, index: Path, home: Path, workspace: Path,
        binary: str | None = None,
    ) -> None:  # fmt: skip
        self.folder = folder
        self.git_dir = git_dir
        self.index = index
        self.home = home
        self.workspace = workspace
        self._git = binary

    def _env(self) -> dict[str, str]:
        git = self._git or ""
        return {
            "PATH": os.pathsep.join(dict.fromkeys([os.path.dirname(git), "/usr/bin", "/bin"])),
            "GIT_DIR": str(self.git_dir),
            "GIT_WORK_TREE": str(self.workspace),
            "GIT_INDEX_FILE": str(self.index),
            "GITCONFIG_NOSYSTEM": "1",
            "GITCONFIG_GLOBAL": "/dev/null",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "HOME": str(self.home),
            "XDGCONFIG_HOME": str(self.home),
            "LC_ALL": "C",
            "GIT_AUTHOR_NAME": "Gatehouse",
            "GIT_AUTHOR_EMAIL": "gatehouse@localhost",
            "GIT_COMMITTER_NAME": "Gatehouse",
            "GIT_COMMITTER_EMAIL": "gatehouse@localhost",
        }

    def run(
        self, *args: str, stdin: bytes | None = None, check: bool = True, work_tree: bool = True
    ) -> bytes:
        """Run one git command; its stdout."""
        argv, env = self._command(args, work_tree)
        try:
            done = subprocess.run(
                argv,
                input=stdin,
                capture_output=True,
                env=env,
                cwd=self.folder,
                timeout=GIT_TIMEOUT_SECONDS,
                check=False,
                close_fds=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise ShadowError(f"git {args[0]} could not run: {exc}") from exc
        if check and done.returncode != 0:
            detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise ShadowError(f"git {args[0]} failed: {detail[-1] if detail else done.returncode}")
        return done.stdout

    def _command(
        self, args: Sequence[str], work_tree: bool = True
    ) -> tuple[list[str], dict[str, str]]:
        if self._git is None:
            self._git = find_git(self.workspace)
        argv = [self._git]
        for key, value in CONFIG:
            argv += ["-c", f"{key}={value}"]
        argv += args
        env = self._env()
        if not work_tree:
            del env["GIT_WORK_TREE"], env["GIT_DIR"]
        return argv, env

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        """Start a read-only git command that runs beside the next ones."""
        argv, env = self._command(args)
        try:
            return subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                cwd=self.folder,
                close_fds=True,
            )
        except OSError as exc:
            raise ShadowError(f"git {args[0]} could not run: {exc}") from exc

    @staticmethod
    def finish(proc: subprocess.Popen[bytes]) -> bytes:
        try:
            out, _ = proc.communicate(timeout=GIT_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired as exc:
            proc.kill()
            proc.communicate()
            raise ShadowError("git ls-files did not finish in time") from exc
        if proc.returncode != 0:
            raise ShadowError(f"git ls-files failed ({proc.returncode})")
        return out
