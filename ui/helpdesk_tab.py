"""The Help desk tab's layout and event wiring: ask or answer, type or speak, rate a reply,
and take part in a study (``?study=ID``).

:func:`build_helpdesk_tab` lays the tab out (inside ``gr.Tabs``) and returns its components as
a :class:`HelpDeskPage`; :func:`wire_helpdesk` connects them to :class:`HelpDeskHandlers` once
the other tabs are built, so the app's events keep their order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from harness.live.services import AppServices
from ui.helpdesk_handlers import HelpDeskHandlers
from ui.helpdesk_view import HELPFULNESS_DEFAULT, PLAYER_JS, PLAYER_TEMPLATE


@dataclass
class HelpDeskPage:
    """The Help desk tab's components (the Gradio blocks its events read or update)."""
    join_box: Any
    join_title: Any
    consent: Any
    code: Any
    agree: Any
    join_btn: Any
    free_box: Any
    mode: Any
    agent: Any
    draw_btn: Any
    start_btn: Any
    scenario: Any
    chat: Any
    msg: Any
    send_btn: Any
    end_btn: Any
    next_btn: Any
    rate_row: Any
    helpfulness: Any
    solved: Any
    rate_btn: Any
    voice_rate_row: Any
    naturalness: Any
    comprehensibility: Any
    mic: Any
    reply_audio: Any
    reply_stream_player: Any
    voice_btn: Any
    status: Any
    judge_md: Any


def build_helpdesk_tab(services: AppServices) -> HelpDeskPage:
    """Lay out the Help desk tab (inside ``gr.Tabs``) and return its components, unwired."""
    cfg = services.config.app
    show_scores = cfg.show_judge_scores
    streamed = services.config.voice.streaming  # a voice message's reply spoken as it streams
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
    return HelpDeskPage(
        join_box=join_box, join_title=join_title, consent=consent, code=code, agree=agree,
        join_btn=join_btn, free_box=free_box, mode=mode, agent=agent, draw_btn=draw_btn,
        start_btn=start_btn, scenario=scenario, chat=chat, msg=msg, send_btn=send_btn,
        end_btn=end_btn, next_btn=next_btn, rate_row=rate_row, helpfulness=helpfulness,
        solved=solved, rate_btn=rate_btn, voice_rate_row=voice_rate_row, naturalness=naturalness,
        comprehensibility=comprehensibility, mic=mic, reply_audio=reply_audio,
        reply_stream_player=reply_stream_player, voice_btn=voice_btn, status=status,
        judge_md=judge_md)


def wire_helpdesk(demo: gr.Blocks, page: HelpDeskPage, ids: gr.BrowserState,
                  handlers: HelpDeskHandlers, concurrency: int) -> None:
    """Connect the tab's events (and the page's load) to the handlers; ``ids`` is the browser's
    stored ids, ``concurrency`` the limit on the events that run a model."""
    p, h = page, handlers
    session_outputs = [p.chat, p.status, p.scenario, p.rate_row, p.voice_rate_row, p.next_btn,
                       p.judge_md, p.helpfulness, p.solved, p.naturalness, p.comprehensibility, ids]
    demo.load(h.on_load, [ids], [*session_outputs, p.join_box, p.join_title, p.consent, p.free_box])
    send_event = dict(fn=h.on_send, inputs=[p.msg, ids], outputs=[*session_outputs, p.msg],
                      concurrency_limit=concurrency, api_visibility="private")
    p.send_btn.click(**send_event)
    p.msg.submit(**send_event)
    p.voice_btn.click(h.on_send_audio, [p.mic, ids],
                      [*session_outputs, p.reply_audio, p.reply_stream_player],
                      concurrency_limit=concurrency, api_visibility="private")
    p.draw_btn.click(h.on_draw, [p.mode, p.agent, ids], session_outputs, api_visibility="private")
    p.start_btn.click(h.on_start, [p.mode, p.agent, ids], session_outputs, api_visibility="private")
    p.join_btn.click(h.on_join, [p.code, p.agree, ids], [*session_outputs, p.join_box],
                     api_visibility="private")
    p.next_btn.click(h.on_next, [ids], session_outputs, api_visibility="private")
    p.end_btn.click(h.on_end, [ids], session_outputs, api_visibility="private")
    p.rate_btn.click(h.on_rate, [p.helpfulness, p.solved, p.naturalness, p.comprehensibility, ids],
                     session_outputs, api_visibility="private")
