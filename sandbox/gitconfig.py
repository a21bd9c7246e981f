"""Reading git configuration files as text, never by running ``git``.

Running ``git config`` on a repository that approved code could have written is exactly what must
not happen (``core.fsmonitor`` runs a command on almost every git invocation), so the few values
the sandbox needs are parsed here: where hooks live (``core.hooksPath``), which other files are
included (``include.path``, ``includeIf.*.path``) and which keys name a program git will run.

The parser follows git's syntax closely enough for these values (sections and subsections,
case-insensitive names, quoting, escapes, comments, line continuations) and ignores what it does
not understand: a config file git refuses is one git runs nothing from.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

MAX_CONFIG_BYTES = 1 << 20
"""Larger files are not read (git configs are a few KiB)."""
MAX_INCLUDE_DEPTH = 10
"""git's own limit for nested includes."""

PROGRAM_KEYS: frozenset[str] = frozenset(
    {
        "core.fsmonitor",
        "core.sshcommand",
        "core.pager",
        "core.editor",
        "core.askpass",
        "core.gitproxy",
        "diff.external",
        "sequence.editor",
        "gpg.program",
        "credential.helper",
        "web.browser",
        "sendemail.sendmailcmd",
    }
)
"""``section.key`` names whose value is a program git runs."""
PROGRAM_SUFFIXES: frozenset[str] = frozenset(
    {"command", "textconv", "driver", "clean", "smudge", "process", "helper", "program", "cmd"}
)
"""Keys of ``section.subsection.key`` entries whose value is a program (``diff.x.textconv``,
``filter.x.smudge``, ``merge.x.driver``, ``credential.url.helper``, ``gpg.ssh.program``, ...)."""


@dataclass(frozen=True)
class Entry:
    """One ``key = value`` line: ``section`` and ``key`` lower-cased, ``subsection`` as written."""

    section: str
    subsection: str | None
    key: str
    value: str | None
    """None for a bare ``key`` line (a boolean true)."""

    @property
    def name(self) -> str:
        if self.subsection is None:
            return f"{self.section}.{self.key}"
        return f"{self.section}.{self.subsection}.{self.key}"


def _unquote(raw: str) -> str:
    """A value as git reads it: quotes removed, escapes applied, comments and trailing space cut."""
    out: list[str] = []
    quoted = False
    pending_space = ""
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            out.append(pending_space + {"n": "\n", "t": "\t", "b": "\b"}.get(nxt, nxt))
            pending_space = ""
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "#;":
            break
        elif not quoted and ch.isspace():
            pending_space += ch
        else:
            out.append(pending_space + ch)
            pending_space = ""
        i += 1
    return "".join(out)


def _section_header(line: str) -> tuple[str, str | None] | None:
    """``[core]``, ``[remote "origin"]`` or the old ``[branch.main]``; None when malformed."""
    end = line.rfind("]")
    if end < 0:
        return None
    inner = line[1:end].strip()
    if '"' in inner:
        name, _, rest = inner.partition('"')
        sub = rest[: rest.rfind('"')] if '"' in rest else rest
        return name.strip().lower(), sub.replace('\\"', '"').replace("\\\\", "\\")
    if "." in inner:
        name, _, sub = inner.partition(".")
        return name.lower(), sub.lower()
    return inner.lower(), None


def _logical_lines(text: str) -> Iterator[str]:
    """Lines with backslash-newline continuations joined."""
    pending = ""
    for line in text.splitlines():
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def parse(text: str) -> list[Entry]:
    """Every entry of a config file, in order."""
    entries: list[Entry] = []
    section: tuple[str, str | None] | None = None
    for raw in _logical_lines(text):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = _section_header(line)
            close = line.rfind("]")
            line = line[close + 1 :].strip() if close >= 0 else ""
            if not line or line[0] in "#;":
                continue
        if section is None:
            continue
        key, eq, value = line.partition("=")
        key = key.strip().lower()
        if not key or not (key[0].isalpha()):
            continue
        entries.append(Entry(section[0], section[1], key, _unquote(value.strip()) if eq else None))
    return entries


def read_text(path: str, opener: Callable[[str], int] | None = None) -> str | None:
    """A config file's text (None when missing, unreadable or too large). ``opener`` opens it
    (for example relative to a directory descriptor, without following symbolic links)."""
    try:
        fd = opener(path) if opener else os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        data = os.read(fd, MAX_CONFIG_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_CONFIG_BYTES:
        return None
    return data.decode("utf-8", errors="replace")


def included_paths(entries: list[Entry], config_dir: str) -> list[str]:
    """Files included by ``include.path`` and ``includeIf.<cond>.path`` (every condition taken as
    true: a file that might be included must be treated as included), as absolute paths."""
    found: list[str] = []
    for entry in entries:
        if entry.key != "path" or entry.value is None:
            continue
        if entry.section in {"include", "includeif"}:
            found.append(expand(entry.value, config_dir))
    return found


def expand(value: str, base: str) -> str:
    """A path value as git resolves it: ``~`` expanded, relative to ``base``."""
    path = os.path.expanduser(value) if value.startswith("~") else value
    return os.path.normpath(os.path.join(base, path))


def program_of(entry: Entry) -> str | None:
    """The program an entry names, when it names one (the first word, ``!`` removed)."""
    if entry.value is None:
        return None
    name = f"{entry.section}.{entry.key}"
    is_alias = entry.section == "alias" and entry.value.startswith("!")
    wanted = name in PROGRAM_KEYS or (
        entry.subsection is not None and entry.key in PROGRAM_SUFFIXES
    )
    if entry.section == "pager" or is_alias:
        wanted = True
    if not wanted:
        return None
    words = entry.value.lstrip("!").strip().split()
    if not words or words[0].lower() in ("true", "false", "yes", "no", "on", "off", "1", "0"):
        return None
    return words[0].strip("'\"")


def collect(
    path: str, opener: Callable[[str], int] | None = None, depth: int = 0
) -> tuple[list[Entry], list[str]]:
    """Entries of ``path`` and of every file it includes (recursively), and the files read."""
    text = read_text(path, opener)
    if text is None:
        return [], []
    entries = parse(text)
    files = [path]
    if depth < MAX_INCLUDE_DEPTH:
        for included in included_paths(entries, os.path.dirname(path)):
            more, more_files = collect(included, None, depth + 1)
            entries += more
            files += more_files
    return entries, files


def global_config_files(env: dict[str, str] | None = None) -> list[str]:
    """The system and user config files git reads for every repository."""
    env = dict(os.environ) if env is None else env
    home = env.get("HOME") or os.path.expanduser("~")
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return [
        env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig",
        os.path.join(xdg, "git", "config"),
        env.get("GIT_CONFIG_GLOBAL") or os.path.join(home, ".gitconfig"),
    ]


def hooks_paths(entries: list[Entry]) -> list[str]:
    """Every ``core.hooksPath`` value (the last one wins in git; all are protected here)."""
    return [e.value for e in entries if e.name == "core.hookspath" and e.value]
