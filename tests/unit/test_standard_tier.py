"""The standard isolation tier: ``sandbox/launcher.py`` (rlimits, no_new_privs, capabilities,
Landlock, seccomp) run as a real subprocess, the way the runner starts it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

if not sys.platform.startswith("linux"):
    pytest.skip("the standard tier is Linux-only", allow_module_level=True)

from sandbox import landlock, launcher, seccomp

ABI = landlock.abi_version()
pytestmark = pytest.mark.skipif(
    ABI == 0, reason="Landlock is unavailable here (landlock.abi_version() == 0)"
)

LAUNCHER = str(Path(__file__).resolve().parents[2] / "sandbox" / "launcher.py")
PYTHON_PREFIXES = sorted(
    {sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))}
)
DENIED = ("EACCES", "EPERM", "EROFS")

# The child prints the errno name of a failed operation, or "ok".
TRY = """
import errno, sys
def attempt(fn):
    try:
        fn()
    except OSError as e:
        print(errno.errorcode.get(e.errno, e.errno))
    else:
        print("ok")
"""


class Box:
    """A fake home with a planted secret, a writable workspace, a private tmp and an outside."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.secret = self.home / ".ssh" / "id_ed25519"
        self.ws = root / "ws"
        self.tmp = root / "tmp"
        self.outside = root / "outside"
        for folder in (self.secret.parent, self.ws, self.tmp, self.outside):
            folder.mkdir(parents=True)
        self.secret.write_text("-----BEGIN OPENSSH PRIVATE KEY----- planted")
        (self.outside / "public.txt").write_text("public")

    def config(self, **changes: Any) -> dict[str, Any]:
        landlock_changes = changes.pop("landlock_changes", {})
        config: dict[str, Any] = {
            "rlimits": {
                "cpu": 60,
                "data": 1 << 30,
                "fsize": 100 << 20,
                "nofile": 256,
                "nproc": None,
                "core": 0,
            },
            "landlock": {
                "writable": [str(self.ws), str(self.tmp)],
                "readable": None,
                "deny_read": [str(self.home)],
                "readable_extra": PYTHON_PREFIXES,
                **landlock_changes,
            },
            "seccomp": {"block_network": True},
            "drop_caps": True,
            "no_new_privs": True,
        }
        config.update(changes)
        return config

    def env(self) -> dict[str, str]:
        path = os.environ.get("PATH", os.defpath)
        return {"PATH": path, "HOME": str(self.tmp), "TMPDIR": str(self.tmp), "LANG": "C.UTF-8"}

    def run(
        self, argv: list[str], config: dict[str, Any] | str | None = None, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        text = config if isinstance(config, str) else json.dumps(config or self.config())
        return subprocess.run(
            [sys.executable, "-S", "-I", LAUNCHER, text, "--", *argv],
            capture_output=True,
            text=True,
            cwd=self.ws,
            env=self.env(),
            timeout=timeout,
            check=False,
        )

    def py(self, code: str, config: dict[str, Any] | None = None, timeout: float = 30) -> list[str]:
        """Run Python ``code`` (after :data:`TRY`) in the box; its stdout lines."""
        proc = self.run([sys.executable, "-c", TRY + code], config, timeout)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split()


@pytest.fixture
def box(tmp_path: Path) -> Box:
    return Box(tmp_path)


def test_workspace_and_private_tmp_are_writable(box: Box) -> None:
    out = box.py(
        f"attempt(lambda: open({str(box.ws / 'a.txt')!r}, 'w').write('a'))\n"
        f"attempt(lambda: open({str(box.tmp / 'b.txt')!r}, 'w').write('b'))\n"
        "attempt(lambda: open('/dev/null', 'w').write('x'))\n"
    )
    assert out == ["ok", "ok", "ok"]
    assert (box.ws / "a.txt").read_text() == "a"


@pytest.mark.parametrize("where", ["outside", "etc", "var_tmp", "home", "run"])
def test_writes_outside_fail(box: Box, where: str) -> None:
    name = f"gatehouse-test-{uuid.uuid4().hex}"
    folders = {"outside": box.outside, "etc": Path("/etc"), "var_tmp": Path("/var/tmp")}
    folders |= {"home": box.home, "run": Path("/run")}
    target = folders[where] / name
    try:
        out = box.py(f"attempt(lambda: open({str(target)!r}, 'w'))")
        assert out[0] in DENIED
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)


def test_planted_secret_is_unreadable(box: Box) -> None:
    secret = str(box.secret)
    out = box.py(
        f"attempt(lambda: open({secret!r}).read())\n"
        f"attempt(lambda: open('/proc/self/root' + {secret!r}).read())\n"
        f"import os\nattempt(lambda: os.listdir({str(box.home)!r}))\n"
        f"os.symlink({secret!r}, 'link')\nattempt(lambda: open('link').read())\n"
        f"attempt(lambda: os.link({secret!r}, 'hard'))\n"
    )
    assert out == ["EACCES", "EACCES", "EACCES", "EACCES", out[4]]
    assert out[4] in ("EXDEV", *DENIED)  # REFER (ABI >= 2) or no cross-folder link at all


def test_deny_read_alone_hides_the_secret_and_only_it(box: Box) -> None:
    """Re-exposing the whole test folder (under the hidden ``/tmp``) still leaves the secret out."""
    config = box.config(landlock_changes={"readable_extra": [*PYTHON_PREFIXES, str(box.root)]})
    out = box.py(
        f"attempt(lambda: open({str(box.secret)!r}).read())\n"
        f"attempt(lambda: open({str(box.outside / 'public.txt')!r}).read())\n",
        config,
    )
    assert out == ["EACCES", "ok"]


def test_tcp_and_udp_to_localhost_fail(box: Box) -> None:
    with (
        socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
    ):
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        udp.bind(("127.0.0.1", 0))
        udp.settimeout(1.0)
        tcp_port, udp_port = tcp.getsockname()[1], udp.getsockname()[1]
        out = box.py(
            "import socket\n"
            f"attempt(lambda: socket.create_connection(('127.0.0.1', {tcp_port}), timeout=2))\n"
            "def udp():\n"
            "    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:\n"
            f"        s.sendto(b'leak', ('127.0.0.1', {udp_port}))\n"
            "attempt(udp)\n"
            "for family in (socket.AF_INET6, socket.AF_NETLINK, socket.AF_PACKET):\n"
            "    attempt(lambda: socket.socket(family, socket.SOCK_DGRAM))\n"
        )
        assert out == ["EAFNOSUPPORT"] * 5
        with pytest.raises(TimeoutError):
            udp.recvfrom(64)


@pytest.mark.skipif(ABI < 4, reason="Landlock TCP rules need ABI 4")
def test_landlock_alone_refuses_tcp(box: Box) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        port = tcp.getsockname()[1]
        config = box.config(seccomp=None, landlock_changes={"block_tcp": True})
        out = box.py(
            f"import socket\nattempt(lambda: socket.create_connection(('127.0.0.1', {port})))",
            config,
        )
        assert out == ["EACCES"]


def test_unix_sockets_asyncio_and_git_still_work(box: Box) -> None:
    out = box.py(
        "import asyncio, socket\n"
        "a, b = socket.socketpair()\na.send(b'x')\nprint(b.recv(1).decode())\n"
        "asyncio.run(asyncio.sleep(0))\nprint('asyncio')\n"
        "async def sub():\n"
        "    p = await asyncio.create_subprocess_exec('true')\n"
        "    return await p.wait()\n"
        "print(asyncio.run(sub()))\n"
        "with socket.socket(socket.AF_UNIX) as s:\n"
        "    s.bind('sock'); s.listen(); print('bind')\n"
    )
    assert out == ["x", "asyncio", "0", "bind"]
    if shutil.which("git"):
        script = (
            "git init -q . && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m m"
            " && git log --oneline | wc -l"
        )
        proc = box.run(["sh", "-c", script])
        assert (proc.returncode, proc.stdout.strip()) == (0, "1"), proc.stderr


def test_multiprocessing_needs_dev_shm_writable(box: Box) -> None:
    code = (
        "import multiprocessing as mp\n"
        "if __name__ == '__main__':\n"
        "    with mp.Pool(2) as pool:\n"
        "        print(sum(pool.map(abs, [-1, -2])))\n"
    )
    (box.ws / "pool.py").write_text(code)
    proc = box.run([sys.executable, "pool.py"])  # POSIX semaphores live in the host's /dev/shm
    assert proc.returncode != 0 and "PermissionError" in proc.stderr
    config = box.config()
    config["landlock"]["writable"].append("/dev/shm")
    proc = box.run([sys.executable, "pool.py"], config)
    assert (proc.returncode, proc.stdout.strip()) == (0, "3"), proc.stderr


@pytest.mark.skipif(ABI < 6, reason="Landlock scopes need ABI 6")
def test_signals_and_abstract_sockets_are_scoped(box: Box) -> None:
    name = f"\0gatehouse-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(name)
        server.listen()
        out = box.py(
            "import os, socket\n"
            "attempt(lambda: os.kill(os.getppid(), 0))\n"
            f"attempt(lambda: socket.socket(socket.AF_UNIX).connect({name!r}))\n"
        )
    assert out == ["EPERM", "EPERM"]


def test_the_servers_environment_is_unreadable(box: Box) -> None:
    value = f"planted-{uuid.uuid4().hex}"
    os.environ["GATEHOUSE_TEST_SECRET"] = value
    try:
        proc = box.run(["cat", f"/proc/{os.getpid()}/environ"])
        assert proc.returncode != 0
        assert "Permission denied" in proc.stderr
        assert value not in proc.stdout
    finally:
        del os.environ["GATEHOUSE_TEST_SECRET"]
    # /proc/<pid>/environ shows a process's initial environment: plant it in a stand-in server.
    env = {"GATEHOUSE_TEST_SECRET": value}
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env) as server:
        try:
            argv = ["cat", f"/proc/{server.pid}/environ"]
            assert value not in box.run(argv).stdout
            if os.geteuid() == 0:  # why drop_caps exists: root keeps reading it under Landlock
                assert value in box.run(argv, box.config(drop_caps=False)).stdout
        finally:
            server.kill()


def test_no_capabilities_and_no_new_privileges(box: Box) -> None:
    status = box.run(["cat", "/proc/self/status"]).stdout
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(fields[cap], 16) == 0, cap
    assert fields["NoNewPrivs"].strip() == "1"
    assert fields["Seccomp"].strip() == "2"


def test_io_uring_is_refused_and_x32_kills(box: Box) -> None:
    out = box.py(
        "import ctypes, errno\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.syscall(ctypes.c_long(425), ctypes.c_long(1), ctypes.c_long(0))\n"
        "print(errno.errorcode[ctypes.get_errno()])\n"
    )
    assert out == ["EPERM"]
    if os.uname().machine == "x86_64":
        code = "import ctypes\nctypes.CDLL(None).syscall(ctypes.c_long(39 | 0x40000000))\n"
        proc = box.run([sys.executable, "-c", code])
        assert proc.returncode == -signal.SIGSYS


def test_cpu_limit_kills_an_endless_loop(box: Box) -> None:
    config = box.config(rlimits={"cpu": 1})
    started = time.monotonic()
    proc = box.run([sys.executable, "-c", "while True: pass"], config)
    assert proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL)
    assert time.monotonic() - started < 10


def test_limits_never_raise_a_hard_limit(box: Box) -> None:
    config = json.dumps(box.config(rlimits={"nofile": 256}))
    code = "import resource; print(*resource.getrlimit(resource.RLIMIT_NOFILE))"
    script = 'ulimit -Sn 128 && ulimit -Hn 128 && exec "$@"'
    argv = [sys.executable, "-S", "-I", LAUNCHER, config, "--", sys.executable, "-c", code]
    proc = subprocess.run(
        ["sh", "-c", script, "sh", *argv],
        capture_output=True,
        text=True,
        env=box.env(),
        check=False,
    )
    assert (proc.returncode, proc.stdout.split()) == (0, ["128", "128"]), proc.stderr


def test_memory_file_size_and_descriptor_limits(box: Box) -> None:
    config = box.config(rlimits={"data": 512 << 20, "fsize": 10 << 20, "nofile": 64})
    out = box.py(
        "try:\n    bytearray(4 << 30)\nexcept MemoryError:\n    print('MemoryError')\n"
        "def big():\n"
        "    with open('big', 'wb') as f:\n"
        "        for _ in range(200):\n            f.write(bytes(1 << 20))\n"
        "attempt(big)\n"
        "files = []\nattempt(lambda: [files.append(open('/dev/null')) for _ in range(100)])\n",
        config,
    )
    assert out == ["MemoryError", "EFBIG", "EMFILE"]
    assert (box.ws / "big").stat().st_size <= 10 << 20


def _refused(box: Box, config: dict[str, Any] | str, argv: list[str] | None = None) -> str:
    marker = box.ws / f"ran-{uuid.uuid4().hex}"
    proc = box.run(argv or ["touch", str(marker)], config)
    assert proc.returncode == 126, proc.stderr
    assert proc.stderr.startswith("gatehouse-launcher: ")
    assert len(proc.stderr.splitlines()) == 1
    assert not marker.exists()
    return proc.stderr


def test_a_restriction_that_cannot_be_applied_refuses_to_run(box: Box) -> None:
    # Landlock cannot subtract a denied path from a writable tree.
    (box.ws / ".env").write_text("TOKEN=x")
    config = box.config(landlock_changes={"deny_read": [str(box.ws / ".env")]})
    assert "cannot subtract" in _refused(box, config)
    # ...nor grant anything inside a denied path (a home holding the workspace belongs in hidden).
    inner = box.home / "project"
    inner.mkdir()
    config = box.config(landlock_changes={"writable": [str(inner)]})
    assert "inside denied" in _refused(box, config)
    # A missing writable path is an error, not skipped: the caller creates it first.
    config = box.config(landlock_changes={"writable": [str(box.ws), str(box.root / "missing")]})
    assert "does not exist" in _refused(box, config)
    # The launcher must never be writable by what it confines.
    package = Path(LAUNCHER).parent
    python_home = Path(sys.executable).parent.parent  # a venv: its pyvenv.cfg picks the stdlib
    for writable in (package.parent, package / "__pycache__", python_home):
        config = box.config(landlock_changes={"writable": [str(writable)]})
        assert "runs unconfined" in _refused(box, config)
    if ABI < 6:
        config = box.config(landlock_changes={"scope": True})
        assert "ABI 6" in _refused(box, config)


@pytest.mark.parametrize(
    "mutate",
    [
        "not json",
        "[]",
        "missing writable",
        "unknown key",
        "wrong type",
        "relative path",
        "negative limit",
        "nnp off",
        "unknown rlimit",
    ],
)
def test_a_bad_config_refuses_to_run(box: Box, mutate: str) -> None:
    config: dict[str, Any] = box.config()
    text: str | None = {"not json": "{rlimits", "[]": "[]"}.get(mutate)
    if mutate == "missing writable":
        del config["landlock"]["writable"]
    elif mutate == "unknown key":
        config["landlock"]["writeable"] = []
    elif mutate == "wrong type":
        config["seccomp"]["block_network"] = "yes"
    elif mutate == "relative path":
        config["landlock"]["writable"] = ["ws"]
    elif mutate == "negative limit":
        config["rlimits"]["cpu"] = -1
    elif mutate == "nnp off":
        config["no_new_privs"] = False
    elif mutate == "unknown rlimit":
        config["rlimits"]["rss"] = 1
    _refused(box, text or config)


def test_usage_errors_and_exit_codes(box: Box) -> None:
    usage = [sys.executable, "-S", "-I", LAUNCHER, "{}", "true"]  # no "--"
    assert subprocess.run(usage, capture_output=True, check=False).returncode == 126
    proc = box.run([f"gatehouse-no-such-program-{uuid.uuid4().hex}"])
    assert proc.returncode == 127
    assert proc.stderr.startswith("gatehouse-launcher: ")
    hidden = box.home / "tool.sh"  # exists, but the box cannot execute it
    hidden.write_text("#!/bin/sh\necho ran\n")
    hidden.chmod(0o755)
    proc = box.run([str(hidden)])
    assert (proc.returncode, proc.stdout) == (126, "")


def test_default_readable_carves_hidden_paths(tmp_path: Path) -> None:
    (tmp_path / "a" / "secret").mkdir(parents=True)
    (tmp_path / "a" / "open").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "to-secret").symlink_to(tmp_path / "a" / "secret")
    (tmp_path / "c").symlink_to(tmp_path / "b")
    real = os.path.realpath(tmp_path)
    cover = landlock.readable_cover([str(tmp_path)], [str(tmp_path / "a" / "secret")])
    assert cover == [f"{real}/a/open", f"{real}/b"]  # b holds only a link: reading follows it
    paths = landlock.default_readable(["/home", "/tmp"], [str(tmp_path / "b")], deny=["/etc/ssh"])
    assert "/usr" in paths and f"{real}/b" in paths
    assert not [p for p in paths if p.startswith(("/home", "/etc/ssh", "/dev/")) or p == "/tmp"]


def test_seccomp_filters_assemble_for_both_arches() -> None:
    for machine in ("x86_64", "aarch64"):
        code = seccomp.build_filter(block_network=True, block_unix_connect=True, machine=machine)
        assert len(code) % 8 == 0 and len(code) // 8 < 30
    with pytest.raises(seccomp.SeccompError):
        seccomp.build_filter(block_network=True, machine="riscv64")


def test_block_unix_connect_is_opt_in(box: Box) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        path = str(box.outside / "agent.sock")
        server.bind(path)
        server.listen()
        code = f"import socket\nattempt(lambda: socket.socket(socket.AF_UNIX).connect({path!r}))"
        assert box.py(code) == ["ok"]  # Landlock does not mediate connecting to a path
        config = box.config(seccomp={"block_network": True, "block_unix_connect": True})
        assert box.py(code, config) == ["EPERM"]


def test_command_helper_and_overhead(box: Box) -> None:
    """Median of 30 runs of ``launcher ... -- true`` against plain ``true``."""
    true = shutil.which("true")
    assert true
    argv = launcher.command(box.config(), [true])
    assert subprocess.run(argv, check=False).returncode == 0

    def median_ms(argv: list[str]) -> float:
        times = []
        for _ in range(30):
            started = time.perf_counter()
            subprocess.run(argv, check=True)
            times.append(time.perf_counter() - started)
        return statistics.median(times) * 1000

    plain, launched = median_ms([true]), median_ms(argv)
    print(f"\nlauncher overhead: plain true {plain:.1f} ms, launched {launched:.1f} ms")
    assert launched - plain < 500  # a sanity bound; the report carries the measured numbers
