"""Isolated execution of approved code. The one entry point through which code runs is
:func:`sandbox.runner.execute`."""
