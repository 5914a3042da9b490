"""The Gradio app: live help-desk sessions, studies, ratings and results (the Organiser tab
is ``ui/organiser.py``, the NoisyToolBench tab ``ui/ntb_tab.py``).

Thin by design: every handler calls ``harness`` (live sessions, studies, results) and lays
out what it returns. The only per-browser state is ids (session token, participant pseudonym,
study id, drawn task index), kept in the browser's local storage so a reload finds the
session again.
"""
from __future__ import annotations

import base64
import functools
import secrets
from dataclasses import replace
from typing import Any

import gradio as gr

from graphs.protocols import Message
from harness.live.services import AppServices
from harness.live.sessions import LiveError, SessionView, reply_spoken
from harness.live.studies import CLOSED, CLOSED_MESSAGE
from ui.ntb_tab import build_ntb_tab
from ui.organiser import build_organiser

EMPTY_IDS = {"session": "", "participant": "", "study": "", "task": -1, "reply": ""}
HELPFULNESS_DEFAULT = 5  # the rating slider's value before the person moves it
PERSON_ROLE = {"user": "user", "agent": "agent"}  # which side the person plays in each mode


def with_defaults(ids: dict | None) -> dict:
    """The browser's ids with every key present."""
    return {**EMPTY_IDS, **(ids or {})}


def check_start_rate(services: AppServices, request: gr.Request | None) -> None:
    """New free sessions per client address (raises LiveError over the limit)."""
    services.starts.check(f"ip:{request.client.host if request and request.client else '?'}")


# -- rendering --------------------------------------------------------------------------------
def chat_messages(view: SessionView | None, partial: str | None = None) -> list[dict[str, str]]:
    """The conversation as Gradio messages: the person's side on the right ("user")."""
    if view is None:
        return []
    me = PERSON_ROLE[view.mode]
    out = [{"role": "user" if m.role == me else "assistant", "content": m.content}
           for m in view.messages]
    if partial:
        out.append({"role": "assistant", "content": partial})
    return out


def status_line(view: SessionView | None) -> str:
    if view is None:
        return "Describe your problem and press Send, or draw a task."
    if view.status == "ended":
        reasons = {"solved": "the problem is solved", "max_turns": "the turn limit was reached",
                   "user_ended": "you ended it", "agent_ended": "you ended it"}
        return f"Conversation ended: {reasons.get(view.stop_reason, view.stop_reason)}. Thank you!"
    if view.status == "abandoned":
        return "Conversation ended before the first reply."
    if view.mode == "agent":
        return f"Turn {view.last_turn + 1} of {view.max_turns}: answer the caller as the help-desk agent."
    return f"Turn {view.last_turn + 1} of {view.max_turns}: your message."


def scenario_text(view: SessionView | None) -> str:
    if view is None or not view.scenario:
        return ""
    if view.mode == "agent":
        return "**You are the help-desk agent.** The caller's problem is below; help them solve it."
    return ("**Your scenario** (describe it in your own words, answer the agent's questions "
            f"as if this were your problem):\n\n> {view.scenario}")


def judge_scores(view: SessionView | None) -> str:
    if view is None or not view.turns:
        return ""
    rows = [f"| {t['turn_index']} | {t['user_helpfulness']} | {t['agent_helpfulness']} | "
            f"{'yes' if t['solved'] else 'no'} |" for t in view.turns]
    return "\n".join(["| turn | user h. | agent h. | solved |", "|---|---|---|---|", *rows])


def last_reply_spoken(view: SessionView | None) -> bool:
    """Whether the agent's latest stored reply was spoken (its voice can be rated)."""
    return bool(view and view.turns) and reply_spoken(view.turns[-1])


def warn(exc: Exception) -> str:
    return f"⚠️ {exc}"


# -- the streamed spoken reply: chunks played as they come ---------------------------------
# gr.Audio(streaming=True) as an output re-encodes the chunks to AAC with the ffmpeg program
# (Gradio 6), which deskbench does not install; this player takes each chunk's WAV as a data URL
# and plays the chunks one after another in an <audio> element of its own. Its value is the
# reply's key, then one data URL per line, growing as chunks come (Gradio sends a generator's
# repeated outputs as diffs, so each yield carries only the new chunk). A new key stops the
# reply playing and starts the next. The element's data-received, data-started and
# data-ended count the chunks (the browser tests read them).
PLAYER_TEMPLATE = "<div class='reply-stream-label'></div>"
PLAYER_JS = r"""
const st = {key: null, urls: [], next: 0, audio: null, started: 0, ended: 0, blocked: false};
const show = () => {
  Object.assign(element.dataset, {key: st.key || '', received: st.urls.length, started: st.started,
                                  ended: st.ended, blocked: st.blocked ? '1' : ''});
  const label = element.querySelector('.reply-stream-label');
  if (!label) return;
  label.textContent = !st.urls.length ? '' : st.blocked
    ? 'The browser did not let the reply play: press play on the spoken reply below.'
    : `Spoken reply: ${st.ended} of ${st.urls.length} sentences played`
      + (st.audio ? ', playing ...' : '');
};
const play = () => {
  if (st.audio || st.blocked || st.next >= st.urls.length) return;
  const key = st.key, audio = new Audio(st.urls[st.next++]);
  st.audio = audio;
  const done = () => {
    if (st.key !== key || st.audio !== audio) return;
    st.audio = null; st.ended++; show(); setTimeout(play, 100);
  };
  audio.addEventListener('ended', done);
  audio.addEventListener('error', done);
  audio.play().then(() => { if (st.key === key) { st.started++; show(); } })
    .catch(() => {
      if (st.key === key && st.audio === audio) { st.audio = null; st.blocked = true; show(); }
    });
  show();
};
const update = () => {
  const lines = (props.value || '').split('\n');
  if (lines[0] !== st.key) {
    if (st.audio) st.audio.pause();
    Object.assign(st, {key: lines[0], urls: [], next: 0, audio: null, started: 0, ended: 0,
                       blocked: false});
  }
  st.urls = lines.slice(1).filter(Boolean);
  show(); play();
};
watch('value', update);
update();
"""


def reply_stream(key: str, chunks: list[str]) -> str:
    """The streamed-reply player's value: the reply's key, then its chunks' data URLs."""
    return "\n".join([key, *chunks])


def audio_data_url(wav: bytes) -> str:
    """A WAV as a data URL the page can play without fetching a file."""
    return "data:audio/wav;base64," + base64.b64encode(wav).decode("ascii")


def rating_resets(view: SessionView | None, ids: dict) -> tuple[list, dict]:
    """Updates of the rating widgets (helpfulness, solved, naturalness, comprehensibility) and
    the ids: back to their defaults when the page shows a reply it has not shown before (a new
    reply, another conversation), so a rating never carries an earlier reply's values; left as
    the person set them otherwise (while a reply streams, after a refusal or a saved rating).
    ``ids["reply"]`` names the reply the widgets belong to."""
    reply = f"{view.session_id}#{view.last_turn}" if view else ""
    if ids.get("reply") == reply:
        return [gr.update()] * 4, ids
    defaults = [gr.update(value=HELPFULNESS_DEFAULT), gr.update(value=None), gr.update(value=None),
                gr.update(value=None)]
    return defaults, {**ids, "reply": reply}


# -- the app ----------------------------------------------------------------------------------
def build_app(services: AppServices) -> gr.Blocks:
    live, studies, cfg = services.live, services.studies, services.config.app
    show_scores = cfg.show_judge_scores
    streamed = services.config.voice.streaming  # a voice message's reply spoken as it streams

    def outputs_for(view: SessionView | None, ids: dict, note: str = "", partial: str | None = None):
        rate_visible = bool(view and view.mode == "user" and view.turns and view.status == "active")
        in_study = bool(ids.get("study"))
        next_visible = bool(view and view.status != "active" and in_study)
        ratings, ids = rating_resets(view, ids)
        return (chat_messages(view, partial), note or status_line(view), scenario_text(view),
                gr.update(visible=rate_visible),
                gr.update(visible=rate_visible and last_reply_spoken(view)),
                gr.update(visible=next_visible),
                judge_scores(view) if show_scores else "", *ratings, ids)

    async def current(ids: dict) -> SessionView | None:
        if not ids.get("session"):
            return None
        try:
            return await live.view(ids["session"], ids.get("participant") or None)
        except LiveError:
            return None

    async def on_load(ids: dict, request: gr.Request):
        ids = with_defaults(ids)
        study_id = (request.query_params.get("study") or "").strip() if request else ""
        if study_id != ids.get("study"):
            ids = {**EMPTY_IDS, "study": study_id}
        join_title, consent = "", ""
        if study_id:
            try:
                study = studies.study(study_id)
                join_title = f"## {study['name']}"
                if study["status"] == CLOSED:
                    join_title += f"\n\n⚠️ {CLOSED_MESSAGE}"
                consent = study["config"]["consent"]
            except LiveError as exc:
                join_title = warn(exc)
        view = await current(ids)
        joined = bool(ids.get("participant"))
        return (*outputs_for(view, ids),
                gr.update(visible=bool(study_id) and not joined), join_title, consent,
                gr.update(visible=not study_id))

    def refuse_in_study(ids: dict) -> None:
        if ids.get("study"):
            raise LiveError("Press 'Next conversation' (or join the study) first.")

    async def start_free_user_session(ids: dict, request: gr.Request | None, first_message: str):
        """A free session as the user: on the drawn task (if any) or on the first message."""
        check_start_rate(services, request)
        agent = ids.get("agent") or cfg.agents[0]
        if ids.get("task", -1) >= 0:
            task, dataset = services.free_task(ids["task"])
            view = await live.start(mode="user", agent=agent, task=task, dataset=dataset.name,
                                    dataset_sha256=dataset.sha256)
        else:
            view = await live.start(mode="user", agent=agent, question=first_message)
        return view, {**ids, "session": view.session_id, "task": -1}

    async def on_send(text: str, ids: dict, request: gr.Request):
        ids = with_defaults(ids)
        view = await current(ids)
        try:
            if view is None or view.status != "active":
                refuse_in_study(ids)
                yield (*outputs_for(view, ids, "Preparing the conversation ..."), text)
                view, ids = await start_free_user_session(ids, request, text)
            shown = replace(view, messages=[*view.messages, Message(PERSON_ROLE[view.mode], text)])
            yield (*outputs_for(shown, ids, "The agent is answering ..." if view.mode == "user"
                                else "The caller is answering ..."), "")
            async for update in live.send(view.session_id, text, ids.get("participant") or None):
                if update.partial is not None:
                    yield (*outputs_for(shown, ids, "The agent is answering ...", update.partial), "")
                else:
                    yield (*outputs_for(update.view, ids), "")
        except LiveError as exc:
            yield (*outputs_for(view, ids, warn(exc)), text)

    async def on_send_audio(audio: str | None, ids: dict, request: gr.Request):
        """A voice message; the reply's text streams to the chat and, with voice.streaming,
        each spoken chunk to the streamed-reply player as soon as it is ready."""
        from harness.live.speech import chunk_wav
        ids = with_defaults(ids)
        view = await current(ids)
        key, chunks, partial = secrets.token_hex(6), [], None
        try:
            if view is None or view.status != "active":
                refuse_in_study(ids)
                yield (*outputs_for(view, ids, "Listening to your recording ..."), None,
                       reply_stream(key, chunks))
                view, ids = await start_free_user_session(ids, request, await live.transcribe(audio))
            yield (*outputs_for(view, ids, "Listening to your recording ..."), None, reply_stream(key, chunks))
            async for update in live.send_audio(view.session_id, audio, ids.get("participant") or None):
                if update.chunk is not None:
                    chunks.append(audio_data_url(chunk_wav(update.chunk)))
                partial = update.partial if update.partial is not None else partial
                if update.view is None:
                    yield (*outputs_for(view, ids, "The agent is answering ...", partial), None,
                           reply_stream(key, chunks))
                else:
                    yield (*outputs_for(update.view, ids), update.audio, reply_stream(key, chunks))
        except LiveError as exc:
            yield (*outputs_for(view, ids, warn(exc)), None, reply_stream(key, chunks))

    async def on_draw(mode: str, agent: str, ids: dict):
        ids = {**with_defaults(ids), "agent": agent}
        index = secrets.randbelow(1 << 30)
        try:
            task, _ = services.free_task(index)
        except LiveError as exc:
            return outputs_for(None, ids, warn(exc))
        ids = {**ids, "task": index, "session": ""}
        note = ("Task drawn. Describe this problem in your own words and press Send."
                if mode == "user" else "Task drawn. Press Start: the caller speaks first.")
        out = list(outputs_for(None, ids, note))
        out[2] = (f"**Your scenario:**\n\n> {task.question}" if mode == "user"
                  else f"**The caller will ask about:**\n\n> {task.question}")
        return tuple(out)

    async def on_start(mode: str, agent: str, ids: dict, request: gr.Request):
        ids = {**with_defaults(ids), "agent": agent}
        if mode == "user":  # a new conversation (on the drawn task, if any) begins with Send
            ids = {**ids, "session": ""}
            return outputs_for(None, ids, "Type your first message and press Send.")
        try:
            check_start_rate(services, request)
            index = ids["task"] if ids.get("task", -1) >= 0 else secrets.randbelow(1 << 30)
            task, dataset = services.free_task(index)
            view = await live.start(mode="agent", agent=agent, task=task, dataset=dataset.name,
                                    dataset_sha256=dataset.sha256)
        except LiveError as exc:
            return outputs_for(None, ids, warn(exc))
        return outputs_for(view, {**ids, "session": view.session_id, "task": -1})

    async def begin_study_session(ids: dict):
        with studies.lock:
            task, agent, dataset = studies.next_assignment(ids["study"], ids["participant"])
            study = studies.study(ids["study"])
            session_id = live.open(mode=study["config"]["mode"], agent=agent, study_id=ids["study"],
                                   participant_id=ids["participant"], task=task,
                                   dataset=dataset.name, dataset_sha256=dataset.sha256)
        view = await live.begin(session_id)
        return view, {**ids, "session": session_id}

    async def on_join(code: str, agree: bool, ids: dict):
        ids = with_defaults(ids)
        try:
            pid = studies.join(ids.get("study", ""), code, agree)
            ids = {**ids, "participant": pid, "session": ""}
            view, ids = await begin_study_session(ids)
        except LiveError as exc:
            return (*outputs_for(None, ids, warn(exc)), gr.update(visible=True))
        return (*outputs_for(view, ids), gr.update(visible=False))

    async def on_next(ids: dict):
        ids = with_defaults(ids)
        try:
            view, ids = await begin_study_session(ids)
        except LiveError as exc:
            return outputs_for(await current(ids), ids, warn(exc))
        return outputs_for(view, ids)

    async def on_end(ids: dict):
        ids = with_defaults(ids)
        try:
            view = await live.end(ids.get("session", ""), ids.get("participant") or None)
        except LiveError as exc:
            return outputs_for(None, ids, warn(exc))
        return outputs_for(view, ids)

    async def on_rate(helpfulness: float, solved: str | None, naturalness: int | None,
                      comprehensibility: int | None, ids: dict):
        ids = with_defaults(ids)
        view = await current(ids)
        try:
            if view is None:
                raise LiveError("There is no reply to rate yet.")
            live.rate(view.session_id, view.last_turn, int(helpfulness) if helpfulness else None,
                      None if solved is None else solved == "yes",
                      rater=ids.get("participant") or None,
                      participant_id=ids.get("participant") or None,
                      **({"naturalness": naturalness, "comprehensibility": comprehensibility}
                         if last_reply_spoken(view) else {}))
        except LiveError as exc:
            return outputs_for(view, ids, warn(exc))
        return outputs_for(view, ids, f"Thank you: your rating of reply {view.last_turn} is saved.")

    with gr.Blocks(title="deskbench live") as demo:
        ids = gr.BrowserState(dict(EMPTY_IDS), storage_key="deskbench-live")
        with gr.Tabs():
            with gr.Tab("Help desk", id="helpdesk"):
                gr.Markdown("# deskbench live help desk")
                with gr.Group(visible=False) as join_box:
                    join_title = gr.Markdown()
                    consent = gr.Markdown()
                    code = gr.Textbox(label="Your participant code", max_length=64,
                                      elem_id="participant-code")
                    agree = gr.Checkbox(label="I have read the text above and agree to take part",
                                        elem_id="consent-agree")
                    join_btn = gr.Button("Join and start", variant="primary", elem_id="join")
                with gr.Row(visible=True) as free_box:
                    mode = gr.Radio([("I have a problem (I am the user)", "user"),
                                     ("I answer (I am the help-desk agent)", "agent")],
                                    value="user", label="Mode", elem_id="mode")
                    agent = gr.Dropdown(cfg.agents, value=cfg.agents[0], label="Agent")
                    draw_btn = gr.Button("Draw a task", elem_id="draw")
                    start_btn = gr.Button("Start", elem_id="start")
                scenario = gr.Markdown(elem_id="scenario")
                chat = gr.Chatbot(label="Conversation", height=420, elem_id="chat",
                                  feedback_options=None)
                msg = gr.Textbox(label="Your message", lines=2, max_length=cfg.max_message_chars,
                                 placeholder="Type here and press Send", elem_id="message")
                with gr.Row():
                    send_btn = gr.Button("Send", variant="primary", elem_id="send")
                    end_btn = gr.Button("End conversation", elem_id="end")
                    next_btn = gr.Button("Next conversation", visible=False, elem_id="next")
                with gr.Row(visible=False, elem_id="rating") as rate_row:
                    helpfulness = gr.Slider(1, 10, value=HELPFULNESS_DEFAULT, step=1,
                                            elem_id="helpfulness",
                                            label="How helpful was the agent's last reply? (1-10)")
                    solved = gr.Radio([("Solved", "yes"), ("Not solved yet", "no")],
                                      label="Is your problem solved?", elem_id="solved")
                    rate_btn = gr.Button("Save rating", elem_id="rate")
                with gr.Row(visible=False, elem_id="voice-rating") as voice_rate_row:
                    scale = [("1 bad", 1), ("2 poor", 2), ("3 fair", 3), ("4 good", 4), ("5 excellent", 5)]
                    naturalness = gr.Radio(scale, label="How natural did the spoken reply sound?",
                                           elem_id="naturalness")
                    comprehensibility = gr.Radio(scale, label="How easy was it to understand?",
                                                 elem_id="comprehensibility")
                with gr.Row():
                    mic = gr.Audio(sources=["microphone", "upload"], type="filepath",
                                   label="Or speak your message", elem_id="mic")
                    # streamed: the chunks play in reply_stream as they come; the whole
                    # reply arrives here once stored (to play again), so it must not autoplay
                    reply_audio = gr.Audio(label="The agent's reply, spoken", autoplay=not streamed,
                                           interactive=False, elem_id="reply-audio")
                reply_stream_player = gr.HTML("", html_template=PLAYER_TEMPLATE, js_on_load=PLAYER_JS,
                                              visible=True if streamed else "hidden",
                                              elem_id="reply-stream")
                voice_btn = gr.Button("Send voice message", elem_id="send-voice")
                status = gr.Markdown(elem_id="status")
                judge_md = gr.Markdown(visible=show_scores, elem_id="judge-scores")

            build_ntb_tab(services)  # a person as the NoisyToolBench user

            with gr.Tab("Organiser", id="organiser"):
                build_organiser(services)

        session_outputs = [chat, status, scenario, rate_row, voice_rate_row, next_btn, judge_md,
                           helpfulness, solved, naturalness, comprehensibility, ids]
        demo.load(on_load, [ids], [*session_outputs, join_box, join_title, consent, free_box])
        send_event = dict(fn=on_send, inputs=[msg, ids], outputs=[*session_outputs, msg],
                          concurrency_limit=cfg.concurrency, api_visibility="private")
        send_btn.click(**send_event)
        msg.submit(**send_event)
        voice_btn.click(on_send_audio, [mic, ids],
                        [*session_outputs, reply_audio, reply_stream_player],
                        concurrency_limit=cfg.concurrency, api_visibility="private")
        draw_btn.click(on_draw, [mode, agent, ids], session_outputs, api_visibility="private")
        start_btn.click(on_start, [mode, agent, ids], session_outputs, api_visibility="private")
        join_btn.click(on_join, [code, agree, ids], [*session_outputs, join_box],
                       api_visibility="private")
        next_btn.click(on_next, [ids], session_outputs, api_visibility="private")
        end_btn.click(on_end, [ids], session_outputs, api_visibility="private")
        rate_btn.click(on_rate, [helpfulness, solved, naturalness, comprehensibility, ids], session_outputs,
                       api_visibility="private")
        add_api(services)
    demo.queue(default_concurrency_limit=cfg.concurrency)
    return demo


# -- a small programmatic API (load tests, scripted participants) ---------------------------
def add_api(services: AppServices) -> None:
    """Named endpoints for ``gradio_client``: the same harness calls as the page."""
    live = services.live

    def view_dict(view: SessionView) -> dict[str, Any]:
        return {"session": view.session_id, "status": view.status, "mode": view.mode,
                "awaiting": view.awaiting, "stop_reason": view.stop_reason,
                "messages": [{"role": m.role, "content": m.content} for m in view.messages],
                "turns": len(view.turns)}

    def guard(fn):
        @functools.wraps(fn)
        async def wrapper(*args, **kwargs):
            try:
                return await fn(*args, **kwargs)
            except LiveError as exc:
                return {"error": str(exc)}
        return wrapper

    @guard
    async def live_start(question: str, agent: str = "plain", request: gr.Request = None) -> dict:
        """Start a free session as the user with your own problem (not yet sent)."""
        check_start_rate(services, request)
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


def launch(services: AppServices, **kwargs) -> tuple[Any, str]:
    """Build and launch the app without blocking; returns (app, local URL)."""
    demo = build_app(services)
    cfg = services.config.app
    app, url, _ = demo.launch(server_name=cfg.host, server_port=cfg.port or None,
                              prevent_thread_lock=True, quiet=True, footer_links=[],
                              allowed_paths=[str(services.out_dir.resolve())], **kwargs)
    services.app_url = url
    return demo, url
