"""``deskbench browse``: the store in Datasette, read-only, on 127.0.0.1 by default.

Every table and column carries its title and description, the canned queries and facets come
from :mod:`store.descriptions`, and the file is opened read-only (Datasette's ``mode=ro``), so a
store that a running batch is writing (WAL) can be browsed at the same time and nothing a
browser does can change it.
"""
from __future__ import annotations

import argparse
import asyncio
import socket
import sqlite3
import time
import webbrowser
from pathlib import Path
from typing import Any

from rich.markup import escape

from harness.cli.common import add_config_args, build_config, console
from store import CANNED_QUERIES, TABLES, StoreError

SETTINGS = {"default_page_size": 50, "sql_time_limit_ms": 5000, "facet_time_limit_ms": 500,
            "truncate_cells_html": 400, "max_returned_rows": 5000}
"""Datasette settings: pages of 50 rows, long messages cut to 400 characters on table pages."""


def add_browse_command(sub) -> None:
    """Add ``browse``: serve the store in Datasette until Ctrl-C."""
    p = sub.add_parser("browse", help="browse the store in Datasette (read-only; tables, canned queries, facets)",
                       description="Serve the store read-only in Datasette: every table and column "
                       "described, canned queries (a run turn by turn, the lowest agent turns, failed "
                       "judgments, a task across runs, a study's sessions) and facets. A store a batch "
                       "is writing can be browsed while it runs.")
    add_config_args(p)
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (0.0.0.0 for a network)")
    p.add_argument("--port", type=int, default=8001, help="port (0: any free port)")
    p.add_argument("--open", action="store_true", help="open the page in a web browser")
    p.set_defaults(func=cmd_browse)


def check_store(path: Path) -> None:
    """Raise :class:`StoreError` naming the fix when ``path`` is missing or not a deskbench store
    (read-only: nothing is created or changed)."""
    if not path.exists():
        raise StoreError(f"no store at {path}. Pass --store with a store file (a run writes one: "
                         "`deskbench demo`, `deskbench run`), or run from the folder that holds runs/.")
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            conn.execute("select value from meta where key = 'schema_version'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a deskbench store ({exc}). Pass --store with a store "
                         "that a deskbench command wrote.") from exc


def datasette_metadata(db_name: str, path: Path) -> dict[str, Any]:
    """Datasette metadata for the store: titles, descriptions, column descriptions, facets, sort
    orders and the canned queries, under the database name ``db_name``."""
    tables = {}
    for name, spec in TABLES.items():
        table = {"title": spec["title"], "description": spec["description"], "columns": dict(spec["columns"])}
        if spec.get("facets"):
            table["facets"] = list(spec["facets"])
        if spec.get("sort_desc"):
            table["sort_desc"] = spec["sort_desc"]
        tables[name] = table
    queries = {name: {"sql": q["sql"], "title": q["title"], "description": q["description"]}
               for name, q in CANNED_QUERIES.items()}
    return {"title": f"deskbench store: {path.name}",
            "description": "SelfScore and NoisyToolBench runs, conversations, turns, judgments and "
                           "scores, read-only. Start with a canned query below.",
            "databases": {db_name: {"tables": tables, "queries": queries}}}


def make_datasette(path: Path):
    """A Datasette instance over the store at ``path`` (read-only), with the store's metadata."""
    from datasette.app import Datasette
    return Datasette([str(path)], settings=SETTINGS, metadata=datasette_metadata(path.stem, path))


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


async def serve(path: Path, sock: socket.socket, open_browser: bool = False) -> None:
    """Serve Datasette over the store on ``sock`` until cancelled; prints the address once the
    first page can be served."""
    import uvicorn
    started = time.monotonic()
    ds = make_datasette(path)
    await ds.invoke_startup()
    config = uvicorn.Config(ds.app(), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    host, port = sock.getsockname()[:2]
    url = f"http://{host if ':' not in host else f'[{host}]'}:{port}/{path.stem}"

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.05)
        console.print(f"deskbench browse: {url}", highlight=False, soft_wrap=True)
        console.print(f"store: {path} (read-only)  ready in {time.monotonic() - started:.1f} s  "
                      "Ctrl-C stops.", highlight=False, soft_wrap=True)
        console.file.flush()
        if open_browser:
            webbrowser.open(url)

    waiter = asyncio.ensure_future(announce())
    try:
        await server.serve(sockets=[sock])
    finally:
        waiter.cancel()


def cmd_browse(args: argparse.Namespace) -> int:
    """``deskbench browse``: serve the store until Ctrl-C or SIGTERM; 0, or 2 on a missing store
    or a port in use."""
    path = Path(build_config(args).store).resolve()
    check_store(path)
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        console.print(f"[red]error:[/] cannot listen on {args.host}:{args.port} ({escape(str(exc))}). "
                      "Pass --port with a free port (or 0 for any).", highlight=False)
        return 2
    try:
        asyncio.run(serve(path, sock, args.open))
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return 0
