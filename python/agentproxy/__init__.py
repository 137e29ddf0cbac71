"""agentproxy: record and replay the model traffic of LLM agents.

The wheel installs the `agentproxy` binary on the environment's PATH; `find_binary()`
locates it for code that starts it by path.
"""

import os
import sys
import sysconfig


def find_binary() -> str:
    """The path of the agentproxy binary this package was installed with."""
    name = "agentproxy" + (".exe" if sys.platform == "win32" else "")
    schemes = [sysconfig.get_default_scheme()] if hasattr(sysconfig, "get_default_scheme") else []
    schemes.append("posix_user" if os.name == "posix" else "nt_user")
    for scheme in schemes:
        try:
            scripts = sysconfig.get_path("scripts", scheme=scheme)
        except KeyError:
            continue
        path = os.path.join(scripts, name)
        if os.path.isfile(path):
            return path
    # A venv's own scripts directory, when its scheme is not the default one.
    path = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.isfile(path):
        return path
    raise FileNotFoundError(f"the agentproxy binary is not installed next to {sys.executable}")
