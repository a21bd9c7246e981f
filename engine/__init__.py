"""The agent engine: model backends, tool-call parsing, the agent loop, tools and the gate policy.

Nothing here knows about JSON-RPC: the loop yields typed events (:mod:`engine.events`) and awaits
an approval callback, so the stdio server and any other transport are thin adapters over it.
"""

__version__ = "0.1.0"
