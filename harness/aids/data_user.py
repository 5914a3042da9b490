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
])

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
