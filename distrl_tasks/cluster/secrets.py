"""Generated secrets of a local deployment, kept in one 0600 file outside the repository.

``runs/`` is git-ignored, so ``runs/cluster/secrets/secrets.json`` never reaches a commit. The
values are URL-safe (they go into connection URLs) and are made once: a restarted cluster finds
the Postgres data directory initialised with the same passwords.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from pathlib import Path

from distrl_tasks.protocol.files import atomic_write_text

# name -> how it is generated; the Fernet key must be 32 url-safe base64-encoded bytes
SECRET_NAMES = (
    "postgres_superuser",
    "airflow_db",
    "mlflow_db",
    "redis",
    "fernet_key",
    "jwt_secret",
    "api_secret_key",
    "admin_password",  # the Airflow UI/API user's; pre-set so Airflow never prints one it made
)


def _generate(name: str) -> str:
    if name == "fernet_key":
        return base64.urlsafe_b64encode(os.urandom(32)).decode()
    return secrets.token_hex(24)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` atomically to ``path`` with mode 0600 (created so, never world-readable)."""
    atomic_write_text(path, text, mode=0o600)


def load_or_create(secrets_dir: Path) -> dict[str, str]:
    """The deployment's secrets from ``secrets_dir/secrets.json``, generating missing ones.

    Raises:
        ValueError: the file exists but is not a JSON object of strings, or is readable by others.
    """
    secrets_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(secrets_dir, 0o700)
    path = secrets_dir / "secrets.json"
    found: dict[str, str] = {}
    if path.exists():
        if path.stat().st_mode & 0o077:
            raise ValueError(f"{path}: readable by group or others; chmod 600 it")
        try:
            found = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc})") from exc
        if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
            raise ValueError(f"{path}: must hold a JSON object of strings")
    missing = [n for n in SECRET_NAMES if not found.get(n)]
    if missing:
        found.update({n: _generate(n) for n in missing})
        write_private(path, json.dumps(found, indent=2, sort_keys=True) + "\n")
    return found


def write_passwords_file(path: Path, user: str, password: str) -> None:
    """SimpleAuthManager's passwords file, written by us (0600) before the api-server starts:
    a user missing from it would get a generated password printed to the api-server's log."""
    write_private(path, json.dumps({user: password}) + "\n")
