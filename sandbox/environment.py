"""The environment an approved command runs with: built from scratch, never ``os.environ`` itself.

Only allow-listed, harmless names pass from the server's environment, and even those are dropped
when their name or value looks like a credential. Values are never logged.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping

__all__ = ["ALLOWED_NAMES", "MASK", "looks_secret", "mask_secrets", "scrub_environment"]

log = logging.getLogger(__name__)

ALLOWED_NAMES: frozenset[str] = frozenset(
    {
        # where programs are found, and the user's identity and shell
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        # language, terminal and time zone
        "LANG",
        "LANGUAGE",
        "TERM",
        "COLORTERM",
        "NO_COLOR",
        "COLUMNS",
        "LINES",
        "TZ",
        # temporary folders
        "TMPDIR",
        "TEMP",
        "TMP",
        # Python behaviour and the active virtual environment
        "PYTHONIOENCODING",
        "PYTHONUTF8",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "CONDA_DEFAULT_ENV",
        # certificate bundles (paths only) so TLS clients keep working behind corporate CAs
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        # Windows: programs (Python included) fail to start without these
        "SYSTEMROOT",
        "SYSTEMDRIVE",
        "WINDIR",
        "COMSPEC",
        "PATHEXT",
    }
)
"""Names that pass from the server's environment (plus every ``LC_*``)."""

_LOCALE_NAME = re.compile(r"LC_[A-Z_]+")

_SECRET_NAME_PARTS = (
    "KEY",
    "SECRET",
    "TOKEN",
    "PASSW",
    "PASSPHRASE",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
    "PRIVATE",
    "SIGNATURE",
)
_SECRET_NAME_PREFIXES = (
    "AWS_",
    "AZURE_",
    "GCP_",
    "GOOGLE_",
    "GITHUB_",
    "GH_",
    "GITLAB_",
    "OPENAI_",
    "ANTHROPIC_",
    "HF_",
    "HUGGING",
    "NPM_",
    "PYPI_",
    "DOCKER_",
    "SSH_",
    "GPG_",
    "KUBE",
    "VAULT_",
)
_SECRET_VALUE = re.compile(
    "|".join(
        (
            r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{16,}",  # OpenAI, Anthropic (sk-ant-...), others
            r"\bgh[pousr]_[A-Za-z0-9]{16,}",  # GitHub tokens
            r"\bgithub_pat_[A-Za-z0-9_]{16,}",
            r"\bxox[abprs]-[A-Za-z0-9-]{10,}",  # Slack
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key ids
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY",
            r"\bglpat-[A-Za-z0-9_-]{16,}",  # GitLab
            r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
            r"\bnpm_[A-Za-z0-9]{30,}",
            r"\bpypi-[A-Za-z0-9_-]{30,}",
            r"\bAIza[0-9A-Za-z_-]{35}",  # Google API keys
            r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}",  # JWT
            r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@",  # URL with user:password@
        )
    )
)


def looks_secret(name: str, value: str) -> bool:
    """Whether a variable's name or value looks like a credential: it never reaches a child."""
    upper = name.upper()
    if any(part in upper for part in _SECRET_NAME_PARTS):
        return True
    if upper.startswith(_SECRET_NAME_PREFIXES):
        return True
    return _SECRET_VALUE.search(value) is not None


MASK = "[secret masked]"
"""What :func:`mask_secrets` writes in place of a credential."""

_ASSIGNMENT = re.compile(
    r"""(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)(?P<sep>["']?\s*[:=]\s*)(?P<quote>["']?)"""
    r"""(?P<value>[^\s"'&;|,)}]{6,})"""
)
_HTTP_AUTH = re.compile(r"(?i)\b(?P<scheme>bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{6,}")


def mask_secrets(text: str) -> str:
    """``text`` with every credential replaced by :data:`MASK`, by the rule that keeps them out
    of a child's environment: a value that looks like a token (:func:`looks_secret`'s patterns),
    and the value of any ``NAME=value`` / ``name: value`` whose name looks like a credential's
    (``GITHUB_TOKEN=...``, ``"api_key": "..."``). Used for what is written to disk (the audit
    log), where a secret must never land."""
    if not text:
        return text

    def assignment(match: re.Match[str]) -> str:
        if not looks_secret(match.group("name"), ""):
            return match.group(0)
        return f"{match.group('name')}{match.group('sep')}{match.group('quote')}{MASK}"

    masked = _HTTP_AUTH.sub(lambda m: f"{m.group('scheme')} {MASK}", text)
    masked = _ASSIGNMENT.sub(assignment, masked)
    return _SECRET_VALUE.sub(MASK, masked)


def _allowed(name: str) -> bool:
    key = name.upper() if os.name == "nt" else name
    return key in ALLOWED_NAMES or _LOCALE_NAME.fullmatch(key) is not None


def _valid(name: str, value: str) -> bool:
    return bool(name) and "=" not in name and "\0" not in name and "\0" not in value


def scrub_environment(
    source: Mapping[str, str] | None = None, *, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Build a child's environment from scratch.

    ``source`` (default ``os.environ``) contributes only allow-listed names whose name and value do
    not look secret; ``extra`` entries are added after the same secret check (no allow-list).
    ``PYTHONUNBUFFERED=1`` and ``PYTHONDONTWRITEBYTECODE=1`` are always set, and ``PATH`` defaults
    to ``os.defpath``.
    """
    if source is None:
        source = os.environ
    env: dict[str, str] = {}
    for name, value in source.items():
        if not _allowed(name) or not _valid(name, value):
            continue
        if looks_secret(name, value):
            log.info("Not passing %s to the child: its value looks like a credential.", name)
            continue
        env[name] = value
    for name, value in (extra or {}).items():
        if not _valid(name, value):
            log.warning("Not passing extra variable %r to the child: invalid name or value.", name)
        elif looks_secret(name, value):
            log.warning("Not passing extra variable %s to the child: it looks secret.", name)
        else:
            env[name] = value
    if "PATH" not in env:
        env["PATH"] = os.defpath
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env
