"""Landlock (Linux >= 5.13) for the standard isolation tier, through raw syscalls with ctypes.

:func:`restrict` confines the calling process (and everything it later executes) to an allow-list:
``writable`` paths get every filesystem right beneath them, ``readable`` paths get read + execute.
On ABI >= 4 it can refuse all TCP bind/connect; on ABI >= 6 it scopes signals and abstract UNIX
sockets to the sandbox, so the child can neither signal the server nor reach its abstract sockets.

Landlock can only *allow*: it cannot subtract a path from a granted tree. "Read everything but the
home folder" is therefore computed by :func:`readable_cover`, which replaces every folder that has a
hidden path beneath it by its entries, recursively (so the folder itself cannot be listed).

This module imports only the standard library: the launcher runs it with ``python -S -I``.
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys

from sandbox.paths import HIDDEN_ROOTS, SYSTEM_SECRETS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = [
    "DEFAULT_HIDDEN",
    "DEVICE_FILES",
    "LandlockError",
    "abi_version",
    "default_readable",
    "readable_cover",
    "restrict",
]

# Syscall numbers: the same in the x86_64 and aarch64 tables (only 64-bit processes).
_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}

# Filesystem access rights, by the ABI version that introduced them.
_EXECUTE = 1 << 0
_WRITE_FILE = 1 << 1
_READ_FILE = 1 << 2
_READ_DIR = 1 << 3
_REMOVE_DIR = 1 << 4
_REMOVE_FILE = 1 << 5
_MAKE_CHAR = 1 << 6
_MAKE_DIR = 1 << 7
_MAKE_REG = 1 << 8
_MAKE_SOCK = 1 << 9
_MAKE_FIFO = 1 << 10
_MAKE_BLOCK = 1 << 11
_MAKE_SYM = 1 << 12
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3
_IOCTL_DEV = 1 << 15  # ABI 5
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1}
_FS_ALL = (1 << 16) - 1  # ABI >= 5 (ABI 6 and 7 add no filesystem right)
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV  # valid on a non-dir
_READ_RIGHTS = _EXECUTE | _READ_FILE | _READ_DIR
_DEVICE_RIGHTS = _READ_FILE | _WRITE_FILE | _TRUNCATE | _IOCTL_DEV

_NET_BIND_TCP = 1 << 0  # ABI 4
_NET_CONNECT_TCP = 1 << 1  # ABI 4
_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
_SCOPE_SIGNAL = 1 << 1  # ABI 6

_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

DEFAULT_HIDDEN: tuple[str, ...] = (
    *HIDDEN_ROOTS,
    "/dev",  # raw disks (readable by root without capabilities), other terminals; see DEVICE_FILES
    "/dev/shm",
    *SYSTEM_SECRETS,
)
"""What the default readable set leaves out (re-expose prefixes with ``extra``)."""

DEVICE_FILES: tuple[str, ...] = (
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
)
"""Device files :func:`restrict` always grants read + write (plus listing ``/dev``)."""


class LandlockError(RuntimeError):
    """A requested Landlock restriction could not be applied."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


_libc: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL:
    global _libc  # noqa: PLW0603 - loaded once, on first use
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def _syscalls() -> tuple[int, int, int] | None:
    if not sys.platform.startswith("linux") or ctypes.sizeof(ctypes.c_void_p) != 8:
        return None  # not Linux, or a 32-bit or x32 process (other syscall numbers)
    return _SYSCALLS.get(os.uname().machine)


def _syscall(nr: int, *args: int | ctypes.Structure) -> int:
    c_args = [
        ctypes.byref(a) if isinstance(a, ctypes.Structure) else ctypes.c_long(a) for a in args
    ]
    result = int(_lib().syscall(ctypes.c_long(nr), *c_args))
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def abi_version() -> int:
    """The Landlock ABI version the kernel offers; 0 when unsupported (or an unknown arch)."""
    numbers = _syscalls()
    if numbers is None:
        return 0
    try:
        return _syscall(numbers[0], 0, 0, _CREATE_RULESET_VERSION)
    except OSError:  # ENOSYS (old kernel), EOPNOTSUPP (disabled at boot)
        return 0


def _real(path: str) -> str:
    return os.path.realpath(path)


def _beneath(path: str, root: str) -> bool:
    return path == root or path.startswith(root if root.endswith("/") else root + "/")


def readable_cover(roots: Iterable[str], exclude: Iterable[str]) -> list[str]:
    """Existing real paths that together cover ``roots`` minus ``exclude``.

    A root with an excluded path beneath it is replaced by its entries, recursively, so the result
    is a list of rule roots none of which contains an excluded path. Symlinks are resolved: an
    entry pointing into an excluded tree (``/var/run -> /run``) is dropped.
    """
    excluded = [_real(p) for p in exclude]
    out: list[str] = []
    seen: set[str] = set()

    def visit(path: str, candidates: list[str]) -> None:
        """``candidates``: the excluded paths that can matter for ``path``."""
        if path in seen:
            return
        seen.add(path)
        if any(_beneath(path, e) for e in candidates):
            return
        below = [e for e in candidates if _beneath(e, path)]
        if not below:
            out.append(path)
            return
        try:
            with os.scandir(path) as scan:
                entries = [(e.path, e.is_symlink()) for e in scan]
        except OSError:  # unreadable: leave it out
            return
        for child, link in entries:
            if not link:  # a real child: only what is excluded beneath ``path`` can matter
                visit(child, below)
            elif os.path.exists(child):  # a symlink may point anywhere
                visit(_real(child), excluded)

    for root in roots:
        if os.path.exists(root):
            visit(_real(root), excluded)
    return _outermost(out)


def _outermost(paths: Iterable[str]) -> list[str]:
    """``paths`` without those beneath another one (``/usr/bin`` goes when ``/usr`` is there)."""
    kept: list[str] = []
    for path in sorted(set(paths), key=lambda p: p.split("/")):
        if not kept or not _beneath(path, kept[-1]):
            kept.append(path)
    return kept


def default_readable(
    hidden: Sequence[str], extra: Sequence[str], *, deny: Sequence[str] = ()
) -> list[str]:
    """``/`` minus ``hidden`` and ``deny``, plus ``extra`` minus ``deny``.

    ``hidden`` is left out by default but may be re-exposed by ``extra`` (the interpreter prefix
    under ``/root``); ``deny`` is never readable, whatever ``extra`` says.
    """
    return _outermost([*readable_cover(["/"], [*hidden, *deny]), *readable_cover(extra, deny)])


def _add_rule(ruleset_fd: int, path: str, access: int, add_rule: int, deny: list[str]) -> bool:
    """Grant ``access`` beneath ``path``; False when the path does not exist."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # no /proc
            real = _real(path)
        for denied in deny:
            if _beneath(denied, real):
                raise LandlockError(f"{denied!r} is inside allowed {path!r}: cannot subtract it")
            if _beneath(real, denied):
                raise LandlockError(f"allowed {path!r} is inside denied {denied!r}")
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= _FILE_RIGHTS
        attr = _PathBeneathAttr(allowed_access=access, parent_fd=fd)
        _syscall(add_rule, ruleset_fd, _RULE_PATH_BENEATH, attr, 0)
    finally:
        os.close(fd)
    return True


def restrict(
    *,
    writable: Sequence[str],
    readable: Sequence[str],
    block_tcp: bool,
    scope: bool,
    deny: Sequence[str] = (),
    devices: bool = True,
) -> None:
    """Confine this process and its future children; irreversible.

    ``writable`` paths must exist (:class:`LandlockError` otherwise); ``readable`` paths that do
    not exist are skipped. ``block_tcp`` needs ABI >= 4 and ``scope`` ABI >= 6: asking for them on
    an older kernel raises instead of silently doing less. ``deny`` is a last check: no rule may
    cover a denied path (Landlock cannot subtract it) nor lie inside one (put a home folder that
    holds the workspace in ``hidden``, not ``deny``). ``devices`` grants :data:`DEVICE_FILES`.
    Needs ``no_new_privs`` (set here if not yet) or CAP_SYS_ADMIN.
    """
    numbers = _syscalls()
    abi = abi_version()
    if numbers is None or abi == 0:
        raise LandlockError("Landlock is not supported by this kernel or architecture")
    create, add_rule, restrict_self = numbers
    if block_tcp and abi < 4:
        raise LandlockError(f"blocking TCP needs Landlock ABI 4, the kernel has {abi}")
    if scope and abi < 6:
        raise LandlockError(f"scoping signals needs Landlock ABI 6, the kernel has {abi}")
    fs = _FS_BY_ABI.get(abi, _FS_ALL)
    attr = _RulesetAttr(
        handled_access_fs=fs,
        handled_access_net=_NET_BIND_TCP | _NET_CONNECT_TCP if block_tcp else 0,
        scoped=_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if scope else 0,
    )
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    try:
        ruleset = _syscall(create, attr, size, 0)
    except OSError as e:
        raise LandlockError(f"landlock_create_ruleset: {e.strerror}") from e
    try:
        rules: list[tuple[str, int, bool]] = [(p, fs, True) for p in writable]
        rules += [(p, _READ_RIGHTS & fs, False) for p in readable]
        if devices:
            rules += [("/dev", _READ_DIR, False)]
            rules += [(p, _DEVICE_RIGHTS & fs, False) for p in DEVICE_FILES]
        denied = [_real(p) for p in deny]
        for path, access, required in rules:
            try:
                found = _add_rule(ruleset, path, access, add_rule, denied)
            except LandlockError:
                raise
            except OSError as e:
                raise LandlockError(f"landlock_add_rule {path!r}: {e.strerror}") from e
            if required and not found:
                raise LandlockError(f"writable path {path!r} does not exist")
        try:
            nnp = ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)
            if _lib().prctl(_PR_SET_NO_NEW_PRIVS, *nnp) != 0:
                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err))
            _syscall(restrict_self, ruleset, 0)
        except OSError as e:
            raise LandlockError(f"landlock_restrict_self: {e.strerror}") from e
    finally:
        os.close(ruleset)
