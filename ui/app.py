"""The Gradio app: live help-desk sessions, studies, ratings and results.

:func:`build_app` composes the tabs: *Help desk* (``ui/helpdesk_tab.py``, its handlers in
``ui/helpdesk_handlers.py``, its rendering in ``ui/helpdesk_view.py``), *NoisyToolBench*
(``ui/ntb_tab.py``) and *Organiser* (``ui/organiser.py``), then the named API (``ui/api.py``);
:func:`launch` starts it.

Thin by design: every handler calls ``harness`` (live sessions, studies, results) and lays
out what it returns. The only per-browser state is ids (session token, participant pseudonym,
study id, drawn task index), kept in the browser's local storage so a reload finds the
session again.
"""
from __future__ import annotations

from typing import Any

import gradio as gr

from harness.live.services import AppServices
from ui.api import add_api
from ui.helpdesk_handlers import HelpDeskHandlers
from ui.helpdesk_tab import build_helpdesk_tab, wire_helpdesk
from ui.helpdesk_view import EMPTY_IDS
from ui.ntb_tab import build_ntb_tab
from ui.organiser import build_organiser


def build_app(services: AppServices) -> gr.Blocks:
    """The whole app as a queued ``gr.Blocks``: the three tabs, their events and the named API."""
    cfg = services.config.app
    handlers = HelpDeskHandlers(services)
    with gr.Blocks(title="deskbench live") as demo:
        ids = gr.BrowserState(dict(EMPTY_IDS), storage_key="deskbench-live")
        with gr.Tabs():
            page = build_helpdesk_tab(services)

            build_ntb_tab(services)  # a person as the NoisyToolBench user

            with gr.Tab("Organiser", id="organiser"):
                build_organiser(services)

        wire_helpdesk(demo, page, ids, handlers, cfg.concurrency)
        add_api(services)
    demo.queue(default_concurrency_limit=cfg.concurrency)
    return demo


def launch(services: AppServices, **kwargs) -> tuple[Any, str]:
    """Build and launch the app without blocking; returns (app, local URL)."""
    demo = build_app(services)
    cfg = services.config.app
    app, url, _ = demo.launch(server_name=cfg.host, server_port=cfg.port or None,
                              prevent_thread_lock=True, quiet=True, footer_links=[],
                              allowed_paths=[str(services.out_dir.resolve())], **kwargs)
    services.app_url = url
    return demo, url
