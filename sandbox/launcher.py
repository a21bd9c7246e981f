"""The exec launcher of the standard isolation tier: restrict this process, then become the command.

Run as ``python3 -S -I sandbox/launcher.py CONFIG_JSON -- ARGV...`` (see :func:`command`). In order
it sets resource limits, ``no_new_privs``, drops every capability, applies Landlock, installs the
seccomp filter, then ``execvp(ARGV[0], ARGV)``. If a requested restriction cannot be applied it
writes ``gatehouse-launcher: <reason>`` to stderr and exits 126 without running anything: the
command never runs weaker than asked. 127 means the program was not found.

CONFIG_JSON (unknown keys and wrong types are errors; absent keys take the default shown)::

    {"rlimits": {"cpu": s, "data": bytes, "as": bytes, "fsize": bytes,   # default {}
                 "nofile": n, "nproc": n, "core": bytes},   # any subset; null = leave as is
     "landlock": null | {                                   # default null
         "writable": [paths],        # required; must exist; every right beneath
         "readable": null | [paths], # default null: "/" minus hidden and deny_read
         "deny_read": [paths],       # default []: never readable, no rule inside or around it
         "hidden": [paths],          # default []: added to landlock.DEFAULT_HIDDEN
         "readable_extra": [paths],  # default []: re-exposed (interpreter, toolchains), minus deny
         "block_tcp": null | bool,   # default null: seccomp.block_network when ABI >= 4
         "scope": null | bool},      # default null: when ABI >= 6 (signals, abstract sockets)
     "seccomp": null | {"block_network": bool,               # default null; required
                        "block_unix_connect": bool},        # default false
     "drop_caps": bool,              # default false
     "no_new_privs": bool}           # default true; must be true for landlock/seccomp/drop_caps

An explicit ``true`` the kernel cannot honour (``block_tcp`` below ABI 4, ``scope`` below 6) is a
refusal; ``null`` means "when available". All paths must be absolute.

Only the standard library and the sibling modules are imported, before anything else is on
``sys.path``. The launcher, the interpreter and its standard library must not be writable by the
sandbox (they run unconfined on the next call): a writable path covering them is refused.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import struct
import sys
import warnings  # noqa: F401 - os.execvp imports it lazily, when Landlock may hide the stdlib

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:  # appended: with -I the standard library is found first
    sys.path.append(_ROOT)

from sandbox import landlock, seccomp  # noqa: E402

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["LAUNCHER", "LaunchError", "apply", "command", "interpreter", "main", "parse"]

LAUNCHER = os.path.abspath(__file__)
PREFIX = "gatehouse-launcher:"
EXIT_REFUSED = 126
EXIT_NOT_FOUND = 127

_RLIMITS = {
    "cpu": resource.RLIMIT_CPU,
    "data": resource.RLIMIT_DATA,
    "as": resource.RLIMIT_AS,
    "fsize": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
    "nproc": resource.RLIMIT_NPROC,
    "core": resource.RLIMIT_CORE,
}
_TOP_DEFAULTS: dict[str, object] = {
    "rlimits": {},
    "landlock": None,
    "seccomp": None,
    "drop_caps": False,
    "no_new_privs": True,
}
_LANDLOCK_DEFAULTS: dict[str, object] = {
    "readable": None,
    "deny_read": [],
    "readable_extra": [],
    "hidden": [],
    "block_tcp": None,
    "scope": None,
}
_SECCOMP_DEFAULTS: dict[str, object] = {"block_unix_connect": False}

_PR_CAPBSET_READ = 23
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_NO_NEW_PRIVS = 39
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_SETPCAP = 8
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class LaunchError(Exception):
    """A bad configuration, or a restriction that could not be applied."""


def _check(value: object, kind: type | tuple[type, ...], where: str) -> None:
    if (isinstance(value, bool) and kind is int) or not isinstance(value, kind):
        raise LaunchError(f"config: {where} has the wrong type")


def _paths(section: Mapping[str, object], key: str) -> list[str]:
    value = section[key]
    _check(value, list, f"landlock.{key}")
    assert isinstance(value, list)
    for item in value:
        _check(item, str, f"landlock.{key}[]")
        if not item.startswith("/"):
            raise LaunchError(f"config: landlock.{key} entry {item!r} is not absolute")
    return value


def _section(
    config: Mapping[str, object], key: str, required: set[str], defaults: Mapping[str, object]
) -> dict[str, object] | None:
    """The ``key`` object with its defaults filled in; None when null."""
    value = config[key]
    if value is None:
        return None
    if not isinstance(value, dict):
        raise LaunchError(f"config: {key} is not an object or null")
    missing, unknown = required - set(value), set(value) - required - set(defaults)
    if missing or unknown:
        raise LaunchError(f"config: {key}: missing {sorted(missing)}, unknown {sorted(unknown)}")
    return {**defaults, **value}


class _ScanContext:
    """What ``_json.make_scanner`` reads (the attributes ``json.JSONDecoder`` would offer)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    array_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> object:
        raise ValueError(f"{name} is not allowed")


def _loads(text: str) -> object:
    """``json.loads`` through the C scanner when the text is valid: importing ``json`` (``re``,
    ``enum``) would cost more than the rest of the launcher's start-up. Anything else (an error to
    report, another ``_json``) goes through ``json`` itself."""
    ws = " \t\n\r"
    start = len(text) - len(text.lstrip(ws))
    try:
        import _json  # noqa: PLC0415

        value, end = _json.make_scanner(_ScanContext)(text, start)  # type: ignore[arg-type]
        if not text[end:].strip(ws):
            return value
    except Exception:  # noqa: S110 - json.loads below reports it properly
        pass
    import json  # noqa: PLC0415

    return json.loads(text)


def parse(text: str) -> dict[str, object]:
    """Validate CONFIG_JSON; returns the decoded object."""
    try:
        config = _loads(text)
    except ValueError as e:
        raise LaunchError(f"config is not JSON: {e}") from e
    if not isinstance(config, dict):
        raise LaunchError("config: not a JSON object")
    config = _section({"config": config}, "config", set(), _TOP_DEFAULTS)
    assert config is not None
    for key in ("drop_caps", "no_new_privs"):
        _check(config[key], bool, key)
    rlimits = _section(config, "rlimits", set(), dict.fromkeys(_RLIMITS)) or {}
    for name, value in rlimits.items():
        if value is not None:
            _check(value, int, f"rlimits.{name}")
            assert isinstance(value, int)
            if value < 0:
                raise LaunchError(f"config: rlimits.{name} is negative")
    config["rlimits"] = rlimits
    ll = config["landlock"] = _section(config, "landlock", {"writable"}, _LANDLOCK_DEFAULTS)
    if ll is not None:
        for key in ("writable", "deny_read", "readable_extra", "hidden"):
            _paths(ll, key)
        if ll["readable"] is not None:
            _paths(ll, "readable")
        for key in ("block_tcp", "scope"):
            if ll[key] is not None:
                _check(ll[key], bool, f"landlock.{key}")
    sc = config["seccomp"] = _section(config, "seccomp", {"block_network"}, _SECCOMP_DEFAULTS)
    if sc is not None:
        _check(sc["block_network"], bool, "seccomp.block_network")
        _check(sc["block_unix_connect"], bool, "seccomp.block_unix_connect")
    if not config["no_new_privs"] and (ll is not None or sc is not None or config["drop_caps"]):
        raise LaunchError("config: landlock, seccomp and drop_caps need no_new_privs")
    return config


def _set_rlimits(rlimits: Mapping[str, object]) -> None:
    for name, value in rlimits.items():
        if not isinstance(value, int):
            continue
        _soft, hard = resource.getrlimit(_RLIMITS[name])
        limit = value if hard == resource.RLIM_INFINITY else min(value, hard)
        try:
            resource.setrlimit(_RLIMITS[name], (limit, limit))
        except (OSError, ValueError) as e:
            raise LaunchError(f"setrlimit {name}={limit}: {e}") from e


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _prctl(libc: ctypes.CDLL, option: int, arg2: int = 0, arg3: int = 0) -> int:
    args = (ctypes.c_ulong(arg2), ctypes.c_ulong(arg3), ctypes.c_ulong(0), ctypes.c_ulong(0))
    result = int(libc.prctl(option, *args))
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def _set_no_new_privs(libc: ctypes.CDLL) -> None:
    try:
        _prctl(libc, _PR_SET_NO_NEW_PRIVS, 1)
        if _prctl(libc, _PR_GET_NO_NEW_PRIVS) != 1:
            raise OSError(errno.EINVAL, "no_new_privs did not stick")
    except OSError as e:
        raise LaunchError(f"no_new_privs: {e.strerror}") from e


def _capget(libc: ctypes.CDLL) -> tuple[int, int, int]:
    """(effective, permitted, inheritable) as 64-bit masks."""
    header = ctypes.create_string_buffer(struct.pack("<Ii", _LINUX_CAPABILITY_VERSION_3, 0), 8)
    data = ctypes.create_string_buffer(24)
    if libc.capget(header, data) != 0:
        raise LaunchError(f"capget: {os.strerror(ctypes.get_errno())}")
    low_e, low_p, low_i, high_e, high_p, high_i = struct.unpack("<6I", data.raw)
    return low_e | high_e << 32, low_p | high_p << 32, low_i | high_i << 32


def _drop_capabilities(libc: ctypes.CDLL) -> None:
    """Empty the bounding set (when allowed), the ambient set, then every other set; verify."""
    effective, _, _ = _capget(libc)
    if effective >> _CAP_SETPCAP & 1:  # without CAP_SETPCAP no_new_privs already bars regaining
        cap = 0
        while True:
            try:
                _prctl(libc, _PR_CAPBSET_DROP, cap)
            except OSError as e:
                if e.errno == errno.EINVAL:  # past CAP_LAST_CAP
                    break
                raise LaunchError(f"dropping capability {cap} from the bounding set: {e}") from e
            cap += 1
        if any(_prctl(libc, _PR_CAPBSET_READ, c) for c in range(cap)):
            raise LaunchError("the capability bounding set is not empty")
    try:
        _prctl(libc, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError as e:
        if e.errno != errno.EINVAL:  # EINVAL: a kernel without ambient capabilities
            raise LaunchError(f"clearing ambient capabilities: {e}") from e
    header = ctypes.create_string_buffer(struct.pack("<Ii", _LINUX_CAPABILITY_VERSION_3, 0), 8)
    if libc.capset(header, ctypes.create_string_buffer(24)) != 0:
        raise LaunchError(f"capset: {os.strerror(ctypes.get_errno())}")
    if any(_capget(libc)):
        raise LaunchError("capabilities are still held after capset")


def _beneath(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _guard_startup(writable: Sequence[str]) -> None:
    """Refuse a writable path that could change what the next launcher run executes unconfined:
    this package (``__pycache__`` included), the standard library, the interpreter, and the
    ``pyvenv.cfg`` that would redirect a venv interpreter to another standard library."""
    package = os.path.realpath(os.path.dirname(LAUNCHER))
    exe_dir = os.path.realpath(os.path.dirname(sys.executable))
    startup = [
        package,
        os.path.realpath(os.path.dirname(os.__file__)),
        os.path.realpath(sys.executable),
        os.path.join(exe_dir, os.path.basename(sys.executable)),
        os.path.join(exe_dir, "pyvenv.cfg"),
        os.path.join(os.path.dirname(exe_dir), "pyvenv.cfg"),
    ]
    for path in writable:
        real = os.path.realpath(path)
        for own in startup:
            if _beneath(own, real) or (own == package and _beneath(real, package)):
                raise LaunchError(f"writable {path!r} covers {own!r}, which runs unconfined")


def _apply_landlock(ll: Mapping[str, object], block_network: bool) -> None:
    abi = landlock.abi_version()
    if abi == 0:
        raise LaunchError("Landlock is not available (kernel, boot options or architecture)")
    writable, deny, extra = (
        _paths(ll, "writable"),
        _paths(ll, "deny_read"),
        _paths(ll, "readable_extra"),
    )
    _guard_startup(writable)
    if ll["readable"] is None:  # "hidden" adds to the defaults; "readable_extra" re-exposes
        hidden = [*landlock.DEFAULT_HIDDEN, *_paths(ll, "hidden")]
        readable = landlock.default_readable(hidden, extra, deny=deny)
    else:
        readable = landlock.readable_cover([*_paths(ll, "readable"), *extra], deny)
    block_tcp, scope = ll["block_tcp"], ll["scope"]
    landlock.restrict(
        writable=writable,
        readable=readable,
        block_tcp=block_network and abi >= 4 if block_tcp is None else bool(block_tcp),
        scope=abi >= 6 if scope is None else bool(scope),
        deny=deny,
    )


def apply(config: Mapping[str, object]) -> None:
    """Restrict this process as ``config`` (validated by :func:`parse`) says; irreversible."""
    rlimits = config["rlimits"]
    _set_rlimits(rlimits if isinstance(rlimits, dict) else {})
    libc = _libc()
    if config["no_new_privs"]:
        _set_no_new_privs(libc)
    if config["drop_caps"]:
        _drop_capabilities(libc)
    sc = config["seccomp"]
    block_network = isinstance(sc, dict) and bool(sc["block_network"])
    ll = config["landlock"]
    if isinstance(ll, dict):
        try:
            _apply_landlock(ll, block_network)
        except (landlock.LandlockError, OSError) as e:  # OSError: a path that could not be read
            raise LaunchError(f"landlock: {e}") from e
    if isinstance(sc, dict):
        if not seccomp.supported():
            raise LaunchError(f"seccomp: no filter for architecture {os.uname().machine}")
        try:
            seccomp.install(block_network, block_unix_connect=bool(sc["block_unix_connect"]))
        except seccomp.SeccompError as e:
            raise LaunchError(f"seccomp: {e}") from e


def interpreter() -> str:
    """The base interpreter's real path: a venv's ``pyvenv.cfg`` (maybe in a writable workspace)
    then plays no part in starting the launcher."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def command(
    config: Mapping[str, object], argv: Sequence[str], python: str | None = None
) -> list[str]:
    """The argv that runs ``argv`` under ``config`` through the launcher."""
    import json  # noqa: PLC0415 - the launcher itself avoids it (start-up time)

    text = json.dumps(config, separators=(",", ":"))
    return [python or interpreter(), "-S", "-I", LAUNCHER, text, "--", *argv]


def _refuse(message: str, code: int = EXIT_REFUSED) -> int:
    sys.stderr.write(f"{PREFIX} {' '.join(message.split())}\n")  # always one line
    sys.stderr.flush()
    return code


def main(args: Sequence[str]) -> int:
    """``args`` is ``[CONFIG_JSON, "--", PROGRAM, ARG...]``; returns only on failure."""
    if len(args) < 3 or args[1] != "--":
        return _refuse("usage: launcher.py CONFIG_JSON -- PROGRAM [ARG...]")
    argv = list(args[2:])
    try:
        apply(parse(args[0]))
    except LaunchError as e:
        return _refuse(str(e))
    except Exception as e:  # anything unexpected: never run the command half-restricted
        return _refuse(f"internal error: {type(e).__name__}: {e}")
    try:
        os.execvp(argv[0], argv)  # noqa: S606 - running the command is the point
    except (FileNotFoundError, NotADirectoryError):
        return _refuse(f"{argv[0]}: command not found", EXIT_NOT_FOUND)
    except OSError as e:
        return _refuse(f"{argv[0]}: {e.strerror}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
