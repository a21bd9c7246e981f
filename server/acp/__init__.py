"""The Agent Client Protocol mode: ``gatehouse acp``.

A second transport beside the LSP one (:mod:`server.app`), over the official Python SDK
(``agent-client-protocol``): newline-delimited JSON-RPC on stdio, as Zed, JetBrains IDEs,
CodeCompanion, agent-shell, acpx and Toad speak it. It drives the very same
:class:`server.service.AgentService` (one engine loop, one gate, one sandbox box per session, the
same fail-closed rules); only the wire differs:

- :mod:`server.acp.agent`: the ACP methods (``initialize``, ``session/new``, ``session/load``,
  ``session/prompt``, ``session/cancel``);
- :mod:`server.acp.updates`: engine events -> ``session/update`` (message and thought chunks,
  ``tool_call`` / ``tool_call_update``), sent in order;
- :mod:`server.acp.permissions`: gated calls -> ``session/request_permission``, and its answer
  -> an approval outcome (every doubt fails closed);
- :mod:`server.acp.serve`: the process (stdio, logging, the sandbox probe).

The SDK is imported only here, and only by ``gatehouse acp``: the LSP server never loads it.
``docs/acp.md`` documents the mapping.
"""
