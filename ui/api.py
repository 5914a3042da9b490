"""The app's small programmatic API: named endpoints (``/live_*``) for ``gradio_client``
(load tests, scripted participants), making the same ``harness.live`` calls as the page.
"""
from __future__ import annotations

import functools
from typing import Any

import gradio as gr

from harness.live.guards import LiveError
from harness.live.services import AppServices
from harness.live.views import SessionView
from ui.helpdesk_view import check_start_rate


def add_api(services: AppServices) -> None:
    """Named endpoints for ``gradio_client``: the same harness calls as the page."""
    live = services.live

    def view_dict(view: SessionView) -> dict[str, Any]:
        return {"session": view.session_id, "status": view.status, "mode": view.mode,
                "awaiting": view.awaiting, "stop_reason": view.stop_reason,
                "messages": [{"role": m.role, "content": m.content} for m in view.messages],
                "turns": len(view.turns), "agent_error": view.agent_error}

    def guard(fn):
        @functools.wraps(fn)
        async def wrapper(*args, **kwargs):
            try:
                return await fn(*args, **kwargs)
            except LiveError as exc:
                return {"error": str(exc)}
        return wrapper

    @guard
    async def live_start(question: str, agent: str = "", request: gr.Request = None) -> dict:
        """Start a free session as the user with your own problem (not yet sent); ``agent``: one
        of the app's agents (default its first: the team's own with ``--agent http``)."""
        check_start_rate(services, request)
        agent = agent or services.config.app.agents[0]
        return view_dict(await live.start(mode="user", agent=agent, question=question))

    @guard
    async def live_send(session: str, text: str) -> dict:
        """Send your next message; returns the session after the agent's reply and judgments."""
        last = None
        async for update in live.send(session, text):
            last = update
        return view_dict(last.view)

    @guard
    async def live_view(session: str) -> dict:
        """The session as its page shows it."""
        return view_dict(await live.view(session))

    @guard
    async def live_rate(session: str, turn: int, helpfulness: int, solved: bool,
                        naturalness: int | None = None, comprehensibility: int | None = None) -> dict:
        """Rate the agent's reply of one turn (1-10) and say whether the problem is solved; a
        spoken reply's voice may also be rated for naturalness and comprehensibility (1-5)."""
        live.rate(session, int(turn), int(helpfulness), bool(solved),
                  naturalness=None if naturalness is None else int(naturalness),
                  comprehensibility=None if comprehensibility is None else int(comprehensibility))
        return view_dict(await live.view(session))

    @guard
    async def live_end(session: str) -> dict:
        """End the session; it is scored from its stored turns."""
        return view_dict(await live.end(session))

    for fn in (live_start, live_send, live_view, live_rate, live_end):
        gr.api(fn, api_name=fn.__name__)

    async def live_send_audio(session: str, audio: str | None) -> dict:
        """Send a spoken message (an audio file); returns the session and the spoken reply."""
        try:
            last = None
            async for update in live.send_audio(session, audio):
                last = update
            return {**view_dict(last.view), "reply_audio": last.audio}
        except LiveError as exc:
            return {"error": str(exc)}

    with gr.Row(visible=False):  # API only: a file input needs a component
        api_session = gr.Textbox()
        api_audio = gr.Audio(type="filepath", sources=["upload"])
        api_result = gr.JSON()
    gr.Button(visible=False).click(live_send_audio, [api_session, api_audio], api_result,
                                   api_name="live_send_audio")
