"""Rule data: the helpfulness bounds (what a message plainly is, and the band the rubric gives it).

Data only (the engine is :mod:`harness.aids.rules`, the bounds :mod:`harness.aids.helpfulness_bounds`;
the method in docs/selfscore.md, "Rubric bounds on helpfulness"). The bands themselves are limits
here, so a changed floor or cap changes the rules' version too.
"""
from __future__ import annotations

from harness.aids.data_cues import ASSISTANT, PERSISTS, SUCCESS_CLAIM
from harness.aids.data_text import QUOTED, TECHNICAL, TEXT
from harness.aids.rules import Limit, Rule, RuleSet, WordList

_B18 = "b18/b19 and the turn-helpfulness sanity set"

# -- a later user message ------------------------------------------------------------------------
NO_OUTPUT = RuleSet("no-output", [
    Rule(id="outcome.no_output", pattern=r"\bno (?:output|errors?)\b",
         decides="user reply: it reports what happened (good or bad) -> helpfulness floor 5; not a "
                 "persisting problem, so the solved-check does not veto on it",
         why="'no output', 'no errors' report the step's result; 'it installed with no errors' is no "
             "persisting problem (the bounds' old twin counted them with 'no luck')"),
])
WORKS = RuleSet("works", [
    Rule(id="works.it_works", pattern=r"\b(?:it|that|this|everything|now it)\s+(?:works|worked|is working|did it|did the trick)\b",
         decides="user reply: the success said plainly (when claims_success agrees) -> helpfulness floor 5",
         why="'That worked, thanks' reports the outcome (" + _B18 + ")"),
    Rule(id="works.now", pattern=r"\bworks? now\b|\bnow (?:it works|i can|works)\b",
         decides="user reply: the success said plainly -> helpfulness floor 5", why="'works now', 'now I can log in'"),
    Rule(id="works.fixed", pattern=r"\b(?:is|are|was) (?:fixed|solved|resolved)\b|\b(?:fixed|solved) it\b|"
                                   r"\bproblem (?:is )?gone\b",
         decides="user reply: the success said plainly -> helpfulness floor 5",
         why="'the problem is gone', 'that fixed it'"),
])
_OUTPUT = "user reply: it reports an output -> helpfulness floor 5"
OUTPUT = RuleSet("output", [
    Rule(id="output.says",
         pattern=r"\b(?:it|that|this|the output|the command|the log|the error|they) (?:says?|said|shows?|showed|"
                 r"lists?|listed|prints?|printed|returns?|returned|gives?|gave)\b",
         decides=_OUTPUT, why="'It says: 03:00.0 Network controller: Broadcom ...' reports an output"),
    Rule(id="output.i_get", pattern=r"\b(?:i get|i got|output)\b", decides=_OUTPUT,
         why="'for that i get this ...' reports what the step gave"),
    Rule(id="output.link", pattern=r"https?://", decides=_OUTPUT,
         why="a paste link ('http://ubuntu.pastebin.com/4JHwYRHT') is the output, pasted elsewhere"),
])
POSTPONES = RuleSet("postpones", [
    Rule(id="postpones.will_try_later",
         pattern=r"\bi(?:'ll| will| am going to|'m going to) (?:try|do|check|give|look)\w*(?:\s+\w+){0,4}\s+"
                 r"(?:later|tomorrow|next|some ?time|when)\b",
         decides="user reply: it postpones the step and reports nothing -> helpfulness cap 3",
         why="p9 gave 8 to 'Thanks, I will try that some time next week.'"),
    Rule(id="postpones.later", pattern=r"\b(?:later|tomorrow|next week|some ?time)\b",
         decides="user reply: it postpones the step and reports nothing -> helpfulness cap 3",
         why="'ok i will check next time', 'I'll try it later after getting password' (real #ubuntu)"),
])
REFUSES = RuleSet("refuses", [
    Rule(id="refuses.wont", pattern=r"\b(?:i )?(?:don't|do not|won't|will not) (?:want to|change|do|try|run)\b",
         decides="user reply: it refuses the step -> helpfulness cap 3",
         why="'I don't want to change any files.' does not do what was asked (" + _B18 + ")"),
    Rule(id="refuses.just_tell_me", pattern=r"\bjust tell me\b",
         decides="user reply: it refuses the step -> helpfulness cap 3",
         why="'Just tell me why it doesn't work.' asks for an answer instead of doing the step"),
])
ACK = RuleSet("acknowledges", word_lists=[
    WordList(id="ack.words", words="ok okay k thanks thank you thx ty right alright hmm fine cool great understood",
             decides="user reply: every word is one of these (at most ack.max_words) -> it only "
                     "acknowledges -> helpfulness cap 2",
             why="'ok', 'ok, thanks', 'thx' report nothing; the 1.5B gave 8 to such replies deep in a "
                 "conversation; 'yes' is an answer and not in the list"),
], limits=[
    Limit(id="ack.max_words", value=6, decides="the longest reply that can only acknowledge",
          why="'ok, thank you, great' is still only thanks; longer replies say something"),
])

# -- a first question ----------------------------------------------------------------------------
_DETAIL = "first question: it gives a detail -> no cap (without any: helpfulness cap 4)"
QUESTION_DETAIL = RuleSet("question-detail", [
    Rule(id="detail.system",
         pattern=r"\b(?:ubuntu|kubuntu|xubuntu|debian|fedora|windows|macos|os x|linux mint|hardy|gutsy|feisty|edgy|"
                 r"dapper|intrepid|jaunty|karmic|lucid|kernel)\b",
         decides=_DETAIL, why="a system or release named ('the gutsy repositories', 'since the kernel update')"),
    Rule(id="detail.version", pattern=r"\b\d+\.\d+\b", decides=_DETAIL, why="a version ('8.04')"),
    Rule(id="detail.error",
         pattern=r"\b(?:error|errors|fails? with|failed with|says|message|warning|denied|not found|no such|cannot|"
                 r"can't|unable)\b",
         decides=_DETAIL, why="an error reported ('fails with 404 Not Found', 'Permission denied')"),
    Rule(id="detail.http_code", pattern=r"\b[1-5]\d\d\b", decides=_DETAIL, why="a status code ('a 404')"),
    Rule(id="detail.tried",
         pattern=r"\b(?:i(?:'ve| have)? (?:tried|checked|added|installed|reinstalled|set|changed|run|ran|removed|"
                 r"updated|upgraded|rebooted)|already|since|after (?:i|the|a|an|my|yesterday)|when i)\b",
         decides=_DETAIL, why="something tried, or since when ('Since the kernel update my wifi drops')"),
])
HOW_TO = RuleSet("how-to", [
    Rule(id="howto.question",
         pattern=r"\b(?:how (?:do|can|to|would|should)|is there an? \w+|what(?:'s| is) the (?:difference|command|way|"
                 r"best way|default)|where (?:is|are|can|do|\S+ (?:is|are))\b|recomm?end|a tool like)\b",
         decides="first question: a how-to question needs no system or error -> no cap",
         why="'How do I search for a specific file name?' and 'where syslog is?' are complete as asked"),
])

# -- an agent message ----------------------------------------------------------------------------
_ELSEWHERE = "agent reply: it only sends the user elsewhere (and has no step) -> helpfulness cap 3"
ELSEWHERE = RuleSet("elsewhere", [
    Rule(id="elsewhere.contact",
         pattern=r"\b(?:contact\w*|ask\w*|consult\w*|reach\w* out to|get\w* in touch with)\b[^.]{0,40}\b(?:administrator|"
                 r"admin|sysadmin|manufacturer|vendor|support|it department|technician|professional|provider|isp)\b",
         decides=_ELSEWHERE,
         why="'You can try contacting the system administrator or the manufacturer for assistance.' "
             "gives the user nothing to do"),
    Rule(id="elsewhere.try_later", pattern=r"\btry again later\b", decides=_ELSEWHERE,
         why="'Please try again later.' is no step"),
    Rule(id="elsewhere.seek_help", pattern=r"\b(?:seek|get) (?:professional|further) (?:help|assistance)\b",
         decides=_ELSEWHERE, why="'seek professional help' sends the user away"),
])
STEP = RuleSet("step", [
    Rule(id="step.code", pattern=r"`[^`]+`", decides="agent reply: a command in backticks is a step of its own",
         why="'first run `sudo dhclient -r`' beside 'contact your administrator' still helps"),
    Rule(id="step.verb",
         pattern=r"\b(?:sudo|apt-get|apt|run|type|open|edit|install|reinstall|remove|enable|disable|set|change|replace|"
                 r"add|check|press|click|select|choose|reboot|restart)\b",
         decides="agent reply: an instruction verb is a step of its own", why="'open the settings and set ...'"),
])

# -- the bands -----------------------------------------------------------------------------------
BANDS = RuleSet("bands", limits=[
    Limit(id="band.help_desk", value=2, decides="cap of a user reply in the help desk's voice",
          why="a user speaking as the help desk helps nothing; the 1.5B gave such replies 8 (" + _B18 + ")"),
    Limit(id="band.repeats_question", value=2, decides="cap of a user reply that pastes the first question again",
          why="the question again adds nothing the agent has not read"),
    Limit(id="repeat.question_copied", value=0.6,
          decides="share of a reply's words copied (runs of 4+) from the first question that makes it a repeat",
          why="the simulated user's own repeat check uses the same 0.6 (user_checks.repeated_message)"),
    Limit(id="band.refuses", value=3, decides="cap of a user reply that refuses the step",
          why="the rubric's 3: the user does not do what was asked"),
    Limit(id="band.outcome", value=5, decides="floor of a user reply that reports the outcome",
          why="the rubric's 5-6: the step was done, the outcome said in a few words"),
    Limit(id="band.output", value=5, decides="floor of a user reply that reports an output",
          why="an output pasted or quoted is at least the rubric's 5-6"),
    Limit(id="output.technical_tokens", value=2,
          decides="distinct technical tokens outside a question that count as an output",
          why="a pasted line holds several ('03:00.0 ... BCM4312'); a follow-up question names things "
              "but reports nothing"),
    Limit(id="band.postpones", value=3, decides="cap of a user reply that postpones the step",
          why="the rubric's 3: nothing reported, the step put off"),
    Limit(id="band.acknowledges", value=2, decides="cap of a user reply that only acknowledges",
          why="'ok' reports nothing: the rubric's 1-2"),
    Limit(id="band.no_detail", value=4, decides="cap of a first question with no system, error, output or step tried",
          why="the rubric's 'a problem is named, but without details'; the 1.5B gave 7-9 to 'my sound "
              "does not work recently..i need help'"),
    Limit(id="band.repeats_agent", value=2, decides="cap of an agent reply that repeats an earlier agent reply",
          why="a repeat gives the user nothing new (a sanity case: the same reply after 'still the same error')"),
    Limit(id="repeat.agent_copied", value=0.8,
          decides="share of an agent reply's words copied (runs of 3+) from an earlier one that makes it a repeat",
          why="commands are short, so runs of 3 words; 80% leaves room for a changed greeting"),
    Limit(id="repeat.agent_min_run", value=3, decides="the shortest run of words counted as copied from an earlier agent reply",
          why="an agent's commands are short ('sudo apt-get install gdm'): runs of 4 would miss them"),
    Limit(id="band.elsewhere", value=3, decides="cap of an agent reply that only sends the user elsewhere",
          why="the rubric's 3: no step of its own"),
    Limit(id="band.pleasantry", value=2, decides="cap of an agent reply that is only a pleasantry",
          why="the rubric's 1-2 (does nothing to solve the problem): 'You are welcome.' scored 6-8 (agreement "
          "set, tune split; a real helpdesk set in the issue)"),
    Limit(id="band.asks", value=5, decides="floor of an agent reply that only asks the user something",
          why="a diagnostic question moves the case forward ('can you be more specific', 'what does lsusb show') "
          "and the 1.5B gave such questions 1 (agreement set, tune split: rho 0.34 -> 0.41 with this and the "
          "pleasantry cap)"),
])
ASKS = RuleSet("asks", [
    Rule(id="asks.question", pattern=r"\?\s*$", decides="a sentence that asks: an agent reply whose every "
         "sentence asks (or only thanks) asks the user something and fixes nothing yet",
         why="'What does lsusb show?' moves the case forward but fixes nothing yet; 'Widen the column. Does that "
         "help?' gives a step"),
])
PLEASANTRY = RuleSet("pleasantry", word_lists=[
    WordList(id="pleasantry.words", words="you are you're youre re welcome no problem np glad to help helped happy "
             "good luck anytime any time cheers great nice ok okay sure thanks it works i am that s is",
             decides="an agent reply of these words only is a pleasantry -> helpfulness cap 2",
             why="'You're welcome!', 'no problem.', 'glad it works' after the user said it works"),
], limits=[
    Limit(id="pleasantry.max_words", value=8, decides="a pleasantry has at most this many words",
          why="'Glad it works, good luck!' is 5 words; a longer reply says more"),
])

# -- what each bound reads, versioned as one -----------------------------------------------------
# a later user message reports the outcome: the problem persists (shared with the solved-check),
# or "no output" / "no errors" (the bounds' own)
OUTCOME = RuleSet.joined("outcome", [PERSISTS, NO_OUTPUT])
# a first question's details: a system, version, error, status code, step tried, quote or technical token
DETAIL = RuleSet.joined("first-question-detail", [QUESTION_DETAIL, QUOTED, TECHNICAL])
# everything the helpfulness bounds read: its version is the one each bounded judgment stores
HB = RuleSet.joined("hb", [TEXT, ASSISTANT, SUCCESS_CLAIM, OUTCOME, WORKS, OUTPUT, QUOTED, TECHNICAL, REFUSES,
                           POSTPONES, ACK, DETAIL, HOW_TO, ELSEWHERE, STEP, ASKS, PLEASANTRY, BANDS])
