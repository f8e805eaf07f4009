"""Debian's Postgres as the cluster's database server: initialised once, roles made idempotently.

Postgres refuses to run as root, so when the launcher is root the server (and ``initdb``) run as
the ``postgres`` system user that Debian's package creates, through ``setpriv`` (which execs, so
the recorded pid is the server's own). Airflow and MLflow get a role and a database each.
"""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

from distrl_tasks.cluster.secrets import write_private
from distrl_tasks.cluster.services import LOOPBACK, postgres_bin_dir

SYSTEM_USER = "postgres"
ROLES = (("airflow", "airflow_db"), ("mlflow", "mlflow_db"))  # role/database -> secret name


def user_prefix() -> list[str]:
    """The argv prefix that runs a program as ``postgres`` when we are root, else nothing.

    Raises:
        RuntimeError: running as root and no ``postgres`` user exists.
    """
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError as exc:
        raise RuntimeError(
            "running as root needs the 'postgres' system user (Debian's postgresql package)"
        ) from exc
    return ["setpriv", f"--reuid={SYSTEM_USER}", f"--regid={SYSTEM_USER}", "--init-groups", "--"]


def _give_to_postgres(directory: Path) -> None:
    """Make ``directory`` the postgres user's, and check that user can reach it."""
    entry = pwd.getpwnam(SYSTEM_USER)
    for parent in directory.resolve().parents:
        st = parent.stat()
        if st.st_uid != entry.pw_uid and not st.st_mode & 0o001:
            raise RuntimeError(
                f"the postgres user cannot enter {parent} (mode {oct(st.st_mode & 0o777)}): "
                "chmod o+x it or put the cluster directory elsewhere"
            )
    for path in [directory, *directory.rglob("*")]:
        os.chown(path, entry.pw_uid, entry.pw_gid)


def initialise(directory: Path, superuser_password: str) -> bool:
    """``initdb`` into ``directory/data`` unless it is initialised; returns whether it ran.

    Raises:
        RuntimeError: ``initdb`` failed (its output is in the message).
    """
    data = directory / "data"
    if (data / "PG_VERSION").exists():
        return False
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    pwfile = directory / ".initdb-password"
    write_private(pwfile, superuser_password + "\n")
    prefix = user_prefix()
    if prefix:
        _give_to_postgres(directory)
    try:
        done = subprocess.run(
            [
                *prefix,
                str(postgres_bin_dir() / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=scram-sha-256",
                f"--pwfile={pwfile}",
                "-E",
                "UTF8",
                "--no-instructions",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        pwfile.unlink(missing_ok=True)
    if done.returncode != 0:
        raise RuntimeError(f"initdb failed ({done.returncode}): {done.stderr[-2000:]}")
    return True


def ensure_roles(port: int, secrets: dict[str, str]) -> None:
    """Create (or re-password) the ``airflow`` and ``mlflow`` roles and their databases."""
    import psycopg2  # lazy: the cluster extra
    from psycopg2 import sql  # lazy: the cluster extra

    conn = psycopg2.connect(
        host=LOOPBACK,
        port=port,
        user="postgres",
        password=secrets["postgres_superuser"],
        dbname="postgres",
        connect_timeout=10,
    )
    conn.autocommit = True  # CREATE DATABASE cannot run in a transaction
    try:
        with conn.cursor() as cur:
            for role, secret in ROLES:
                cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
                verb = "ALTER" if cur.fetchone() else "CREATE"
                cur.execute(
                    sql.SQL(verb + " ROLE {} LOGIN PASSWORD %s").format(sql.Identifier(role)),
                    (secrets[secret],),
                )
                cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (role,))
                if not cur.fetchone():
                    cur.execute(
                        sql.SQL("CREATE DATABASE {} OWNER {}").format(
                            sql.Identifier(role), sql.Identifier(role)
                        )
                    )
    finally:
        conn.close()
