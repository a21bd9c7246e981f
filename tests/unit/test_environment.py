"""The child's environment: built from an allow-list, never leaking anything that looks secret."""

from __future__ import annotations

import os

import pytest

from sandbox.environment import looks_secret, scrub_environment

GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
OPENAI_KEY = "sk-proj-" + "abcdefghijklmnopqrstuvwxyz012345"


def test_allowed_names_pass_and_everything_else_is_dropped() -> None:
    source = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/home/ada",
        "LANG": "en_US.UTF-8",
        "LC_ALL": "C.UTF-8",
        "LC_MESSAGES": "C",
        "TERM": "xterm-256color",
        "VIRTUAL_ENV": "/home/ada/project/.venv",
        "PYTHONIOENCODING": "utf-8",
        "NO_COLOR": "1",
        "EDITOR": "vim",
        "LD_PRELOAD": "/tmp/evil.so",
        "PYTHONPATH": "/somewhere",
        "DISPLAY": ":0",
    }
    env = scrub_environment(source)
    for name in (
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "LC_MESSAGES",
        "TERM",
        "VIRTUAL_ENV",
        "PYTHONIOENCODING",
        "NO_COLOR",
    ):
        assert env[name] == source[name]
    for name in ("EDITOR", "LD_PRELOAD", "PYTHONPATH", "DISPLAY"):
        assert name not in env


def test_secret_names_and_values_never_pass() -> None:
    source = {
        "OPENAI_API_KEY": OPENAI_KEY,
        "MY_TOKEN": "hunter2",
        "AWS_SECRET_ACCESS_KEY": "abc",
        "TERM": GITHUB_TOKEN,  # an allowed name carrying a secret value
        "HOME": "https://ada:s3cret@example.com/",
        "LANG": "en_US.UTF-8",
    }
    env = scrub_environment(source)
    assert env.keys() >= {"LANG", "PATH"}
    flat = repr(env)
    for secret in (OPENAI_KEY, "hunter2", GITHUB_TOKEN, "s3cret", "abc'"):
        assert secret not in flat
    assert "TERM" not in env and "HOME" not in env


def test_extra_is_added_after_the_same_secret_check() -> None:
    env = scrub_environment(
        {},
        extra={"GATEHOUSE_WORKSPACE": "/w", "ANTHROPIC_API_KEY": "x", "CONFIG": GITHUB_TOKEN},
    )
    assert env["GATEHOUSE_WORKSPACE"] == "/w"
    assert "ANTHROPIC_API_KEY" not in env
    assert "CONFIG" not in env


def test_python_flags_are_forced_and_path_defaults() -> None:
    env = scrub_environment({"PYTHONUNBUFFERED": "0"}, extra={"PYTHONDONTWRITEBYTECODE": ""})
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["PATH"] == os.defpath


def test_default_source_is_the_server_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB_TOKEN)
    env = scrub_environment()
    assert env["LANG"] == "C.UTF-8"
    assert GITHUB_TOKEN not in repr(env)


def test_result_is_a_fresh_dict() -> None:
    env = scrub_environment({"LANG": "C"})
    env["LANG"] = "changed"
    assert scrub_environment({"LANG": "C"})["LANG"] == "C"


def test_invalid_extra_names_are_dropped() -> None:
    env = scrub_environment({}, extra={"A=B": "1", "": "2", "OK": "bad\0value"})
    assert set(env) == {"PATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"}


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "my_token",
        "DB_PASSWORD",
        "PASSWD",
        "GPG_PASSPHRASE",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "BASIC_AUTH",
        "SESSION_ID",
        "COOKIE_JAR",
        "PRIVATE_THING",
        "REQUEST_SIGNATURE",
        "AWS_REGION",
        "AZURE_TENANT",
        "GCP_PROJECT",
        "GITHUB_ACTIONS",
        "GH_HOST",
        "GITLAB_URL",
        "HF_HOME",
        "HUGGINGFACE_HUB_CACHE",
        "NPM_CONFIG_REGISTRY",
        "PYPI_URL",
        "DOCKER_HOST",
        "SSH_AUTH_SOCK",
        "KUBECONFIG",
        "VAULT_ADDR",
    ],
)
def test_secret_names(name: str) -> None:
    assert looks_secret(name, "harmless")


@pytest.mark.parametrize(
    "value",
    [
        OPENAI_KEY,
        "sk-ant-api03-" + "x" * 40,
        GITHUB_TOKEN,
        "gho_" + "a" * 36,
        "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnop",
        "xoxb-123456789012-abcdefghijkl",
        "AKIAIOSFODNN7EXAMPLE",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n",
        "-----BEGIN RSA PRIVATE KEY-----",
        "glpat-" + "abcdefghij0123456789",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig",
        "postgres://admin:pa55word@db.internal:5432/app",
        "/usr/bin:/opt/" + GITHUB_TOKEN,
    ],
)
def test_secret_values(value: str) -> None:
    assert looks_secret("HARMLESS", value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
        ("LANG", "en_US.UTF-8"),
        ("TERM", "xterm-256color"),
        ("HOME", "/home/ada"),
        ("SHELL", "/bin/bash"),
        ("TZ", "Europe/Paris"),
        ("PIP_INDEX_URL", "https://pypi.org/simple"),
        ("VIRTUAL_ENV", "/home/ada/task-runner-abcdefghijklmnopqrstu/.venv"),
        ("TMPDIR", "/tmp/disk-0123456789abcdefgh"),
    ],
)
def test_ordinary_values_are_not_secret(name: str, value: str) -> None:
    assert not looks_secret(name, value)
