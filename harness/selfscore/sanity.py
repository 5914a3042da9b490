"""Judge sanity check: can the configured judge tell a clearly helpful reply from a useless one,
an easy problem from a hard one, a solved conversation from an unsolved one, and can the simulated
user tell a fix of its true problem from a reply that is not one?

Hand-written pairs (not from any dataset): each has a user question, a clearly helpful agent
reply and a clearly useless one (vague, off-topic or refusing). The judge passes a pair when it
scores the helpful reply strictly higher. Complexity pairs hold an easy and a hard problem;
the judge passes when the hard one gets the higher weighted complexity. A judge that fails
these makes every SelfScore figure meaningless, so the demo prints this report.

The solved-check set (``data/sanity/solved_check.jsonl``, 26 conversations) and the simulated
user's outcome set (``data/sanity/user_outcome.jsonl``, 22 scenarios) are half yes and half no,
so a judge that always says "solved" or a user that always says "it works" gets half of them
wrong; both are reported per class.

The turn-helpfulness set (``data/sanity/turn_helpfulness.jsonl``, 15 pairs) judges a message deep
in a conversation: an agent's next step against a repeat of its last message or "contact the
system administrator", a user's report of what a step did against "ok" or an off-topic rant, a
detailed first question against a vague one. Each pair passes when the helpful version scores
strictly higher, so a judge that gives every message the same score fails them all.

The stability set (:data:`STABILITY_CASES`, 4 messages) judges the same message several times at
once, at temperature 0, and reports the spread of the judge's own scores. The pair sets judge each
message once and cannot see a judge that is unstable: under a layout tried for ``selfscore-p11``
"Try closing some tabs and see if it helps." scored 8, 1, 1, 1, 1, 8, 1 and passed every pair
set. A constant judge is stable and fails the pair sets, so the two are read together.
"""
from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from graphs.protocols import Message, Problem
from harness.selfscore import prompts
from harness.selfscore.judges import SelfScoreJudges, StructuredJudge, judge_complexity
from harness.selfscore.scoring import weighted_complexity

SANITY_DIR = Path(__file__).resolve().parent.parent / "data" / "sanity"


def _load(name: str) -> list[dict]:
    return [json.loads(line) for line in (SANITY_DIR / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def solved_cases() -> list[dict]:
    """The solved-check sanity conversations (half solved)."""
    return _load("solved_check.jsonl")


def outcome_cases() -> list[dict]:
    """The simulated user's outcome scenarios (half fixes)."""
    return _load("user_outcome.jsonl")


def turn_helpfulness_cases() -> list[dict]:
    """The helpfulness pairs inside conversations (agent and user messages)."""
    return _load("turn_helpfulness.jsonl")


def turn_case_group(case: dict) -> str:
    """The rubric a turn-helpfulness case tests: ``agent``, ``user`` (a later reply) or ``first``."""
    return "first" if case["first"] else case["role"]


TURN_GROUPS = (("agent", "agent replies later in a conversation"), ("user", "user replies"),
               ("first", "first questions"))


def balanced(cases: list[dict], n: int | None, key: str) -> list[dict]:
    """The first ``n`` cases, alternating between the yes and the no class (all when None)."""
    if n is None:
        return cases
    yes, no = [c for c in cases if c[key]], [c for c in cases if not c[key]]
    out = [c for pair in zip(yes, no) for c in pair]
    return out[:n]

HELPFULNESS_PAIRS: list[tuple[str, str, str]] = [
    ("My Ubuntu laptop says 'No space left on device' when I save files. How do I find what is filling the disk?",
     "Run `sudo du -xh / --max-depth=1 | sort -h` to see which top-level folders are largest, then descend into the biggest one the same way. Common culprits are /var/log and old snap revisions; `sudo journalctl --vacuum-size=200M` shrinks the system journal.",
     "Computers have limited storage. Storage is measured in gigabytes. Have a nice day."),
    ("Git says 'Your branch is ahead of origin/main by 3 commits'. How do I undo those 3 local commits but keep my changes?",
     "Run `git reset --soft HEAD~3`. That moves your branch back three commits while keeping all their changes staged, so you can recommit them however you like.",
     "Git is a version control system created by Linus Torvalds in 2005. Many people use it."),
    ("In Excel, how can I remove duplicate rows from a list of email addresses?",
     "Select the column, open the Data tab and click Remove Duplicates. Keep 'My data has headers' ticked if the first row is a header, then click OK; Excel tells you how many duplicates it removed.",
     "I cannot help with that."),
    ("My Windows 10 PC shows 'DNS server not responding' but my phone works on the same wifi.",
     "Open Command Prompt as administrator and run `ipconfig /flushdns`, then `netsh winsock reset`, and restart. If it persists, set the adapter's DNS manually to 1.1.1.1 and 8.8.8.8 in the adapter's IPv4 properties.",
     "Phones and computers are different devices. Maybe try using your phone instead."),
    ("How do I make a Python script run every day at 7am on my Linux server?",
     "Run `crontab -e` and add the line `0 7 * * * /usr/bin/python3 /home/you/script.py >> /home/you/script.log 2>&1`. Use absolute paths; cron has a minimal environment.",
     "Python is a popular programming language. You might enjoy learning JavaScript too."),
    ("My SSH login to a server fails with 'Permission denied (publickey)'.",
     "Check that your public key is in ~/.ssh/authorized_keys on the server, and that ~/.ssh is mode 700 and authorized_keys mode 600. Then connect with `ssh -v user@host` to see which key the client offers and why it is refused.",
     "Try again later, maybe it will work."),
    ("Chrome is very slow on my Mac and uses a lot of memory. What can I do?",
     "Open Chrome's Task Manager (Window > Task Manager), sort by Memory and end the heaviest tabs or extensions. Then disable extensions you do not need at chrome://extensions and restart Chrome.",
     "Macs are made by Apple. Apple was founded in 1976."),
    ("How do I find which process is using port 8080 on Linux?",
     "Run `sudo ss -ltnp 'sport = :8080'` (or `sudo lsof -i :8080`). The output shows the PID and program name; stop it with `kill PID` if it should not be running.",
     "Ports are numbers. There are 65535 of them."),
    ("My external USB drive is not showing up in Windows File Explorer.",
     "Open Disk Management (right-click Start > Disk Management). If the drive is listed without a letter, right-click its partition and choose Change Drive Letter and Paths > Add. If it shows as Unallocated, it needs a new partition.",
     "Please describe your feelings about USB drives."),
    ("How can I recover a Word document I closed without saving?",
     "In Word open File > Info > Manage Document > Recover Unsaved Documents. It opens the UnsavedFiles folder where Word keeps autosaved drafts; open the latest one and save it.",
     "Next time, remember to save your work."),
    ("My printer prints blank pages even though it has ink.",
     "Run the printer's head-cleaning utility from its maintenance menu two or three times, then print a nozzle check page. If lines are still missing, remove and reseat the cartridges and check that the protective tape was removed.",
     "Printers are annoying. Many offices are going paperless these days."),
    ("How do I change the default shell to zsh on Ubuntu?",
     "Install it with `sudo apt install zsh`, then run `chsh -s $(which zsh)` and log out and back in. Check with `echo $SHELL`.",
     "There are many shells, like bash, fish and zsh. They all have fans."),
]

COMPLEXITY_PAIRS: list[tuple[str, str]] = [
    ("The user wants to change their desktop wallpaper.",
     "The user's RAID 5 array lost two disks after a power failure and they need to recover the data without making it worse."),
    ("The user wants to know how to copy text with a keyboard shortcut.",
     "The user's Linux kernel panics at boot after a custom kernel build with a modified device tree on an embedded ARM board."),
    ("The user asks how to make text bold in Microsoft Word.",
     "The user's PostgreSQL primary and replica diverged after a failover and they must reconcile the data without losing committed transactions."),
    ("The user wants to turn up the volume on their laptop.",
     "The user's corporate Active Directory domain controllers stopped replicating and users cannot log in across sites."),
    ("The user asks how to open a new tab in their web browser.",
     "The user's encrypted LVM volume will not unlock after a failed distribution upgrade, and the initramfs lacks the crypt modules."),
    ("The user wants to rename a file on their desktop.",
     "The user's production Kubernetes cluster has pods evicted under memory pressure and etcd reports leader election timeouts."),
    # everyday troubleshooting against a how-to, and against expert recovery work: a judge that
    # rates every real troubleshooting problem 1/1/1 ("straightforward") ties the first two, and
    # one that rates every fault alike ties the third
    ("The user asks how to take a screenshot.",
     "The user's laptop stopped connecting to Wi-Fi after a kernel update, while other devices on the same network connect fine."),
    ("The user wants to change the keyboard layout to German.",
     "After installing a newer Ubuntu release next to the old one, the GRUB menu lists only the old release, so the new one cannot be started."),
    ("The user's sound stopped working after an update.",
     "The user's Btrfs root filesystem turned read-only with checksum errors, and they must copy their data off before the failing disk dies."),
]


# Messages judged STABILITY_REPEATS times each: (id, conversation as (role, text), the last one judged).
# Two borderline agent replies (the adversarial suite's clean twins; the first is where p11's
# layout flipped between 8 and 1), a clearly useless one, and a plain "still there" report.
STABILITY_CASES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("agent-close-tabs", (("user", "Chrome on my Mac uses 8 GB of memory and the whole system slows down."),
                          ("agent", "Try closing some tabs and see if it helps."))),
    ("agent-git-pull", (("user", "Git refuses to push: 'Updates were rejected because the remote contains "
                                 "work that you do not have locally'."),
                        ("agent", "You need to get the remote changes first, for example with git pull, and "
                                  "then push again."))),
    ("agent-useless", (("user", "My laptop's wifi keeps disconnecting every few minutes on Ubuntu 22.04."),
                       ("agent", "Computers can be tricky sometimes. Technology is always changing."))),
    ("user-still-there", (("user", "I can't log in to my account since the update, it says my password is wrong."),
                          ("agent", "Boot into recovery mode, open a root shell and run passwd with your user "
                                    "name to set a new password, then reboot."),
                          ("user", "I tried logging in again and the issue is still there."))),
)
STABILITY_REPEATS = 5


def complexity_pairs_for(helpful_pairs: int) -> int:
    """How many complexity pairs go with ``helpful_pairs`` helpfulness pairs: all of them with
    the whole helpfulness set, else half as many (at least one)."""
    return len(COMPLEXITY_PAIRS) if helpful_pairs >= len(HELPFULNESS_PAIRS) else max(1, helpful_pairs // 2)


@dataclass
class Verdict:
    """One yes/no sanity case: what was expected, what came back (None: failed), and details."""

    id: str
    expected: bool
    got: bool | None
    detail: str = ""

    @property
    def right(self) -> bool:
        return self.got is not None and self.got == self.expected


def class_counts(cases: list[Verdict]) -> tuple[int, int, int, int]:
    """(right on yes, yes cases, right on no, no cases)."""
    yes = [c for c in cases if c.expected]
    no = [c for c in cases if not c.expected]
    return sum(c.right for c in yes), len(yes), sum(c.right for c in no), len(no)


@dataclass
class TurnPair:
    """One turn-helpfulness case: the scores of its helpful and its useless version, and the
    judge's own scores before the rubric bounds (``harness.selfscore.helpfulness_bounds``)."""

    id: str
    group: str
    helpful: int | None
    useless: int | None
    judge_helpful: int | None = None
    judge_useless: int | None = None

    @property
    def right(self) -> bool:
        return self.helpful is not None and self.useless is not None and self.helpful > self.useless

    @property
    def judge_right(self) -> bool:
        return (self.judge_helpful is not None and self.judge_useless is not None
                and self.judge_helpful > self.judge_useless)


@dataclass
class StabilityCase:
    """One message judged several times: the judge's own scores (None: a failed judgment)."""

    id: str
    scores: list[int | None]

    @property
    def spread(self) -> int | None:
        """Highest minus lowest valid score (None when fewer than two are valid)."""
        valid = [v for v in self.scores if v is not None]
        return max(valid) - min(valid) if len(valid) > 1 else None


@dataclass
class SanityReport:
    helpful_pairs: list[tuple[int | None, int | None]]
    complexity_pairs: list[tuple[float | None, float | None]]
    judge_model: str
    solved: list[Verdict] = field(default_factory=list)
    outcome: list[Verdict] = field(default_factory=list)
    replies: list[Verdict] = field(default_factory=list)
    solved_method: str = "confirmation"
    user_model: str = ""
    turn_pairs: list[TurnPair] = field(default_factory=list)
    stability: list[StabilityCase] = field(default_factory=list)

    @property
    def largest_spread(self) -> int | None:
        spreads = [c.spread for c in self.stability if c.spread is not None]
        return max(spreads) if spreads else None

    @property
    def helpful_correct(self) -> int:
        return sum(1 for good, bad in self.helpful_pairs if good is not None and bad is not None and good > bad)

    @property
    def complexity_correct(self) -> int:
        return sum(1 for easy, hard in self.complexity_pairs
                   if easy is not None and hard is not None and hard > easy)

    @property
    def failed(self) -> int:
        return sum(v is None for pair in [*self.helpful_pairs, *self.complexity_pairs] for v in pair) + \
            sum(c.got is None for c in [*self.solved, *self.outcome, *self.replies]) + \
            sum(v is None for t in self.turn_pairs for v in (t.helpful, t.useless)) + \
            sum(v is None for c in self.stability for v in c.scores)

    def lines(self) -> list[str]:
        out = [f"Judge sanity ({self.judge_model}, prompt {prompts.PROMPT_VERSION}): helpful reply "
               f"scored higher in {self.helpful_correct}/{len(self.helpful_pairs)} pairs; harder "
               f"problem rated more complex in {self.complexity_correct}/{len(self.complexity_pairs)} pairs"
               + (f"; {self.failed} judgments failed" if self.failed else "") + "."]
        if self.turn_pairs:
            groups = self._turn_groups()
            out.append("Helpfulness in conversations: helpful version scored higher for " + "; ".join(
                f"{sum(t.right for t in group)}/{len(group)} {label}" for label, group in groups)
                + " (the judge's own scores, before the rubric bounds: " + ", ".join(
                f"{sum(t.judge_right for t in group)}/{len(group)}" for _, group in groups) + ").")
        if self.stability:
            repeats = max(len(c.scores) for c in self.stability)
            out.append(f"Judge stability: {len(self.stability)} messages judged {repeats} times each at once, "
                       "score spread (highest - lowest, the judge's own scores) " + ", ".join(
                           f"{'failed' if c.spread is None else c.spread} ({c.id})" for c in self.stability)
                       + f"; largest {self.largest_spread}.")
        if self.solved:
            ys, yn, ns, nn = class_counts(self.solved)
            out.append(f"Solved-check ({self.solved_method}): right on {ys}/{yn} solved and {ns}/{nn} "
                       f"unsolved conversations.")
        if self.outcome:
            ys, yn, ns, nn = class_counts(self.outcome)
            out.append(f"Simulated user ({self.user_model}): outcome right on {ys}/{yn} fixes and "
                       f"{ns}/{nn} non-fixes" + (self._reply_line() if self.replies else "") + ".")
        for i, (good, bad) in enumerate(self.helpful_pairs):
            out.append(f"  helpfulness pair {i + 1}: helpful {good} vs useless {bad}"
                       + ("" if good is not None and bad is not None and good > bad else "  <-- wrong order"))
        for i, (easy, hard) in enumerate(self.complexity_pairs):
            out.append(f"  complexity pair {i + 1}: easy {_fmt(easy)} vs hard {_fmt(hard)}"
                       + ("" if easy is not None and hard is not None and hard > easy else "  <-- wrong order"))
        for t in self.turn_pairs:
            own = "" if (t.judge_helpful, t.judge_useless) == (t.helpful, t.useless) else \
                f" (judge {t.judge_helpful} vs {t.judge_useless})"
            out.append(f"  {t.group} turn pair {t.id}: helpful {t.helpful} vs useless {t.useless}{own}"
                       + ("" if t.right else "  <-- wrong order"))
        for c in self.stability:
            out.append(f"  stability {c.id}: " + " ".join("failed" if v is None else str(v) for v in c.scores))
        for label, cases in (("solved-check", self.solved), ("user outcome", self.outcome),
                             ("user reply", self.replies)):
            for c in cases:
                got = "failed" if c.got is None else ("yes" if c.got else "no")
                out.append(f"  {label} {c.id}: expected {'yes' if c.expected else 'no'}, got {got}"
                           f"{'  (' + c.detail + ')' if c.detail else ''}" + ("" if c.right else "  <-- wrong"))
        return out

    def _turn_groups(self) -> list[tuple[str, list[TurnPair]]]:
        groups = [(label, [t for t in self.turn_pairs if t.group == key]) for key, label in TURN_GROUPS]
        return [(label, group) for label, group in groups if group]

    def _reply_line(self) -> str:
        ys, yn, ns, nn = class_counts(self.replies)
        return f"; its reply reports success on {ys}/{yn} fixes and persists on {ns}/{nn} non-fixes"


def _fmt(value: float | None) -> str:
    return "failed" if value is None else f"{value:.1f}"


def _solved_problem(case: dict) -> tuple[Problem, list[Message]]:
    history = [Message(m["role"], m["content"]) for m in case["conversation"]]
    return Problem(f"sanity:{case['id']}", history[0].content, None, case["problem"]), history


def _outcome_problem(case: dict) -> tuple[Problem, list[Message]]:
    problem = Problem(f"sanity:{case['id']}", case["question"], None, case["problem"],
                      solution=case["solution"], problem_source="solution", facts=tuple(case["facts"]))
    return problem, [Message("user", case["question"]), Message("agent", case["agent"])]


async def run_sanity(judge: StructuredJudge, complexity_judge: StructuredJudge,
                     helpful_pairs: int | None = None, complexity_pairs: int | None = None,
                     concurrency: int = 4, solved: int | None = 0, outcome: int | None = 0,
                     judges: SelfScoreJudges | None = None, user=None,
                     replies: bool = True, turns: int | None = 0, stability: int | None = 0,
                     on_progress: Callable[[int, int], None] | None = None) -> SanityReport:
    """Judge the first ``helpful_pairs`` / ``complexity_pairs`` pairs (all by default), and
    ``solved`` solved-check conversations and ``outcome`` simulated-user scenarios (balanced
    between yes and no; None = all, 0 = none), the first ``turns`` turn-helpfulness pairs and the
    first ``stability`` stability messages, each :data:`STABILITY_REPEATS` times (None = all,
    0 = none).

    Args:
        judges: the turn judges whose solved-check is tested (default: on ``judge``).
        user: a ``harness.selfscore.participants.SimulatedUser`` for the outcome cases (needed when
            ``outcome`` is not 0); with ``replies`` its whole reply is generated and checked too.
        on_progress: ``(cases judged, cases)`` as each judgment (or outcome scenario) comes back.
    """
    from harness.selfscore.user_checks import claims_success

    judges = judges or SelfScoreJudges(judge)
    semaphore = asyncio.Semaphore(concurrency)

    async def helpfulness(question: str, reply: str) -> int | None:
        async with semaphore:
            j = await judges.agent_helpfulness(
                Problem("sanity", question, None, None), [Message("user", question), Message("agent", reply)])
        return j.value if j.ok else None

    async def turn_score(case: dict, text: str) -> tuple[int | None, int | None]:
        history = [Message(m["role"], m["content"]) for m in case["conversation"]] + [Message(case["role"], text)]
        problem = Problem(f"sanity:{case['id']}", history[0].content, None, None)
        async with semaphore:
            if case["role"] == "agent":
                j = await judges.agent_helpfulness(problem, history)
            else:
                j = await judges.user_helpfulness(problem, history, first_turn=case["first"])
        if not j.ok:
            return None, None
        return j.value, ((j.parsed or {}).get("bounds") or {}).get("judge_score", j.value)

    async def stability_score(messages: tuple[tuple[str, str], ...]) -> int | None:
        """The judge's own score (before the rubric bounds) of the conversation's last message."""
        *earlier, (role, text) = messages
        case = {"id": "stability", "role": role, "first": not earlier,
                "conversation": [{"role": r, "content": t} for r, t in earlier]}
        return (await turn_score(case, text))[1]

    async def complexity(summary: str) -> float | None:
        async with semaphore:
            j = await judge_complexity(complexity_judge, summary)
        if not j.ok:
            return None
        v = j.value
        return weighted_complexity(v["critical_thinking"], v["error_handling"], v["topic_knowledge"])

    async def solved_case(case: dict) -> Verdict:
        problem, history = _solved_problem(case)
        async with semaphore:
            j = await judges.solved(problem, history)
        return Verdict(case["id"], case["solved"], j.value if j.ok else None, j.reason or j.error or "")

    async def outcome_case(case: dict) -> tuple[Verdict, Verdict | None]:
        problem, history = _outcome_problem(case)
        async with semaphore:
            try:
                reply = await user.respond(problem, history, 2)
            except Exception as exc:  # a failed call is a failed case, reported
                return Verdict(case["id"], case["fixed"], None, str(exc)[:80]), None
        sim = reply.extra["simulator"]
        decided = Verdict(case["id"], case["fixed"], sim["outcome"] == "fixed", f"P(fix)={sim['p_fix']:.2f}")
        said = Verdict(case["id"], case["fixed"], claims_success(reply.text or ""), (reply.text or "")[:90])
        return decided, said

    hp = HELPFULNESS_PAIRS[:helpful_pairs] if helpful_pairs is not None else HELPFULNESS_PAIRS
    cp = COMPLEXITY_PAIRS[:complexity_pairs] if complexity_pairs is not None else COMPLEXITY_PAIRS
    sc = balanced(solved_cases(), solved, "solved") if solved != 0 else []
    oc = balanced(outcome_cases(), outcome, "fixed") if outcome != 0 and user is not None else []
    tc = turn_helpfulness_cases()[:turns] if turns != 0 else []
    st = STABILITY_CASES[:stability] if stability != 0 else ()
    total, done = 2 * len(hp) + 2 * len(cp) + len(sc) + len(oc) + 2 * len(tc) + STABILITY_REPEATS * len(st), 0

    async def counted(job):
        nonlocal done
        result = await job
        done += 1
        if on_progress:
            on_progress(done, total)
        return result

    if on_progress:
        on_progress(0, total)
    scores = await asyncio.gather(*(counted(helpfulness(q, r)) for q, good, bad in hp for r in (good, bad)),
                                  *(counted(complexity(s)) for pair in cp for s in pair))
    h, c = scores[: 2 * len(hp)], scores[2 * len(hp):]
    t = await asyncio.gather(*(counted(turn_score(x, x[v])) for x in tc for v in ("helpful", "useless")))
    turn_pairs = [TurnPair(x["id"], turn_case_group(x), good[0], bad[0], good[1], bad[1])
                  for x, good, bad in zip(tc, t[0::2], t[1::2])]
    repeated = await asyncio.gather(*(counted(stability_score(messages)) for _, messages in st
                                      for _ in range(STABILITY_REPEATS)))
    stable = [StabilityCase(case_id, list(repeated[k * STABILITY_REPEATS:(k + 1) * STABILITY_REPEATS]))
              for k, (case_id, _) in enumerate(st)]
    solved_verdicts = list(await asyncio.gather(*(counted(solved_case(x)) for x in sc)))
    outcomes = list(await asyncio.gather(*(counted(outcome_case(x)) for x in oc)))
    return SanityReport(list(zip(h[0::2], h[1::2])), list(zip(c[0::2], c[1::2])), judge.client.model_name,
                        solved=solved_verdicts, outcome=[d for d, _ in outcomes],
                        replies=[r for _, r in outcomes if r is not None] if replies else [],
                        solved_method=judges.solved_method,
                        user_model=user.client.model_name if user is not None else "",
                        turn_pairs=turn_pairs, stability=stable)
