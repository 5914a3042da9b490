"""The simulated user's prompts: its system prompt grounded in the real thread, the outcome
notes, the regeneration notes, the Yes/No questions of its outcome and its facts check, and the
persona notes (``harness.simuser.personas``; never read by the cooperative user).

These texts are versioned by ``harness.selfscore.prompts.PROMPT_VERSION`` with every other
SelfScore prompt: change any text here and bump it there (every stored judgment, score and
simulated conversation records the version that produced it).
"""
from __future__ import annotations

# --- the simulated user grounded in the real thread (p6, docs/selfscore.md) ----------------
# The simulated user gets a hidden scenario: the true underlying problem, the fix that worked in
# the real thread, and the facts the real asker gave later. Whether the agent's instruction fixes
# the true cause is decided first, as a Yes/No question (USER_OUTCOME, token log-probabilities),
# then the reply is written under that outcome, so the user never declares success at random.
GROUNDED_USER_SYSTEM = (
    "You are role-playing a PERSON who asked a help desk for help. You are NOT the assistant and "
    "you do NOT know the solution or the cause of your problem.\n"
    "Your original question was:\n<question>\n{question}\n</question>\n"
    "Facts about your situation (tell one only when the agent asks for it, or when it is what you "
    "saw after doing what the agent said; never list them all):\n<facts>\n{facts}\n</facts>\n"
    "Rules:\n"
    "- The other side of this chat is the help-desk AGENT. Reply to the agent's last message as "
    "the person with the problem, in 1 to 3 short sentences, in the first person.\n"
    "- Never explain the cause, never suggest a fix, never write instructions or code, never act "
    "as the agent.\n"
    "- If the agent asks something your facts do not answer, say that you do not know or give a "
    "short plain answer that does not contradict your facts. Never make up version numbers."
)
USER_FIXED = ("(Note for your reply, not part of the agent's message: you did what the agent said "
              "and it solved your problem. Say in one or two sentences what you did and that it "
              "works now.)")
USER_NOT_FIXED = ("(Note for your reply, not part of the agent's message: your problem is NOT "
                  "solved. If the agent asked you something, answer it from your facts. If the "
                  "agent told you to do something, say that you did it and that the problem is "
                  "still there. Never say that it works. Do not repeat your question or an "
                  "earlier message: say only what is new.)")
USER_REJECTED = {  # why a draft was not used, told to the model when it writes the message again
    "acts_as_agent": "it spoke like the help desk; write only as the person with the problem",
    "leaks_solution": "it named the cause or the fix, which you do not know",
    "contradicts_facts": "it contradicted the facts of your situation",
    "invents_detail": "it named a version that your facts do not give; if asked, say you do not know it",
    "false_success": "it said the problem is solved, but it is not",
    "missed_success": "it did not say that the problem is solved now",
    "repeats_earlier": "it repeated an earlier message; answer the agent's last message in your own words",
    "echoes_agent": "it copied the agent's message; say in your own words what you did and what you see now",
    "copies_instructions": "it copied the note instead of replying; reply to the agent in your own words",
    "breaks_role": "it refused or spoke as an AI assistant; you are the person with the problem, reply as that person",
}
USER_REGENERATION = "(Your last draft was not used: {why}.)"
USER_OUTCOME = """The user's real problem (the agent does not know it): <problem>{problem}</problem>
{solution_block}The AGENT's latest message:
<latest>
{agent}
</latest>
Question: does the agent's latest message tell the user to do something that fixes this real problem (the same fix, or another fix for the same cause)? A question, a fix for a different cause, or general text is No. Answer Yes or No."""
USER_OUTCOME_SOLUTION = "The fix that solved it in the real thread: <solution>{solution}</solution>\n"
USER_CONTRADICTS = """Facts about the user's situation: <facts>{facts}</facts>
Question: does the latest USER message state something that contradicts these facts? Answer Yes or No."""

# --- personas (harness/simuser/personas.py; since selfscore-p12) --------------------------------
# A persona other than `cooperative` writes some replies under one of these notes instead of
# USER_FIXED / USER_NOT_FIXED: the schedule in personas.py decides, in code, on which turn and
# which one; the model only writes the text. A cooperative user never reads any of them (its
# prompts are p10's, byte for byte). Every note keeps the grounding rules: none of them lets the
# reply say that it works.
USER_VAGUE_WITHHOLDS = (
    "(Note for your reply, not part of the agent's message: your problem is NOT solved. You are a "
    "person who gives little detail, and you do not know the details the agent asks for right now: "
    "answer vaguely, in one short sentence, without naming any product, model or version, for "
    "example \"I'm not sure, it just doesn't work.\" Never say that it works.)")
USER_VAGUE_TELLS = (
    "(Note for your reply, not part of the agent's message: your problem is NOT solved. The agent "
    "has asked again, so this time answer its question plainly from your facts (if your facts do "
    "not answer it, say that you do not know). Never say that it works.)")
USER_VAGUE_LITTLE_DETAIL = (
    "(Note for your reply, not part of the agent's message: your problem is NOT solved. You are a "
    "person who gives little detail: say in a few plain words that you did it and that it still "
    "does not work, without describing what you saw. Never say that it works.)")
# the facts block of the system prompt on a vague user's withholds and little_detail turns: the
# 1.5B told the fact it was asked for in every draft while the facts were in its prompt
USER_FACTS_WITHHELD = "- (you do not remember any details of your situation right now)"
USER_IMPATIENT_STYLE = ("(You are impatient and in a hurry: reply as the person with the problem in one short "
                        "sentence, for example \"Did that, still broken.\")")
USER_IMPATIENT_HUMAN = (
    "(Note for your reply, not part of the agent's message: your problem is NOT solved and you "
    "have run out of patience. Write one or two short sentences as the person with the problem: "
    "say that it still does not work and ask to talk to a human, for example \"Still broken. Can I "
    "talk to a human?\" Never say that it works.)")
USER_MISTAKEN_DONE = (
    "(Note for your reply, not part of the agent's message: you believe you already did exactly "
    "this before you asked for help (you are wrong: you never did it), so you do not do it now. "
    "Write one or two sentences as the person with the problem, in the first person, for example "
    "\"I already did that before I asked, and it is still there.\" Never say that it works.)")
USER_TANGENT = (
    "(Note for your reply, not part of the agent's message: your problem is NOT solved. If the "
    "agent asked you something, answer it from your facts; if the agent told you to do something, "
    "say that you did it and that the problem is still there. Then add one short question about "
    "something unrelated: {topic}. Never say that it works.)")
# the unrelated matters a tangential user brings up (personas.py picks one per interaction, not
# one the task is about); none names a product version, which the checks would take for an
# invented detail of the scenario
TANGENT_TOPICS = {
    "wallpaper": "how to change the picture on your desktop background",
    "pointer": "how to make the mouse pointer bigger",
    "out_of_office": "how to set an automatic out-of-office reply for your email",
    "battery": "whether your laptop battery is harmed when it stays plugged in all day",
    "double_sided": "how to print on both sides of the paper",
}
USER_PERSONA_REJECTED = {  # why a draft was not used: it did not do the persona's act of the turn
    "withholds": "it named a detail; answer vaguely, without any name, model or version",
    "asks_for_human": "it did not ask to talk to a human",
    "claims_done": "it did not say that you had already tried that before",
    "tangent": "it did not add the short unrelated question ({topic})",
}
