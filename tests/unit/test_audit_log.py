"""The audit log: a hash chain that names what was edited, removed or reordered, never a
secret, and a log that survives a server killed mid-write."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.memory.audit import GENESIS, AuditLog, AuditUnavailable, call_digest, line_hash, verify
from sandbox.environment import MASK, mask_secrets


def write_log(path: Path, count: int = 6) -> list[bytes]:
    log = AuditLog(path)
    for i in range(count):
        log.append({"type": "execution", "n": i, "arguments": {"command": f"echo {i}"}})
    log.close()
    return path.read_bytes().splitlines(keepends=True)


def tampered(path: Path, lines: list[bytes]) -> list[tuple[int, str]]:
    path.write_bytes(b"".join(lines))
    return [(p.line, p.kind) for p in verify(path).problems]


def test_a_log_written_normally_verifies(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    lines = write_log(path)
    result = verify(path)
    assert result.ok and result.records == 6
    records = [json.loads(line) for line in lines]
    assert records[0]["prev"] == GENESIS
    assert all(
        r["prev"] == line_hash(lines[i - 1].rstrip(b"\n")) for i, r in enumerate(records) if i
    )
    assert [r["seq"] for r in records] == list(range(6))


def test_an_edited_record_is_named(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    lines = write_log(path)
    lines[2] = lines[2].replace(b"echo 2", b"echo 9")
    assert tampered(path, lines) == [(3, "edited")]


def test_a_removed_record_is_named(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    lines = write_log(path)
    assert tampered(path, [*lines[:2], *lines[3:]]) == [(3, "removed")]


def test_reordered_records_are_named(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    lines = write_log(path)
    kinds = {kind for _line, kind in tampered(path, [*lines[:2], lines[3], lines[2], *lines[4:]])}
    assert kinds == {"reordered"}


def test_records_cut_from_the_end_are_named_thanks_to_the_head(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    lines = write_log(path)
    assert tampered(path, lines[:4]) == [(4, "removed")]


def test_an_edited_last_record_is_named(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    lines = write_log(path)
    lines[-1] = lines[-1].replace(b"echo 5", b"echo 7")
    assert tampered(path, lines) == [(6, "edited")]


def test_a_half_written_last_record_is_cut_off_by_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    lines = write_log(path, 3)
    path.write_bytes(b"".join(lines) + b'{"seq":3,"prev":"ab')  # killed mid-write
    first = verify(path)
    assert first.ok and [p.kind for p in first.problems] == ["torn"]
    AuditLog(path).append({"type": "approval"})
    result = verify(path)
    assert result.ok and result.problems == []
    types = [json.loads(line)["type"] for line in path.read_text().splitlines()]
    assert types[-2:] == ["log_repaired", "approval"]


def test_servers_appending_at_once_keep_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    logs = [AuditLog(path) for _ in range(4)]

    def append(log: AuditLog) -> None:
        for i in range(25):
            log.append({"type": "approval", "i": i})

    threads = [threading.Thread(target=append, args=(log,)) for log in logs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result = verify(path)
    assert result.ok and result.records == 100


def test_a_log_that_cannot_be_written_says_so(tmp_path: Path) -> None:
    (tmp_path / "audit").write_text("a file where the folder should be")
    with pytest.raises(AuditUnavailable, match="cannot open the audit log"):
        AuditLog(tmp_path / "audit" / "audit.jsonl").append({"type": "approval"})


def test_secrets_never_reach_the_log(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    token = "ghp_" + "x" * 36
    AuditLog(path).append(
        {
            "type": "execution",
            "arguments": {
                "command": f"GITHUB_TOKEN={token} git push",
                "note": "api_key: hunter2hunter2",
            },
            "message": "curl -H 'Authorization: Bearer abc.def.ghi'",
            "sha256": "f" * 64,
        }
    )
    text = path.read_text()
    assert token not in text and "hunter2hunter2" not in text and "abc.def.ghi" not in text
    assert text.count(MASK) >= 3
    assert "f" * 64 in text  # hashes are kept


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("export OPENAI_API_KEY=sk-abcdefghijklmnopqrstu", f"export OPENAI_API_KEY={MASK}"),
        ('{"password": "correcthorse"}', f'{{"password": "{MASK}"}}'),
        ("echo hello && ls -la", "echo hello && ls -la"),
        ("TOKENS=5 make", "TOKENS=5 make"),
        ("git clone https://me:pa55word@example.com/r", f"git clone {MASK}example.com/r"),
    ],
)
def test_masking_follows_the_environment_scrubbers_rule(text: str, masked: str) -> None:
    assert mask_secrets(text) == masked


def test_the_call_digest_covers_tool_arguments_and_folder() -> None:
    base = call_digest("terminal", {"command": "ls"}, "/ws")
    assert base == call_digest("terminal", {"command": "ls"}, "/ws")
    assert base != call_digest("terminal", {"command": "ls -a"}, "/ws")
    assert base != call_digest("python", {"command": "ls"}, "/ws")
    assert base != call_digest("terminal", {"command": "ls"}, "/other")


def gatehouse(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "server", *args]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def test_gatehouse_audit_verify_exits_1_naming_the_line(
    tmp_path: Path, private_data_dir: Path
) -> None:
    path = private_data_dir / "audit" / "audit.jsonl"
    lines = write_log(path)
    ok = gatehouse("audit", "verify")
    assert ok.returncode == 0 and "intact: 6 records" in ok.stdout
    path.write_bytes(b"".join([*lines[:1], lines[1].replace(b"echo 1", b"rm -rf"), *lines[2:]]))
    bad = gatehouse("audit", "verify")
    assert bad.returncode == 1
    assert "line 2: edited" in bad.stdout
    shown = gatehouse("audit", "show", "--json")
    assert len(shown.stdout.splitlines()) == 6
