"""Rules: allow / ask / deny, matched on what a call really does.

- :mod:`engine.rules.model`: a rule, its pattern for each kind of tool, its stable id.
- :mod:`engine.rules.words` and :mod:`engine.rules.shell`: what a terminal command line runs
  (two readers; allowing needs both to agree).
- :mod:`engine.rules.matching`: deny and ask match broadly, allow narrowly.
- :mod:`engine.rules.policy`: the order of flags and rules (deny > ask > allow; rules never turn
  a confirm flag off).
- :mod:`engine.rules.decision`: who decided (:class:`DecidedBy`), the choices of a prompt.
- :mod:`engine.rules.store`: the sources (built-in, user, workspace, session).

:mod:`engine.rules.book`: what one turn decides with (the loaded rules and the session's grants).
:mod:`engine.rules.kinds`: the literals (light: the wire protocol imports them).

Nothing is imported here, so the protocol can import the literals without the parsers.
"""
