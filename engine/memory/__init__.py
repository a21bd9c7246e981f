"""Gatehouse's memory: what outlives a server, kept in the user's data folder.

- :mod:`engine.memory.places`: where each workspace's memory lives (the key is a hash of the
  workspace's real path).
- :mod:`engine.memory.store`: sessions (messages, tool calls, decisions, grants, model and
  settings) in one SQLite database per workspace (WAL); its schema in
  :mod:`engine.memory.schema`, who has a session open in :mod:`engine.memory.owners`.
- :mod:`engine.memory.audit`: the audit log, one JSON record per line, hash-chained and fsynced
  before the call it describes runs.
- :mod:`engine.memory.shadow`: the shadow git repository (its own ``GIT_DIR``, the workspace as
  work tree), with git run by :mod:`engine.memory.git` (no user, system or workspace
  configuration, plumbing only).
- :mod:`engine.memory.checkpoints`: checkpoints of a workspace, what a turn changed, and
  :mod:`engine.memory.rewind`: writing a checkpoint back, never through a symbolic link.
- :mod:`engine.memory.journal`: the one object a turn reports to (the loop's hooks,
  :mod:`engine.hooks`), and :mod:`engine.memory.workspace_memory`: the threads that do the disk
  work.
- :mod:`engine.memory.kinds`: the literals the wire protocol imports.

Nothing here runs on the event loop: every disk or git operation is a blocking function the
server calls in a worker thread. Why SQLite, why a shadow repository and what each guarantees
after ``kill -9`` is in ``docs/memory.md``.
"""
