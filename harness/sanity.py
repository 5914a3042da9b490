"""Judge sanity check: can the configured judge tell a clearly helpful reply from a useless one?

Hand-written pairs (not from any dataset): each has a user question, a clearly helpful agent
reply and a clearly useless one (vague, off-topic or refusing). The judge passes a pair when it
scores the helpful reply strictly higher. Complexity pairs hold an easy and a hard problem;
the judge passes when the hard one gets the higher weighted complexity. A judge that fails
these makes every SelfScore figure meaningless, so the demo prints this report.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass

from graphs.protocols import Message, Problem
from harness.judges import SelfScoreJudges, StructuredJudge, judge_complexity
from harness.scoring import weighted_complexity

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
]


@dataclass
class SanityReport:
    helpful_pairs: list[tuple[int | None, int | None]]
    complexity_pairs: list[tuple[float | None, float | None]]
    judge_model: str

    @property
    def helpful_correct(self) -> int:
        return sum(1 for good, bad in self.helpful_pairs if good is not None and bad is not None and good > bad)

    @property
    def complexity_correct(self) -> int:
        return sum(1 for easy, hard in self.complexity_pairs
                   if easy is not None and hard is not None and hard > easy)

    @property
    def failed(self) -> int:
        return sum(v is None for pair in [*self.helpful_pairs, *self.complexity_pairs] for v in pair)

    def lines(self) -> list[str]:
        out = [f"Judge sanity ({self.judge_model}): helpful reply scored higher in "
               f"{self.helpful_correct}/{len(self.helpful_pairs)} pairs; harder problem rated more "
               f"complex in {self.complexity_correct}/{len(self.complexity_pairs)} pairs"
               + (f"; {self.failed} judgments failed" if self.failed else "") + "."]
        for i, (good, bad) in enumerate(self.helpful_pairs):
            out.append(f"  helpfulness pair {i + 1}: helpful {good} vs useless {bad}"
                       + ("" if good is not None and bad is not None and good > bad else "  <-- wrong order"))
        for i, (easy, hard) in enumerate(self.complexity_pairs):
            out.append(f"  complexity pair {i + 1}: easy {_fmt(easy)} vs hard {_fmt(hard)}"
                       + ("" if easy is not None and hard is not None and hard > easy else "  <-- wrong order"))
        return out


def _fmt(value: float | None) -> str:
    return "failed" if value is None else f"{value:.1f}"


async def run_sanity(judge: StructuredJudge, complexity_judge: StructuredJudge,
                     helpful_pairs: int | None = None, complexity_pairs: int | None = None,
                     concurrency: int = 4) -> SanityReport:
    """Judge the first ``helpful_pairs`` / ``complexity_pairs`` pairs (all by default)."""
    judges = SelfScoreJudges(judge)
    semaphore = asyncio.Semaphore(concurrency)

    async def helpfulness(question: str, reply: str) -> int | None:
        async with semaphore:
            j = await judges.agent_helpfulness(
                Problem("sanity", question, None, None), [Message("user", question), Message("agent", reply)])
        return j.value if j.ok else None

    async def complexity(summary: str) -> float | None:
        async with semaphore:
            j = await judge_complexity(complexity_judge, summary)
        if not j.ok:
            return None
        v = j.value
        return weighted_complexity(v["critical_thinking"], v["error_handling"], v["topic_knowledge"])

    hp = HELPFULNESS_PAIRS[:helpful_pairs] if helpful_pairs is not None else HELPFULNESS_PAIRS
    cp = COMPLEXITY_PAIRS[:complexity_pairs] if complexity_pairs is not None else COMPLEXITY_PAIRS
    scores = await asyncio.gather(*(helpfulness(q, r) for q, good, bad in hp for r in (good, bad)),
                                  *(complexity(s) for pair in cp for s in pair))
    h, c = scores[: 2 * len(hp)], scores[2 * len(hp):]
    return SanityReport(list(zip(h[0::2], h[1::2])), list(zip(c[0::2], c[1::2])), judge.client.model_name)
