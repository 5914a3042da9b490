"""Rule data: the cues the solved-check's vetoes, the simulated user's checks and the
helpfulness bounds read in a message (the problem persists, a success is claimed, a result is
reported, the message reads like the help desk's).

Data only (the engine is :mod:`harness.aids.rules`, the functions :mod:`harness.aids.cues`).
"""
from __future__ import annotations

from harness.aids.data_text import QUOTED
from harness.aids.rules import Limit, Rule, RuleSet

# -- the problem persists: one set for the bounds and the solved-check ---------------------------
# Before, helpfulness_bounds._PERSISTS_RE and user_checks._PERSIST_RE were twins that had drifted
# apart; this is their union, and each side's own cues are named sets of their own (UNTRIED, and
# outcome.no_output in data_bounds). docs/rules.md lists what the merge changed.
_PERSISTS = ("user reply: the problem persists -> helpfulness floor 5 (an outcome is reported); "
             "the solved-check vetoes 'solved'; a success word in the message is not a success")
PERSISTS = RuleSet("persists", [
    Rule(id="persists.still", pattern=r"\bstill\b(?!\s+works?\b)", decides=_PERSISTS,
         why="'I tried logging in again and the issue is still there.' (b18: the 1.5B judge gave it 1, "
             "and Yes/No questions could not tell it from a success); 'it still works' is no persisting "
             "problem, nor the non-native 'it still work'"),
    Rule(id="persists.same", pattern=r"\bsame (?:error|problem|issue|message|thing|as before)\b",
         decides=_PERSISTS, why="'Same error as before.' reports the outcome: the fix did not work"),
    Rule(id="persists.not_working",
         pattern=r"\b(?:didn'?t|did not|doesn'?t|does not|won'?t|will not|can'?t|cannot|isn'?t|is not|aren'?t|"
                 r"not) (?:work|help|fix|change|solve|show|load|print|connect|start|boot|mount|appear|find|"
                 r"install)\w*",
         decides=_PERSISTS,
         why="'didn't work', 'doesn't boot'; real #ubuntu users drop the apostrophe ('No,that didnt show "
             "as anything'), and 'can't find' / 'won't install' are the same report"),
    Rule(id="persists.no_change", pattern=r"\bno (?:change|luck|difference|sound|signal)\b", decides=_PERSISTS,
         why="'no luck', 'no change' after a step; 'still no sound' and 'no signal' name the symptom that stays"),
    Rule(id="persists.nothing", pattern=r"\bnothing (?:changed|happened)\b", decides=_PERSISTS,
         why="'I ran it but nothing happened' reports a failed step"),
    Rule(id="persists.new_error", pattern=r"\b(?:different|new|another) error\b", decides=_PERSISTS,
         why="'Now I get a different error' is no success (it had counted as one before the "
             "'now I get X' rule excluded errors)"),
    Rule(id="persists.again",
         pattern=r"\b(?:dropped|failed|crashed|stopped|happened|broke|froze|disconnected) again\b",
         decides=_PERSISTS, why="'the wifi dropped again', 'it froze again': the symptom came back"),
])

_UNTRIED = ("user reply: the fix is not tried yet, or a question comes first -> the solved-check "
            "vetoes 'solved' (the bounds read these as a postponement, not an outcome)")
UNTRIED = RuleSet("untried", [
    Rule(id="untried.will_try", pattern=r"\bi(?:'ll| will) (?:try|give it|do that|check)\b", decides=_UNTRIED,
         why="'I'll try that' reports no result; the solved-check must not end the conversation on "
             "it, while the bounds cap it only with 'later' (postpones.*)"),
    Rule(id="untried.before", pattern=r"\bbefore i try\b", decides=_UNTRIED,
         why="'before I try that, what does it do?': a question comes first, nothing is fixed yet"),
    Rule(id="untried.would_work", pattern=r"\b(?:would|could) work if\b", decides=_UNTRIED,
         why="'it would work if I had root' is a condition, not a success"),
])

# -- a success claimed, and what negates it ------------------------------------------------------
_SUCCESS = ("a success word: the problem's end unless negated in its clause (claims_success); "
            "also a reported result (result_cues: the solved-check asks its questions)")
SUCCESS = RuleSet("success", [
    Rule(id="success.word",
         pattern=r"\b(?:works?|working|worked|fixed|solved|resolved|did it|did the trick|gone|(?:is|are) back|"
                 r"shows? up|appears?|load(?:s|ing)?|prints?|connects?|connected|mounts?|mounted|"
                 r"(?:was|am|were) able to|managed to)\b",
         decides=_SUCCESS,
         why="'That worked', 'the internet is back'; 'able to' and 'loading' since a p8 batch where "
             "'Now, Hardy is loading.' and 'I was able to find and install xmms-wma' were false solves"),
    Rule(id="success.now", pattern=r"\bnow,? (?:i (?:have|can)|it|the|my|they)\b", decides=_SUCCESS,
         why="'Now, I can log in' (a batch's simulated user claimed this under a not-fixed outcome "
             "and the rule missed it)"),
    Rule(id="success.can_now", pattern=r"\b(?:can|could) now\b", decides=_SUCCESS,
         why="'I can now open the share': the same claim in the other word order"),
    Rule(id="success.now_i_get",
         pattern=r"\bnow,? i(?:'m| am)? (?:get(?:ting)?|see(?:ing)?)\b(?! (?:(?:a|an|the|this|that|another|same|"
                 r"new|different|other|weird|strange|some)\s+){0,3}(?:errors?|messages?|warnings?|problems?|"
                 r"issues?|black|blank|nothing|no)\b)",
         decides=_SUCCESS,
         why="a demo's 'Now I am getting graphical interface.' passed under a not-fixed outcome; "
             "'Now I get a different error' is not a success (1,859 messages: only that one changed)"),
])
SUCCEEDED = RuleSet("succeeded", [
    Rule(id="success.succeeded", pattern=r"\b(?:successful(?:ly)?|succeeded)\b",
         decides="a step succeeded: a claimed success only when nothing in the message says the "
                 "problem persists",
         why="a batch reply claimed 'the installation was successful' under a no-fix outcome and the "
             "solved-check took it; 'it ran successfully but still no sound' is no success"),
])
_NEGATION = "negates a success word in the same clause (claims_success): no success claimed"
NEGATION = RuleSet("negation", [
    Rule(id="negation.not", pattern=r"\bnot\b|n't\b|\bno longer\b|\bnever\b|\bnothing\b", decides=_NEGATION,
         why="'it does not work', 'it never loads' negate the success word they stand beside"),
    Rule(id="negation.persists", pattern=r"\bstill\b|\bsame (?:error|problem)\b", decides=_NEGATION,
         why="'it still shows the same error' holds a success word ('shows') but reports the problem"),
    Rule(id="negation.hypothetical", pattern=r"\bif\b|\bwhether\b|\bwould\b|\bshould\b|\bwill\b|\bhope\b",
         decides=_NEGATION,
         why="'I hope it works', 'if it works I will tell you' claim nothing yet"),
])
SYMPTOM_GONE = RuleSet("symptom-gone", [
    Rule(id="success.symptom_gone",
         pattern=r"\b(?:error|problem|issue|message|warning|crash\w*|symptom)s?\b[^.,;!?]{0,40}?"
                 r"\b(?:no longer|not (?:\w+ )?(?:appear|show|happen|occur|come)\w*[^.,;!?]{0,12}?\b(?:any ?more|again))",
         decides="the error itself is said to be gone: a claimed success although the clause holds a negation",
         why="'the error is no longer appearing', 'the warning does not show up anymore' were missed "
             "as successes because of their 'no' and 'not'"),
])

# -- a result reported at all --------------------------------------------------------------------
_RESULT = ("the message reports a result (negated or not): without one (and without a success word) "
           "the solved-check vetoes 'solved' with no question asked")
RESULT = RuleSet("result", [
    Rule(id="result.again_back", pattern=r"\b(?:again|back)\b", decides=_RESULT,
         why="'the test page came out again', 'the internet is back'; right after a step ('logged back "
             "in again') they report nothing (result.after_step)"),
    Rule(id="result.word", pattern=r"\b(?:now|stopped|perfect|did it|did the trick|that did|online|shows?)\b",
         decides=_RESULT, why="'The printer is online', 'it stopped', 'perfect': a result in a word"),
    Rule(id="result.should_be", pattern=r"\bshould be (?:resolved|fixed|solved|working)\b", decides=_RESULT,
         why="'the problem should be resolved' reports an expected result (a false solve under a "
             "not-fixed outcome in a batch; the user check then rejects it)"),
], limits=[
    # the id the solved-check records when no result cue at all vetoes (judges.py: "result.none")
    Limit(id="result.none", value=0,
          decides="a user reply with this many result cues (result.*, success.*) reports no result -> the "
                  "solved-check vetoes 'solved' with no question asked",
          why="'I have changed the permissions of the .ssh directory ... to 700 and 600' was judged solved "
              "at P(yes) 0.56 in a p8 batch: it says what was done, not that it works"),
])
AFTER_STEP = RuleSet("after-step", [
    Rule(id="result.after_step",
         pattern=r"\b(?:tried|try|trying|logged|log|logging|signed|sign|went|go|going|restarted|restart|rebooted|"
                 r"reboot|ran|run|did|do|done|typed|type|entered|clicked|opened|installed|plugged|turned|switched|"
                 r"put|set|changed|back|in|it|that|this)\W*$",
         decides="'again' or 'back' right after a step word reports no result",
         why="a batch's solved-check took 'I logged out and logged back in again to apply the new "
             "permissions.' for a confirmation at P(yes) 0.52"),
])

# -- reads like the help desk --------------------------------------------------------------------
_ASSISTANT = ("the help desk's own phrase: a user never writes it -> a user reply is capped at 2, "
              "a simulated user's draft acts as the agent, the solved-check vetoes 'solved'")
ASSISTANT = RuleSet("assistant-phrases", [
    Rule(id="assistant.hope_helps", pattern=r"\bi hope (?:this|that) helps\b", flags="ims", decides=_ASSISTANT,
         why="the help desk's sign-off, written by a simulated user that slipped into the agent's part"),
    Rule(id="assistant.let_me_know", pattern=r"\blet me know if\b", flags="ims", decides=_ASSISTANT,
         why="an offer of further help, the agent's phrase"),
    Rule(id="assistant.ai", pattern=r"\b(?:as an ai|i am an ai|i'm an ai|language model)\b", flags="ims",
         decides=_ASSISTANT, why="the model speaking as itself, never a user"),
    Rule(id="assistant.how_can_i_help", pattern=r"\bhow can i (?:help|assist) you\b", flags="ims",
         decides=_ASSISTANT, why="the help desk's greeting"),
    Rule(id="assistant.feel_free", pattern=r"\bfeel free to (?:ask|reach out|contact)\b", flags="ims",
         decides=_ASSISTANT, why="a batch user replied in the help desk's voice ('feel free to ask')"),
    Rule(id="assistant.glad_to_help", pattern=r"\b(?:i'm |i am )?glad (?:i|to) (?:could |can )?help\b",
         flags="ims", decides=_ASSISTANT,
         why="a batch user replied 'You're welcome! I'm glad I could help.'"),
    Rule(id="assistant.sorry_to_hear", pattern=r"\b(?:i'm|i am) sorry to hear\b", flags="ims", decides=_ASSISTANT,
         why="'I'm sorry to hear that you're having trouble playing music in Amarok.' (a batch, p8)"),
    Rule(id="assistant.sorry_for", pattern=r"\b(?:sorry for|apologi[sz]e for) (?:the|any) (?:inconvenience|confusion)\b",
         flags="ims", decides=_ASSISTANT,
         why="'Sorry for the inconvenience, but I am not sure what you are asking.' (b18, p9)"),
    Rule(id="assistant.do_my_best", pattern=r"\b(?:i will|i'll) do my best to help\b", flags="ims",
         decides=_ASSISTANT, why="'... and I will do my best to help you.' (b18, p9)"),
    Rule(id="assistant.details_about", pattern=r"\b(?:details|context|information) (?:about|on) your (?:problem|issue)\b",
         flags="ims", decides=_ASSISTANT,
         why="'Please provide more context or details about your problem' (b18, p9)"),
])
_AGENT = ("an instruction, explanation or list of steps, as the help desk writes them -> a simulated "
          "user's draft acts as the agent, the solved-check vetoes 'solved' (a real user writes these "
          "now and then, so they do not cap a helpfulness score)")
AGENT_INSTRUCTIONS = RuleSet("agent-instructions", [
    Rule(id="agent.sure", pattern=r"^\s*(sure|certainly|of course|absolutely)\b[,!.]", flags="ims", decides=_AGENT,
         why="'Sure! ...' opening a message is the agent answering a request"),
    Rule(id="agent.heres_how", pattern=r"\bhere(?:'s| is) (?:how|what you)\b", flags="ims", decides=_AGENT,
         why="'Here's how to ...' explains, as the help desk does"),
    Rule(id="agent.you_should",
         pattern=r"\byou (?:can|should|need to|could|may want to|might want to|must) (?!tell|help|see)\w+",
         flags="ims", decides=_AGENT,
         why="an instruction to the reader; 'you can tell', 'you could help' are a user's"),
    Rule(id="agent.to_fix", pattern=r"\b(?:to (?:fix|solve|resolve) (?:this|that|the|your))\b", flags="ims",
         decides=_AGENT, why="'To fix this, ...' introduces the help desk's steps"),
    Rule(id="agent.step_list", pattern=r"^\s*(?:\d+[.)]|[-*])\s+\S.*\n\s*(?:\d+[.)]|[-*])\s+\S", flags="ims",
         decides=_AGENT,
         why="a simulated user that copied the agent's numbered steps was judged solved at P(yes) 0.51"),
    Rule(id="agent.code_fence", pattern=r"```", flags="ims", decides=_AGENT,
         why="a fenced code block is the agent's commands, pasted back"),
    Rule(id="agent.once_done", pattern=r"\bonce you(?:'ve| have) (?:done|completed|finished|tried)\b",
         flags="ims", decides=_AGENT,
         why="'Once you have done this, try running your SSH command again.' (a batch's solved-check "
             "took such a message for a confirmation)"),
    Rule(id="agent.try_your", pattern=r"\btry \w+ing your\b", flags="ims", decides=_AGENT,
         why="'try running your SSH command again', an instruction seen in the same batch"),
])
# the agent cues: the instructions, then the help desk's own phrases (each searched on its own)
AGENT = RuleSet.joined("agent-cues", [AGENT_INSTRUCTIONS, ASSISTANT])

# -- what each decision reads, versioned as one ---------------------------------------------------
# the solved-check's and the simulated user's "the problem persists, or the fix is untried"
PERSISTING = RuleSet.joined("persisting", [PERSISTS, UNTRIED])
# what claims_success reads (quoted text is neutralised first)
SUCCESS_CLAIM = RuleSet.joined("success-claim", [QUOTED, SYMPTOM_GONE, SUCCESS, SUCCEEDED, PERSISTING, NEGATION])
# what the solved-check's rule vetoes read: persisting cues, agent cues, result cues
SOLVED_CUES = RuleSet.joined("solved-cues", [PERSISTING, AGENT, SUCCESS, RESULT, AFTER_STEP])
