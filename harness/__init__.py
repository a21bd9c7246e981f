"""``gatehouse chat``: the terminal client, beside the server it drives.

It is an ordinary client of the wire contract (:mod:`server.protocol`): it spawns ``gatehouse
serve`` as a child, speaks JSON-RPC over its stdio, and reads every message through the protocol
models. It imports nothing from ``engine/`` or ``sandbox/`` and nothing of the server's runtime;
what it shows is exactly what any editor would get.

- :mod:`harness.connection`: the JSON-RPC connection to the server child.
- :mod:`harness.terminal`: reading the person's answers without blocking the event loop.
- :mod:`harness.view`: how a turn is shown (every model-written text through the display rule).
- :mod:`harness.chat`: the conversation, approvals, Ctrl-C and the REPL.
"""
