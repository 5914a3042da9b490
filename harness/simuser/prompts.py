"""The simulated user's prompts: its system prompt grounded in the real thread, the outcome
notes, the regeneration notes, and the Yes/No questions of its outcome and its facts check.

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
