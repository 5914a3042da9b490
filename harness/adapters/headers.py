"""Headers of the agent's requests: ``${VAR}`` in a value reads an environment variable when the
agent is built, so that a token never sits in a config file or the store."""
from __future__ import annotations

import os
import re
from typing import Mapping

from harness.config import ConfigError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_headers(headers: Mapping[str, str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``headers`` with every ``${VAR}`` replaced by the variable's value.

    Raises:
        ConfigError: a header names a variable that is not set (the header and the variable named).
    """
    environ = os.environ if environ is None else environ
    out = {}
    for name, value in headers.items():
        missing = [v for v in _VAR.findall(value) if v not in environ]
        if missing:
            raise ConfigError(f"agent header {name!r} reads the environment variable {missing[0]}, which is "
                              f"not set. Set it (export {missing[0]}=...) or pass the header's value itself.")
        out[name] = _VAR.sub(lambda m: environ[m.group(1)], value)
    return out
