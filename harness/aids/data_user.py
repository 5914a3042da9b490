"""Rule data: the simulated user's own checks (leaks, versions, repeats, copied instructions) and
the fix terms its outcome decision reads.

Data only (the engine is :mod:`harness.aids.rules`; the checks are
``harness.simuser.checks`` and ``harness.simuser.fix_terms``, docs/selfscore.md).
"""
from __future__ import annotations

from harness.aids.data_cues import AFTER_STEP, AGENT, PERSISTING, RESULT, SUCCESS_CLAIM
from harness.aids.data_text import TEXT
from harness.aids.rules import Limit, Rule, RuleSet, WordList

USER_CHECKS = RuleSet("simulated-user", [
    Rule(id="version.product",
         pattern=r"\b(ubuntu|windows|debian|fedora|macos|os x|kernel|python|firefox|gnome|kde|office|excel|outlook|"
                 r"chrome)\s+v?(\d+(?:\.\d+)*)",
         decides="a product named with a version: one the facts give otherwise contradicts them "
                 "(contradicts_facts), one nothing gave is invented (invents_detail) -> the draft is written again",
         why="in a batch the 1.5B asker of a 2007 thread said 'Ubuntu 20.04' four turns in a row (4 of 38 messages)"),
    Rule(id="helper.imperative_opening",
         pattern=r"(?:^|(?<=[.!?]) )(?:\s*[\w\-\[\]|`^]{2,20}[:,]\s)?\s*(?:try|run|use|reinstall|type|make sure|go to|please "
                 r"(?:provide|try|run))\b(?! (?:it|that|this) (?:again|myself)\b)(?![^\n]*\?[ \t]*$)",
         flags="im",
         decides="a line or sentence that opens (after an IRC address) with an instruction to the reader: the "
                 "draft acts as the agent (acts_as_agent) -> written again",
         why="simcheck tune part (issue 42): 'Lemonsparrow: try a clean install. it will install mysql properly.', "
             "'I don't understand ... Please provide more details or try the command'; a line that asks ('try diff "
             "account?') is a user's; on the 511 real replies of the 227-thread set's tune part it flags one "
             "('try this https://...', an asker helping someone else)"),
    Rule(id="helper.looking_for", pattern=r"\b(?:that|which)?\s?you(?:'re| are) looking for\b", flags="im",
         decides="'the package you are looking for' is the helper's phrase: the draft acts as the agent",
         why="simcheck tune part: 'Here is the package you are looking for: ...' sent as the asker's reply"),
    Rule(id="claim.now_able", pattern=r"\b(?:am|is|are|was|were)? ?now able to\b|\bnow (?:i|it) (?:am|is) "
                                        r"(?:able|working)\b", flags="im",
         decides="'I am now able to log in' reports success: under a not-fixed outcome the draft is a false "
                 "success (false_success) -> written again",
         why="simcheck tune part: 'I am now able to login to the graphical interface. Thanks for your help.' "
             "was sent under a not-fixed outcome; the shared success cues (success.can_now) miss the word order"),
], word_lists=[
    WordList(id="leak.stop_words",
             words="""about above after again against all also always because been before being below between both
             cannot could does doing down during each from further have having here into itself just more most must
             only other over same should some such than that their them then there these they this those through
             under until very were what when where which while will with would your yours thing things work works
             working problem problems issue user users computer machine system something someone anything still
             already fixed solve solved solution cause caused need needs make sure open file files using used use""",
             decides="words of the hidden solution a user may say without leaking it (never a leaked term)",
             why="common English and the words of any help-desk problem ('problem', 'work', 'file') say "
                 "nothing of the hidden fix"),
    WordList(id="leak.stem_suffixes", words="ing ed es s",
             decides="suffixes cut (first that fits, a stem of 4+ letters left) so that two forms of a "
                     "word are one term when a leak is looked for",
             why="'installed' in the message and 'install' in the solution are one term; both sides are "
                 "cut alike, so no doubled consonant needs undoing (unlike fix.inflections)"),
    WordList(id="copy.meta_words", words="never say note reply agent facts sentences",
             decides="a short sentence (4+ words) that holds one of these and stands whole in the "
                     "simulator's notes is a copied instruction, cut from the draft",
             why="a batch reply ended 'Never say that it works.)'; 'The problem is still there.' is a reply, "
                 "not a copied order"),
], limits=[
    Limit(id="copy.run", value=8, decides="words in a run shared with the simulator's instructions that make a "
                                          "sentence a copied instruction",
          why="the 1.5B wrote its outcome note ('If the agent asked you something, answer it from your "
              "facts. ...') into its reply"),
    Limit(id="leak.min_length", value=4, decides="the shortest word that can be a leaked term",
          why="short words ('dns', 'ip') are too common to tell a leak"),
    Limit(id="leak.min_terms", value=3, decides="leaked terms that make a leak when none of them is technical",
          why="one shared ordinary word is chance; three distinctive words of the hidden fix are not"),
    Limit(id="repeat.question", value=0.6, decides="share of a message copied from the first question that makes "
                                                   "it a repeat (repeats_earlier)",
          why="the 1.5B re-pasted its question as its answer"),
    Limit(id="repeat.verbatim", value=0.8, decides="share of a long message copied from an earlier user message "
                                                   "that makes it a repeat",
          why="in a batch the 1.5B sent one 60-word paragraph three turns in a row"),
    Limit(id="repeat.verbatim_words", value=20, decides="the shortest message checked for a verbatim repeat",
          why="a user who says 'it still fails' again, as people do, is not flagged"),
    Limit(id="echo.limit", value=0.75, decides="share of a message copied (runs of 3+) from the agent's latest "
                                               "message that makes it an echo (echoes_agent)",
          why="in a p8 batch the 1.5B user sent the agent's commands back as its whole reply; 'I changed "
              "the permissions ... as you said, same error' copies about half and passes"),
    Limit(id="echo.min_run", value=3, decides="the shortest run of words counted as copied from the agent",
          why="commands are short ('sudo journalctl -xe')"),
    Limit(id="echo.short_words", value=2,
          decides="the fewest words of a short reply (under copied.min_words) that, standing whole and in order "
                  "in the agent's latest message, make it an echo",
          why="simcheck tune part: the 1.5B answered 'Dream, ctrl+alt+del?' with 'Dream, ctrl+alt+del?' and "
              "'sree, terminal > gnome-volume-properties' with 'Terminal: gnome-volume-properties'"),
])

USER_FACTS = RuleSet("user-facts", [
    Rule(id="fact.question", pattern=r"\?\s*[)\]:;(/\\=o0-]*\s*$", flags="",
         decides="a fact of the task whose every sentence ends with a question mark is the asker's later "
                 "question, not a fact of its situation: not given to the simulated user",
         why="25% of the facts of the tune threads are later questions or chatter ('how do i disable automatic "
             "login from ctrl+alt+f7?'); given as facts, the 1.5B asked them turns early, word for word "
             "(simcheck tune part, issue 42)"),
], word_lists=[
    WordList(id="fact.chatter_words",
             words="""ok okay k kk alright thanks thank thanx thx ty cheers you u all much very lot brb back right
             be hmm hm heh hehe haha lol sorry np sure cool great nice ah oh aha i see will do shall let me try
             that it again well so bumped i'll ill give a shot check wait waiting one sec moment :) :( ;) :/""",
             decides="a fact made only of these words is chatter ('I see thanks. Let me check again', 'okay ill "
                     "give it a shot'), not a fact of the asker's situation: not given to the simulated user",
             why="the 1.5B sent such chatter, copied from its facts, as whole replies (simcheck tune part)"),
])
"""What of a task's facts the simulated user is told (harness.simuser.users.situation_facts)."""

FIX_TERMS = RuleSet("fix-terms", [
    Rule(id="asks.suggestion",
         pattern=r"^(did|have|could|can|would|will) you (try|tried|run|install|reinstall|use|set|add|remove|change)\b"
                 r"|^(why not|how about|what about|try)\b",
         decides="a question that suggests an action ('did you try ...', 'how about ...') is a step, "
                 "so the message is not one that only asks",
         why="real helpers' questions ('are there any error messages?') tell the user to do nothing, "
             "but 'have you tried ...' does"),
    Rule(id="asks.quoted", pattern=r"'[^']*\s[^']*'|\"[^\"]+\"", flags="",
         decides="an agent message that quotes a phrase (or holds a backtick) gives something to type or "
                 "look for, so it is not one that only asks",
         why="'did you type \"sudo dhclient\"?' asks the user to do something; unlike quoted.* a pair of "
             "apostrophes counts only around a space: measured, quoted.* would turn a real helper's 'is there "
             "even a virtual package for 'lamp'?' into a step"),
    Rule(id="asks.sentence", pattern=r"[^.!?\n]+[.!?]*", flags="",
         decides="the sentences of an agent message, each checked for being a question",
         why="a sentence ends at '.', '!', '?' or a line break (IRC helpers write one line a sentence)"),
], word_lists=[
    WordList(id="fix.generic_words",
             words="""sudo apt apt-get aptitude dpkg reboot restart install reinstall terminal ubuntu linux windows
             macos settings command commands package packages please thanks grep sed awk dmesg lspci lsusb lsmod
             lshw uname lsb_release whereis htop gedit vim pastebin""",
             decides="words every fix uses, or that only look at the system: never a distinctive term of the real fix",
             why="in a batch 'dmesg | grep xorg' in a generic list of steps lowered the outcome threshold and a "
                 "reinstall of the X server was taken for the thread's 'install gdm'"),
    WordList(id="fix.inflections", words="ations ation ing ed es s",
             decides="suffixes cut (first that fits, 3+ letters left; a doubled consonant undone, or an 'e' "
                     "added back) to find a generic word's inflections",
             why="in batch b15 'reinstalling' counted as a term of the real fix and a non-fix passed the "
                 "outcome threshold"),
], limits=[
    Limit(id="fix.min_length", value=4, decides="the shortest word that can be a distinctive term of a fix",
          why="short words are too common to tell one fix from another"),
])

USER_OUTCOME_THRESHOLDS = RuleSet("user-outcome-thresholds", limits=[
    Limit(id="outcome.with_terms", value=0.55,
          decides="the mean of the user model's P(yes) and the similarity to the real fix at or above which "
                  "an agent message that names a distinctive term of the fix fixes the problem (user_outcome "
                  "decided)",
          why="set on the first 16 outcome scenarios with the 1.5B: fixes naming a term 0.56-0.80, non-fixes "
              "0.30-0.55 (not held out; docs/selfscore.md, 'The simulated user')"),
    Limit(id="outcome.without_terms", value=0.66,
          decides="the same mean for a message that names no distinctive term of the fix",
          why="fixes in other words 0.69-0.78; a generic list of sshd_config steps reached 0.62-0.65"),
    Limit(id="outcome.no_solution", value=0.62,
          decides="the same mean for a task without a known fix (the similarity is to the problem statement)",
          why="the single threshold used before the fix terms: 7/8 fixes and 8/8 non-fixes on the set"),
])
"""The simulated user's outcome thresholds (method ``decided``): read by harness.simuser.users."""

# everything the simulated user's rule checks read (harness.simuser.checks.rule_violations):
# a changed rule changes the version the user's regenerations are recorded under
USER_CHECK_RULES = RuleSet.joined("user-checks", [USER_CHECKS, TEXT, AGENT, SUCCESS_CLAIM, PERSISTING, RESULT,
                                                  AFTER_STEP])
USER_CHECKS_VERSION = USER_CHECK_RULES.version

# --- simulator faults the regenerations do not look for (issue 42): flagged, never regenerated ----
_ROLE = ("the simulated user steps out of the asker's part: it refuses like an assistant or says it is "
         "an AI (breaks_role) -> the message is a simulator fault (role_break), flagged with the turn")
_ACTION = ("the simulated user reports an action a real asker does not do between two chat messages "
           "(impossible_action) -> a simulator fault (impossible_action), flagged with the turn; not when "
           "the sentence places it before the conversation (action.earlier) or the question or facts "
           "report the same action")
SIMULATOR_FAULTS = RuleSet("simulator-faults", [
    Rule(id="role.refuses",
         pattern=r"^\W*(?:i apologi[sz]e|(?:i'm|i am|im) (?:very |really |so )?sorry|sorry)\b[,.!]?\s*(?:but\s+)?"
                 r"i (?:cannot|can't|can not|am unable to|'m unable to|am not able to|won't be able to|won't) "
                 r"(?:help|assist|comply|fulfill|engage|support|provide (?:assistance|help|that information))\b"
                 r"|\bi (?:cannot|can't|can not|am unable to|'m unable to|am not able to) (?:assist|comply|fulfill)\b"
                 r"|\bi (?:cannot|can't|can not|am unable to|'m unable to) (?:help|assist) (?:you )?with "
                 r"(?:that|this|your request|such requests?)\b",
         decides=_ROLE,
         why="in the 2026-12-06 demo the 1.5B user's whole turn-3 message was 'I apologize, but I cannot help "
             "with that.', stored, judged (user helpfulness 5) and answered; an asker who cannot do a step "
             "says 'I can't do that, no sudo here', which no alternative matches"),
    Rule(id="role.ai_identity",
         pattern=r"\b(?:as an ai\b|as a (?:large )?language model|as an? (?:ai|virtual|digital|helpful) assistant|"
                 r"(?:i'm|i am) (?:just |only )?an? (?:ai\b|artificial intelligence|(?:large )?language model|"
                 r"ai assistant|virtual assistant|digital assistant|chatbot|text-based (?:ai|model|assistant)))",
         decides=_ROLE,
         why="the refusals of an instruction-tuned model come with its self-description ('As an AI, I cannot "
             "run commands'); an asker never says it (assistant.ai also makes the draft acts_as_agent and "
             "regenerated; what is sent with it is a role break too)"),
    Rule(id="action.reinstall_system",
         pattern=r"\bi(?:'ve| have| had)?(?: then| also| even| just| finally| completely| actually)* "
                 r"(?:tried |went ahead and |decided to )?(?:re-?install(?:ed|ing)|wip(?:ed|ing)|formatt?(?:ed|ing)|"
                 r"eras(?:ed|ing)) (?:the |my |a )?(?:(?:entire |whole |complete |fresh )*(?:system|os|operating "
                 r"system|ubuntu|windows|linux|debian|fedora|mint|distro|computer|machine|laptop|pc)|(?:entire |"
                 r"whole |main |system )*hard (?:drive|disk)|(?:entire |whole |main |system )+(?:drive|disk))\b"
                 r"(?!-|\s+(?:packages?|files?|settings|tray|librar|fonts?|clock|config|sounds?|updates?|python))"
                 r"|\bi(?:'ve| have)?(?: then| also| even| just| finally)* (?:did|done|performed|made) (?:a )?"
                 r"(?:fresh|clean|complete|full) (?:re-?)?install",
         decides=_ACTION,
         why="in the 2026-12-06 demo the 1.5B asker of ubuntu-irc-2008-07-14_18#1118 wrote on turn 3 'I ran "
             "`sudo dpkg-reconfigure -a` and it didn't work. I then tried reinstalling the entire system.'; "
             "reinstalling a package ('I reinstalled xserver-xorg', 'the system packages') or formatting a USB "
             "drive is a step and passes"),
    Rule(id="action.new_hardware",
         pattern=r"\bi(?:'ve| have)?(?: then| also| even| just| finally)* (?:went out and |went and )?"
                 r"(?:bought|purchased|ordered|got) (?:a |an |some )?(?:brand[- ])?new (?:laptop|computer|pc|"
                 r"machine|motherboard|graphics card|video card|gpu|hard drive|hard disk|ssd|router|modem|monitor|"
                 r"printer|power supply|psu|wifi card|wireless card|network card|card|adapter|dongle)\b"
                 r"|\bi(?:'ve| have)?(?: then| also| even| just)* (?:replaced|swapped(?: out)?) (?:the |my )"
                 r"(?:motherboard|graphics card|video card|gpu|hard drive|hard disk|ssd|power supply|psu|cpu|"
                 r"processor|laptop|computer)\b",
         decides=_ACTION,
         why="a bought part does not arrive, nor is a motherboard swapped, between two messages of a chat; "
             "a cable or a USB stick changed in a minute ('I plugged in another cable') passes"),
    Rule(id="action.waited_days",
         pattern=r"\b(?:waited|left it(?: running| alone| on)?|let it (?:run|sit)|gave it)(?: for)? (?:a (?:few |"
                 r"couple (?:of )?)?|one |two |three |four |five |several |\d+ )(?:days?|weeks?|months?|nights?)\b"
                 r"|\b(?:a|one|two|three|several|a few|a couple of) (?:days|weeks|months) later\b"
                 r"|\bthe (?:next|following) (?:day|morning|week)\b",
         decides=_ACTION,
         why="days do not pass between two messages of a help-desk chat; 'I waited a few minutes' or 'it "
             "started two days ago' passes"),
    Rule(id="action.repair_shop",
         pattern=r"\bi(?:'ve| have)?(?: then| also| even)* (?:took|brought|sent|returned) (?:it|the (?:laptop|"
                 r"computer|pc|machine|printer)|my (?:laptop|computer|pc|machine|printer)) (?:in )?(?:back )?"
                 r"(?:to|for) (?:a |the )?(?:repair|shop|store|technician|service|computer shop|geek squad)",
         decides=_ACTION,
         why="a trip to a repair shop does not fit between two chat messages"),
    Rule(id="action.earlier",
         pattern=r"\b(?:before (?:i (?:asked|came|posted|wrote|contacted)|asking|coming here|posting|writing)|"
                 r"(?:days?|weeks?|months?|years?) ago|last (?:night|week|month|year|time)|yesterday|previously|"
                 r"earlier (?:today|this week)|in the past|a while back|already)\b",
         decides="a sentence that places an impossible action before the conversation is the asker's history, "
                 "not a fault",
         why="'I already reinstalled Ubuntu twice before asking here' is something a real asker says"),
], limits=[
    Limit(id="loop.in_a_row", value=3,
          decides="the same user message (same words, case and punctuation aside) sent this many times in a "
                  "row is a verbatim repeat loop (repeats_loop -> repeat_loop), whatever its length; twice "
                  "is one when the agent sent its previous message again too (both sides loop)",
          why="in the trials (5 tasks x 4 trials) both sides repeated their previous message verbatim for "
              "turns 3-6 of cooperative runs; repeats_earlier reads only messages of 20 words or more, and a "
              "real asker says 'Still drops.' twice after two different steps"),
])
"""The simulator-fault rules (``harness.simuser.faults``): checked on the message sent, recorded
with the turn and flagged; the regenerations (``USER_CHECK_RULES``) do not read them."""

# everything the simulator-fault check reads (harness.simuser.faults): the regeneration checks, the
# fault rules above, and the fix-term rules that tell a message that only asks (unprompted_success)
FAULT_RULES = RuleSet.joined("simulator-fault-rules", [USER_CHECK_RULES, SIMULATOR_FAULTS, FIX_TERMS])
