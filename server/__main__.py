"""``python -m server`` is ``gatehouse serve`` (``python -m server chat ...`` also works)."""

import sys

from server.cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        args = ["serve", *args]
    sys.exit(main(args))
