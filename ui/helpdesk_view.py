"""The Help desk tab's shared pieces: the browser's ids and their defaults, the start-rate
check, the rendering of a live session as the page shows it (chat, status line, scenario,
judge scores), the rating widgets' resets, and the streamed spoken-reply player (its HTML, its
JavaScript and its value). Used by the tab's handlers (``ui/helpdesk_handlers.py``) and the
named API (``ui/api.py``); no Gradio components are made here.
"""
from __future__ import annotations

import base64

import gradio as gr

from harness.live.services import AppServices
from harness.live.team_agent import agent_error_message
from harness.live.views import SessionView, reply_spoken

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
    """The line under the chat: what to do next, the turn count, or why the conversation ended."""
    if view is None:
        return "Describe your problem and press Send, or draw a task."
    if view.stop_reason == "agent_error":  # a team's own agent failed a turn for good
        return "⚠️ " + agent_error_message(view.agent_error)
    if view.status == "ended":
        reasons = {"solved": "the problem is solved", "max_turns": "the turn limit was reached",
                   "user_ended": "you ended it",
                   "agent_ended": "you ended it" if view.mode == "agent" else "the agent ended it"}
        return f"Conversation ended: {reasons.get(view.stop_reason, view.stop_reason)}. Thank you!"
    if view.status == "abandoned":
        return "Conversation ended before the first reply."
    if view.mode == "agent":
        return f"Turn {view.last_turn + 1} of {view.max_turns}: answer the caller as the help-desk agent."
    return f"Turn {view.last_turn + 1} of {view.max_turns}: your message."


def scenario_text(view: SessionView | None) -> str:
    """Markdown above the chat: the person's role and, as the user, the task's scenario
    ("" without a task)."""
    if view is None or not view.scenario:
        return ""
    if view.mode == "agent":
        return "**You are the help-desk agent.** The caller's problem is below; help them solve it."
    return ("**Your scenario** (describe it in your own words, answer the agent's questions "
            f"as if this were your problem):\n\n> {view.scenario}")


def judge_scores(view: SessionView | None) -> str:
    """A Markdown table of the judges' per-turn helpfulness and solved verdicts ("" before any)."""
    if view is None or not view.turns:
        return ""
    rows = [f"| {t['turn_index']} | {t['user_helpfulness']} | {t['agent_helpfulness']} | "
            f"{'yes' if t['solved'] else 'no'} |" for t in view.turns]
    return "\n".join(["| turn | user h. | agent h. | solved |", "|---|---|---|---|", *rows])


def last_reply_spoken(view: SessionView | None) -> bool:
    """Whether the agent's latest stored reply was spoken (its voice can be rated)."""
    return bool(view and view.turns) and reply_spoken(view.turns[-1])


def warn(exc: Exception) -> str:
    """A refusal or error as the status line shows it (a warning sign, then the message)."""
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
