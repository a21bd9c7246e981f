"""Golden transcripts of every flow in docs/protocol.md, shared by the Python and TypeScript tests.

``transcripts/*.json`` are the exact message sequences (ids and paths normalised to placeholders);
``flows.py`` defines the flows and re-records the files (``python -m tests.golden.flows``);
``transcript.py`` replays one against a real server.
"""
