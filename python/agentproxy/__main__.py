"""`python -m agentproxy ARGS`: run the installed binary with ARGS."""

import os
import subprocess
import sys

from agentproxy import find_binary


def main() -> int:
    binary = find_binary()
    if os.name == "posix":
        os.execv(binary, [binary, *sys.argv[1:]])
    return subprocess.call([binary, *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
