"""Where a local tracking store lives, read from its URI without importing MLflow.

Commands that only need to know whether a project has a registry yet (``distrl eval`` refusing a
mistyped ``--policy`` before it creates anything) use this instead of opening the store.
"""

from __future__ import annotations

import os
from pathlib import Path


def local_store_file(uri: str, root: str | os.PathLike = ".") -> Path | None:
    """The database file of a local SQLite tracking URI (relative to ``root``), without
    creating anything; None for any other kind of store (a file store, a server)."""
    if not uri.startswith("sqlite:///"):
        return None
    path_part = uri[len("sqlite:///") :].partition("?")[0]
    if path_part in ("", ":memory:"):
        return None
    path = Path(path_part)
    return path if path.is_absolute() else Path(root).resolve() / path
