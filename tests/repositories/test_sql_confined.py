"""Every SQL statement of the gateway lives in gateway/repositories (issue 11).

Read from the source: a module outside the repositories (and gateway/db, the engine and
migrations) that builds a statement (select, insert, update, delete, text, ...) or runs
one on a session or connection (execute, scalar(s), get, add, delete, ...) is named
here, with the line. Services flush; nothing outside gateway/db commits or rolls back:
the unit of work (gateway.db.engine.transaction) does, at the boundary.
"""

from __future__ import annotations

import ast
from pathlib import Path

GATEWAY = Path(__file__).resolve().parents[2] / "gateway"
# Where statements belong.
HOMES = ("repositories", "db")
STATEMENT_BUILDERS = {"select", "insert", "update", "delete", "text", "func", "exists",
                      "union", "bindparam", "tuple_", "and_", "or_", "true", "false"}
SESSION_CALLS = {"execute", "scalar", "scalars", "get", "add", "add_all", "delete", "merge",
                 "query", "exec_driver_sql", "commit", "rollback", "begin_nested"}
RECEIVERS = {"session", "conn", "connection"}


def _outside_homes() -> list[Path]:
    files = []
    for path in sorted(GATEWAY.rglob("*.py")):
        rel = path.relative_to(GATEWAY).as_posix()
        if rel.split("/")[0] in HOMES:
            continue
        files.append(path)
    return files


def _receiver(node: ast.expr) -> str | None:
    """`session` for session.x / self.session.x / self._server.session.x; else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def sql_outside_repositories() -> list[str]:
    found = []
    for path in _outside_homes():
        tree = ast.parse(path.read_text(), filename=str(path))
        rel = path.relative_to(GATEWAY.parent).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sqlalchemy"):
                for alias in node.names:
                    if alias.name in STATEMENT_BUILDERS:
                        found.append(f"{rel}:{node.lineno} imports sqlalchemy.{alias.name}")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in SESSION_CALLS
                  and (_receiver(node.func.value) or "").lstrip("_") in RECEIVERS):
                found.append(f"{rel}:{node.lineno} calls .{node.func.attr}() on a "
                             f"{_receiver(node.func.value)}")
    return found


def test_no_sql_outside_repositories() -> None:
    assert sql_outside_repositories() == []


def test_the_check_sees_a_statement() -> None:
    """The scan itself finds what it looks for (so an empty answer means something)."""
    tree = ast.parse("from sqlalchemy import select\nsession.execute(select(1))\n"
                     "self.session.commit()\n")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and n.func.attr in SESSION_CALLS
             and (_receiver(n.func.value) or "").lstrip("_") in RECEIVERS]
    imports = [a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
               for a in n.names if a.name in STATEMENT_BUILDERS]
    assert [c.func.attr for c in calls] == ["execute", "commit"]  # type: ignore[attr-defined]
    assert imports == ["select"]
