"""Paths every confining tier hides. Dependency-free: the launcher imports it at start-up."""

HIDDEN_ROOTS: tuple[str, ...] = ("/home", "/root", "/run", "/tmp", "/var/tmp")
"""User files, sockets (D-Bus, ssh-agent, docker) and temp folders."""

SYSTEM_SECRETS: tuple[str, ...] = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh",  # host private keys
    "/etc/ssl/private",
    "/var/backups",  # Debian keeps copies of shadow here
)
"""Readable by root even without capabilities (a root server's commands map to root)."""

KERNEL_KNOBS: tuple[str, ...] = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")
"""Writable by (mapped) root through file modes, not capabilities: ``core_pattern`` in
``/proc/sys`` would run a program as real root on the host. Mounted read-only."""
