"""The Help desk tab's handlers: a live session as the user or as the agent, free or in a
study, typed or spoken, and the person's ratings.

:class:`HelpDeskHandlers` holds them; each calls ``harness`` (``services.live``,
``services.studies``) and lays out what it returns with ``ui/helpdesk_view.py``.
``ui/helpdesk_tab.py`` lays out the tab and wires them to its components.
"""
from __future__ import annotations

import secrets
from dataclasses import replace

import gradio as gr

from graphs.protocols import Message
from harness.live.guards import LiveError
from harness.live.services import AppServices
from harness.live.studies import CLOSED, CLOSED_MESSAGE
from harness.live.views import SessionView
from ui.helpdesk_view import (EMPTY_IDS, PERSON_ROLE, audio_data_url, chat_messages,
                              check_start_rate, judge_scores, last_reply_spoken, rating_resets,
                              reply_stream, scenario_text, status_line, warn, with_defaults)


class HelpDeskHandlers:
    """The Help desk tab's event handlers, bound to one app's services. Each takes the page's
    inputs and the browser's ids and returns (or, streaming, yields) :meth:`outputs_for`, some
    followed by a few outputs of their own."""

    def __init__(self, services: AppServices):
        self.services = services
        self.live, self.studies, self.cfg = services.live, services.studies, services.config.app
        self.show_scores = self.cfg.show_judge_scores

    def outputs_for(self, view: SessionView | None, ids: dict, note: str = "",
                    partial: str | None = None):
        """The session outputs the page updates after each event, in ``session_outputs``
        order: chat, status, scenario, the two rating rows' and the Next button's visibility,
        judge scores, the four rating widgets, and the ids (naming the shown reply)."""
        rate_visible = bool(view and view.mode == "user" and view.turns and view.status == "active")
        in_study = bool(ids.get("study"))
        next_visible = bool(view and view.status != "active" and in_study)
        ratings, ids = rating_resets(view, ids)
        return (chat_messages(view, partial), note or status_line(view), scenario_text(view),
                gr.update(visible=rate_visible),
                gr.update(visible=rate_visible and last_reply_spoken(view)),
                gr.update(visible=next_visible),
                judge_scores(view) if self.show_scores else "", *ratings, ids)

    async def current(self, ids: dict) -> SessionView | None:
        """The browser's session as the page shows it, or None (no session, or one it may not see)."""
        if not ids.get("session"):
            return None
        try:
            return await self.live.view(ids["session"], ids.get("participant") or None)
        except LiveError:
            return None

    async def on_load(self, ids: dict, request: gr.Request):
        """Page load: show the browser's session again (its ids are reset when the address's
        ``?study=ID`` differs from theirs), the study's title and consent, and either the join box
        (a study not yet joined) or the free-session row (no study)."""
        ids = with_defaults(ids)
        study_id = (request.query_params.get("study") or "").strip() if request else ""
        if study_id != ids.get("study"):
            ids = {**EMPTY_IDS, "study": study_id}
        join_title, consent = "", ""
        if study_id:
            try:
                study = self.studies.study(study_id)
                join_title = f"## {study['name']}"
                if study["status"] == CLOSED:
                    join_title += f"\n\n⚠️ {CLOSED_MESSAGE}"
                consent = study["config"]["consent"]
            except LiveError as exc:
                join_title = warn(exc)
        view = await self.current(ids)
        joined = bool(ids.get("participant"))
        return (*self.outputs_for(view, ids),
                gr.update(visible=bool(study_id) and not joined), join_title, consent,
                gr.update(visible=not study_id))

    def refuse_in_study(self, ids: dict) -> None:
        """Raise LiveError in a study: its conversations start only with Join or Next."""
        if ids.get("study"):
            raise LiveError("Press 'Next conversation' (or join the study) first.")

    async def start_free_user_session(self, ids: dict, request: gr.Request | None,
                                      first_message: str):
        """A free session as the user: on the drawn task (if any) or on the first message."""
        check_start_rate(self.services, request)
        agent = ids.get("agent") or self.cfg.agents[0]
        if ids.get("task", -1) >= 0:
            task, dataset = self.services.free_task(ids["task"])
            view = await self.live.start(mode="user", agent=agent, task=task, dataset=dataset.name,
                                         dataset_sha256=dataset.sha256)
        else:
            view = await self.live.start(mode="user", agent=agent, question=first_message)
        return view, {**ids, "session": view.session_id, "task": -1}

    async def on_send(self, text: str, ids: dict, request: gr.Request):
        """A typed message: starts a free session first if none is active, shows the message at
        once, then streams the reply's text into the chat; the last output clears the textbox."""
        ids = with_defaults(ids)
        view = await self.current(ids)
        try:
            if view is None or view.status != "active":
                self.refuse_in_study(ids)
                yield (*self.outputs_for(view, ids, "Preparing the conversation ..."), text)
                view, ids = await self.start_free_user_session(ids, request, text)
            shown = replace(view, messages=[*view.messages, Message(PERSON_ROLE[view.mode], text)])
            yield (*self.outputs_for(shown, ids, "The agent is answering ..." if view.mode == "user"
                                     else "The caller is answering ..."), "")
            async for update in self.live.send(view.session_id, text, ids.get("participant") or None):
                if update.partial is not None:
                    yield (*self.outputs_for(shown, ids, "The agent is answering ...",
                                             update.partial), "")
                else:
                    yield (*self.outputs_for(update.view, ids), "")
        except LiveError as exc:
            yield (*self.outputs_for(view, ids, warn(exc)), text)

    async def on_send_audio(self, audio: str | None, ids: dict, request: gr.Request):
        """A voice message; the reply's text streams to the chat and, with voice.streaming,
        each spoken chunk to the streamed-reply player as soon as it is ready."""
        from harness.live.speech import chunk_wav
        ids = with_defaults(ids)
        view = await self.current(ids)
        key, chunks, partial = secrets.token_hex(6), [], None
        try:
            if view is None or view.status != "active":
                self.refuse_in_study(ids)
                yield (*self.outputs_for(view, ids, "Listening to your recording ..."), None,
                       reply_stream(key, chunks))
                view, ids = await self.start_free_user_session(ids, request,
                                                               await self.live.transcribe(audio))
            yield (*self.outputs_for(view, ids, "Listening to your recording ..."), None,
                   reply_stream(key, chunks))
            async for update in self.live.send_audio(view.session_id, audio,
                                                     ids.get("participant") or None):
                if update.chunk is not None:
                    chunks.append(audio_data_url(chunk_wav(update.chunk)))
                partial = update.partial if update.partial is not None else partial
                if update.view is None:
                    yield (*self.outputs_for(view, ids, "The agent is answering ...", partial), None,
                           reply_stream(key, chunks))
                else:
                    yield (*self.outputs_for(update.view, ids), update.audio, reply_stream(key, chunks))
        except LiveError as exc:
            yield (*self.outputs_for(view, ids, warn(exc)), None, reply_stream(key, chunks))

    async def on_draw(self, mode: str, agent: str, ids: dict):
        """Draw a free task at random and show its scenario; the session starts with Send (as the
        user) or Start (as the agent)."""
        ids = {**with_defaults(ids), "agent": agent}
        index = secrets.randbelow(1 << 30)
        try:
            task, _ = self.services.free_task(index)
        except LiveError as exc:
            return self.outputs_for(None, ids, warn(exc))
        ids = {**ids, "task": index, "session": ""}
        note = ("Task drawn. Describe this problem in your own words and press Send."
                if mode == "user" else "Task drawn. Press Start: the caller speaks first.")
        out = list(self.outputs_for(None, ids, note))
        out[2] = (f"**Your scenario:**\n\n> {task.question}" if mode == "user"
                  else f"**The caller will ask about:**\n\n> {task.question}")
        return tuple(out)

    async def on_start(self, mode: str, agent: str, ids: dict, request: gr.Request):
        """Start: as the user, clear the session so Send begins a new one; as the agent, start a
        session on the drawn task (or a random one), the caller speaking first."""
        ids = {**with_defaults(ids), "agent": agent}
        if mode == "user":  # a new conversation (on the drawn task, if any) begins with Send
            ids = {**ids, "session": ""}
            return self.outputs_for(None, ids, "Type your first message and press Send.")
        try:
            check_start_rate(self.services, request)
            index = ids["task"] if ids.get("task", -1) >= 0 else secrets.randbelow(1 << 30)
            task, dataset = self.services.free_task(index)
            view = await self.live.start(mode="agent", agent=agent, task=task, dataset=dataset.name,
                                         dataset_sha256=dataset.sha256)
        except LiveError as exc:
            return self.outputs_for(None, ids, warn(exc))
        return self.outputs_for(view, {**ids, "session": view.session_id, "task": -1})

    async def begin_study_session(self, ids: dict):
        """Open and begin the participant's next assigned study conversation; returns its view and
        the ids naming it (raises LiveError when the participant has not joined or has none left)."""
        with self.studies.lock:
            task, agent, dataset = self.studies.next_assignment(ids["study"], ids["participant"])
            study = self.studies.study(ids["study"])
            session_id = self.live.open(mode=study["config"]["mode"], agent=agent,
                                        study_id=ids["study"], participant_id=ids["participant"],
                                        task=task, dataset=dataset.name,
                                        dataset_sha256=dataset.sha256)
        view = await self.live.begin(session_id)
        return view, {**ids, "session": session_id}

    async def on_join(self, code: str, agree: bool, ids: dict):
        """Join the study with a participant code and consent, then begin its first conversation;
        the extra output keeps the join box shown after a refusal."""
        ids = with_defaults(ids)
        try:
            pid = self.studies.join(ids.get("study", ""), code, agree)
            ids = {**ids, "participant": pid, "session": ""}
            view, ids = await self.begin_study_session(ids)
        except LiveError as exc:
            return (*self.outputs_for(None, ids, warn(exc)), gr.update(visible=True))
        return (*self.outputs_for(view, ids), gr.update(visible=False))

    async def on_next(self, ids: dict):
        """Next conversation: begin the participant's next study session."""
        ids = with_defaults(ids)
        try:
            view, ids = await self.begin_study_session(ids)
        except LiveError as exc:
            return self.outputs_for(await self.current(ids), ids, warn(exc))
        return self.outputs_for(view, ids)

    async def on_end(self, ids: dict):
        """End the current conversation (it is then scored from its stored turns)."""
        ids = with_defaults(ids)
        try:
            view = await self.live.end(ids.get("session", ""), ids.get("participant") or None)
        except LiveError as exc:
            return self.outputs_for(None, ids, warn(exc))
        return self.outputs_for(view, ids)

    async def on_rate(self, helpfulness: float, solved: str | None, naturalness: int | None,
                      comprehensibility: int | None, ids: dict):
        """Save the person's rating of the latest reply (and, for a spoken reply, of its voice)."""
        ids = with_defaults(ids)
        view = await self.current(ids)
        try:
            if view is None:
                raise LiveError("There is no reply to rate yet.")
            self.live.rate(view.session_id, view.last_turn,
                           int(helpfulness) if helpfulness else None,
                           None if solved is None else solved == "yes",
                           rater=ids.get("participant") or None,
                           participant_id=ids.get("participant") or None,
                           **({"naturalness": naturalness, "comprehensibility": comprehensibility}
                              if last_reply_spoken(view) else {}))
        except LiveError as exc:
            return self.outputs_for(view, ids, warn(exc))
        return self.outputs_for(view, ids, f"Thank you: your rating of reply {view.last_turn} is saved.")
