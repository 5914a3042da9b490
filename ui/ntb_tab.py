"""The NoisyToolBench tab: a person plays the user of a NoisyToolBench case.

Thin by design: the handlers call ``harness.live.ntb_sessions.NtbLiveSessions`` (``services.ntb``) and
lay out what it returns. The only per-browser state is the session token and the question
the page shows, kept in the browser's local storage.
"""
from __future__ import annotations

import json
from typing import Any

import gradio as gr

from harness.live.guards import LiveError
from harness.live.ntb_sessions import NtbSessionView
from harness.live.services import AppServices

EMPTY_IDS = {"session": "", "question": ""}
OBSERVATION_CHARS = 1500  # of an API response shown on the page (the store keeps all of it)
STOPS = {"answered": "the agent gave its final answer", "max_steps": "the step limit was reached",
         "max_model_calls": "the agent's call limit was reached", "user_ended": "you ended it"}


def warn(exc: Exception) -> str:
    """A refusal or error as the status line shows it (a warning sign, then the message)."""
    return f"⚠️ {exc}"


# -- rendering --------------------------------------------------------------------------------
def _arguments(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def chat_messages(view: NtbSessionView | None) -> list[dict[str, str]]:
    """The session as Gradio messages: the person's instruction and answers on the right
    ("user"), the agent's questions, API calls with their observations and its answer on the
    left."""
    if view is None:
        return []
    out = [{"role": "user", "content": view.instruction}]
    for step in view.steps:
        if step["type"] == "ask":
            out.append({"role": "assistant", "content": f"❓ **Question:** {step['text']}"})
            if step.get("reply") is not None:
                out.append({"role": "user", "content": step["reply"]})
        elif step["type"] == "call":
            observation = str(step.get("observation") or "")
            if len(observation) > OBSERVATION_CHARS:
                observation = observation[:OBSERVATION_CHARS] + " …"
            out.append({"role": "assistant", "content": (
                f"🔧 **API call** `{step['name']}` `{_arguments(step.get('arguments'))}`\n\n"
                f"**Observation** ({step.get('source') or 'unknown source'}):\n```\n{observation}\n```")})
        elif step["type"] == "answer":
            out.append({"role": "assistant", "content": f"✅ **Final answer:** {step['text']}"})
    if view.question:
        out.append({"role": "assistant", "content": f"❓ **Question:** {view.question}"})
    return out


def instruction_text(view: NtbSessionView | None) -> str:
    """Markdown naming the case and its category and quoting the instruction the agent got."""
    if view is None:
        return ""
    return (f"**Case {view.case}** ({view.category}). **Your instruction**, as you typed it to "
            f"the agent:\n\n> {view.instruction}")


def private_text(view: NtbSessionView | None) -> str:
    """The note only the person sees: what they really meant, what is wrong with the
    instruction, and how to answer."""
    if view is None:
        return ""
    return ("🔒 **Private: only you see this; the agent does not.**\n\n"
            f"**What you really meant:** {view.meaning}\n\n{view.noise} When the agent asks, "
            "answer as this user would, in your own words.")


def status_line(view: NtbSessionView | None) -> str:
    """The line under the chat: what to do next, the step count, or why the session ended."""
    if view is None:
        return "Enter a case id (e.g. IMKI/3, or leave it empty for a random case) and press Start case."
    if view.status == "ended":
        return f"Session ended: {STOPS.get(view.stop_reason, view.stop_reason)}. The scores are below."
    if view.status == "abandoned":
        return "Session ended before the agent's first step (nothing to score)."
    step = len(view.steps) + 1
    if view.question:
        return (f"Step {step} of at most {view.max_steps}: the agent asks you a question. "
                "Answer it in your own words and press Send answer.")
    if view.paused:
        return "The agent is paused: press Continue to let it go on (or End session)."
    return f"Step {step} of at most {view.max_steps}: the agent is working ..."


def scores_text(view: NtbSessionView | None) -> str:
    """The session's NoisyToolBench scores and who produced them."""
    if view is None or not view.scores:
        return ""
    f = view.scores

    def cell(value):
        return "n/a" if value is None else str(value)
    lines = ["| A1 | A2 | A3 | Re | Steps |", "|---|---|---|---|---|",
             f"| {cell(f.get('A1'))} | {cell(f.get('A2'))} | {cell(f.get('A3'))} | "
             f"{cell(f.get('redundant_asking'))} | {cell(f.get('steps'))} |", "",
             f"Judge model: {f.get('judge_model') or 'none (decided by rule)'}; judge prompt "
             f"{f.get('prompt_version')}; scorer {f.get('scorer_version')}; A2 {f.get('a2_method')}; "
             f"agent variant {f.get('agent_variant')}; question match: {f.get('embedding_model')} "
             f"at {f.get('threshold')}."]
    if f.get("limitation_stated") is not None:
        lines.append(f"Limitation stated (IBTC): {f['limitation_stated']}.")
    if f.get("reason"):
        lines.append(f"\nWhy: {f['reason']}")
    return "\n".join(lines)


def outputs_for(view: NtbSessionView | None, ids: dict, note: str = "") -> tuple:
    """chat, instruction, private note, status, scores, ids."""
    ids = {**ids, "question": (view.question or "") if view else ""}
    return (chat_messages(view), instruction_text(view), private_text(view),
            note or status_line(view), scores_text(view), ids)


# -- the tab ----------------------------------------------------------------------------------
def _layout(cfg) -> tuple:
    """Lay out the tab; returns (tab, case box, Start, answer box, Send, Continue, End, the
    handlers' outputs: chat, instruction, private note, status, scores, ids)."""
    with gr.Tab("NoisyToolBench", id="ntb") as tab:
        gr.Markdown("# NoisyToolBench: you are the user\nAn agent with APIs works on your "
                    "instruction, which lacks something. It may ask you a clarifying question: "
                    "answer it as the user, using what you really meant. Its API calls are "
                    "shown as they happen; at the end the session is scored (A1, A2, A3, Re, Steps).")
        with gr.Row():
            case_id = gr.Textbox(label="Case", placeholder="e.g. IMKI/3 (empty: a random case)",
                                 max_length=32, elem_id="ntb-case")
            start_btn = gr.Button("Start case", variant="primary", elem_id="ntb-start")
        instruction = gr.Markdown(elem_id="ntb-instruction")
        private = gr.Markdown(elem_id="ntb-private")
        chat = gr.Chatbot(label="The agent at work", height=420, elem_id="ntb-chat",
                          feedback_options=None)
        answer = gr.Textbox(label="Your answer to the agent's question", lines=2,
                            max_length=cfg.max_message_chars, elem_id="ntb-answer")
        with gr.Row():
            send_btn = gr.Button("Send answer", variant="primary", elem_id="ntb-send")
            continue_btn = gr.Button("Continue", elem_id="ntb-continue")
            end_btn = gr.Button("End session", elem_id="ntb-end")
        status = gr.Markdown(elem_id="ntb-status")
        scores = gr.Markdown(elem_id="ntb-scores")
        ids = gr.BrowserState(dict(EMPTY_IDS), storage_key="deskbench-ntb")
    return (tab, case_id, start_btn, answer, send_btn, continue_btn, end_btn,
            [chat, instruction, private, status, scores, ids])


def build_ntb_tab(services: AppServices) -> None:
    """Lay out the NoisyToolBench tab (inside ``gr.Tabs``) and wire its handlers."""
    ntb, cfg = services.ntb, services.config.app

    async def current(ids: dict) -> NtbSessionView | None:
        if not ids.get("session"):
            return None
        try:
            return await ntb.view(ids["session"])
        except LiveError:
            return None

    async def on_start(case_id: str, ids: dict, request: gr.Request):
        ids = {**EMPTY_IDS, **(ids or {})}
        try:
            services.starts.check(f"ip:{request.client.host if request and request.client else '?'}")
            yield outputs_for(None, ids, "Starting the case ...")
            async for view in ntb.start(case_id):
                ids = {**ids, "session": view.session_id}
                yield outputs_for(view, ids)
        except LiveError as exc:
            yield outputs_for(await current(ids), ids, warn(exc))

    async def on_answer(text: str, ids: dict):
        ids = {**EMPTY_IDS, **(ids or {})}
        try:
            async for view in ntb.answer(ids["session"], text, question=ids["question"] or None):
                yield (*outputs_for(view, ids), "")
        except LiveError as exc:
            yield (*outputs_for(await current(ids), ids, warn(exc)), text)

    async def on_continue(ids: dict):
        ids = {**EMPTY_IDS, **(ids or {})}
        try:
            async for view in ntb.proceed(ids["session"]):
                yield outputs_for(view, ids)
        except LiveError as exc:
            yield outputs_for(await current(ids), ids, warn(exc))

    async def on_end(ids: dict):
        ids = {**EMPTY_IDS, **(ids or {})}
        try:
            return outputs_for(await ntb.end(ids["session"]), ids)
        except LiveError as exc:
            return outputs_for(await current(ids), ids, warn(exc))

    async def on_select(ids: dict):
        ids = {**EMPTY_IDS, **(ids or {})}
        return outputs_for(await current(ids), ids)

    tab, case_id, start_btn, answer, send_btn, continue_btn, end_btn, outputs = _layout(cfg)
    ids = outputs[-1]  # the browser's ids, read and updated by every handler
    start_btn.click(on_start, [case_id, ids], outputs, concurrency_limit=cfg.concurrency,
                    api_visibility="private")
    answer_event = dict(fn=on_answer, inputs=[answer, ids], outputs=[*outputs, answer],
                        concurrency_limit=cfg.concurrency, api_visibility="private")
    send_btn.click(**answer_event)
    answer.submit(**answer_event)
    continue_btn.click(on_continue, [ids], outputs, concurrency_limit=cfg.concurrency,
                       api_visibility="private")
    end_btn.click(on_end, [ids], outputs, api_visibility="private")
    tab.select(on_select, [ids], outputs, api_visibility="private")
