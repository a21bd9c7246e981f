"""A seccomp-bpf filter for the standard isolation tier, assembled by hand, installed with ctypes.

The filter (checked in this order):

1. kills the process when the syscall's ABI is not this process's native one (i386 ``int 0x80``
   on x86_64, 32-bit ``compat`` on aarch64) and, on x86_64, for any x32 syscall;
2. refuses ``io_uring_setup``/``io_uring_enter``/``io_uring_register`` with ``EPERM`` (io_uring
   does file and socket operations that neither Landlock nor this filter could see);
3. when ``block_network``: ``socket(domain, ...)`` fails with ``EAFNOSUPPORT`` unless ``domain`` is
   ``AF_UNIX``, so no IP (TCP, UDP, ICMP), netlink, packet, vsock... socket can be opened;
   ``socketpair`` stays allowed (asyncio and multiprocessing need it);
4. when ``block_unix_connect`` (opt-in): ``connect`` fails with ``EPERM``, which closes path-named
   UNIX sockets Landlock does not mediate (docker.sock, D-Bus, ssh-agent) at the cost of anything
   that connects to a local socket (multiprocessing's forkserver and managers, nscd, syslog).

Everything else is allowed. Requires ``no_new_privs`` (set by :func:`install`) or CAP_SYS_ADMIN.
This module imports only the standard library: the launcher runs it with ``python -S -I``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys

__all__ = ["SeccompError", "build_filter", "install", "supported"]

# Classic BPF opcodes.
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K

_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000

# struct seccomp_data offsets (both supported arches are little-endian: an int argument is the
# low 32 bits at the start of its 64-bit slot).
_OFF_NR = 0
_OFF_ARCH = 4
_OFF_ARG0_LOW = 16

_X32_SYSCALL_BIT = 0x40000000
_AF_UNIX = 1
_IO_URING = (425, 426, 427)  # setup, enter, register: the same on every arch


class _Arch:
    def __init__(self, audit: int, socket: int, connect: int, x32: bool) -> None:
        self.audit = audit
        self.socket = socket
        self.connect = connect
        self.x32 = x32


_ARCHES = {
    "x86_64": _Arch(audit=0xC000003E, socket=41, connect=42, x32=True),
    "aarch64": _Arch(audit=0xC00000B7, socket=198, connect=203, x32=False),
}

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


class SeccompError(RuntimeError):
    """The filter could not be installed."""


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def _arch() -> _Arch | None:
    if not sys.platform.startswith("linux") or ctypes.sizeof(ctypes.c_void_p) != 8:
        return None  # not Linux, or a 32-bit or x32 process (other syscall numbers)
    return _ARCHES.get(os.uname().machine)


def supported() -> bool:
    """True when this process's architecture is one the filter knows."""
    return _arch() is not None


_Insn = tuple[int, int | str, int | str, int]  # code, jump-if-true, jump-if-false, k


def _assemble(program: list[_Insn | str]) -> bytes:
    """Resolve label names (the ``str`` items) into forward jump offsets; pack ``sock_filter``."""
    labels: dict[str, int] = {}
    insns: list[_Insn] = []
    for item in program:
        if isinstance(item, str):
            labels[item] = len(insns)
        else:
            insns.append(item)
    out = bytearray()
    for index, (code, jt, jf, k) in enumerate(insns):
        offsets = []
        for target in (jt, jf):
            offset = labels[target] - index - 1 if isinstance(target, str) else target
            if not 0 <= offset <= 255:
                raise ValueError(f"BPF jump out of range at instruction {index}")
            offsets.append(offset)
        out += struct.pack("<HBBI", code, offsets[0], offsets[1], k)
    return bytes(out)


def build_filter(
    *, block_network: bool, block_unix_connect: bool = False, machine: str | None = None
) -> bytes:
    """The packed ``struct sock_filter`` array for ``machine`` (default: this process's)."""
    arch = _ARCHES.get(machine) if machine is not None else _arch()
    if arch is None:
        raise SeccompError(f"seccomp filter: unsupported architecture {machine or sys.platform}")
    prog: list[_Insn | str] = [
        (_LD_W_ABS, 0, 0, _OFF_ARCH),
        (_JEQ_K, 0, "kill", arch.audit),
        (_LD_W_ABS, 0, 0, _OFF_NR),
    ]
    if arch.x32:
        prog.append((_JSET_K, "kill", 0, _X32_SYSCALL_BIT))
    prog += [(_JEQ_K, "eperm", 0, nr) for nr in _IO_URING]
    if block_network:
        prog.append((_JEQ_K, "socket", 0, arch.socket))
    if block_unix_connect:
        prog.append((_JEQ_K, "eperm", 0, arch.connect))
    prog += [(_RET_K, 0, 0, _RET_ALLOW)]
    if block_network:
        prog += [
            "socket",
            (_LD_W_ABS, 0, 0, _OFF_ARG0_LOW),
            (_JEQ_K, "allow", 0, _AF_UNIX),
            (_RET_K, 0, 0, _RET_ERRNO | errno.EAFNOSUPPORT),
            "allow",
            (_RET_K, 0, 0, _RET_ALLOW),
        ]
    prog += [
        "eperm",
        (_RET_K, 0, 0, _RET_ERRNO | errno.EPERM),
        "kill",
        (_RET_K, 0, 0, _RET_KILL_PROCESS),
    ]
    return _assemble(prog)


def _failed(what: str) -> SeccompError:
    err = ctypes.get_errno()
    return SeccompError(f"{what}: {os.strerror(err)}")


def install(block_network: bool, *, block_unix_connect: bool = False) -> None:
    """Install the filter on this process; irreversible, inherited by every child."""
    code = build_filter(block_network=block_network, block_unix_connect=block_unix_connect)
    buffer = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len=len(code) // 8, filter=ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    zero = ctypes.c_ulong(0)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), zero, zero, zero) != 0:
        raise _failed("setting no_new_privs")
    mode = ctypes.c_ulong(_SECCOMP_MODE_FILTER)
    if libc.prctl(_PR_SET_SECCOMP, mode, ctypes.byref(prog), zero, zero) != 0:
        raise _failed("installing the seccomp filter")
