"""The judge sanity sets: hand-written helpfulness and complexity pairs, the stability messages, and
the loaders of the shipped JSONL sets in ``harness/data/sanity`` (solved-check conversations, the
simulated user's outcome scenarios and persona scenarios, turn-helpfulness pairs). ``harness.selfscore.sanity`` judges them.
"""
from __future__ import annotations

import json
from pathlib import Path

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


def persona_cases() -> list[dict]:
    """The simulated user's persona scenarios: one per persona, the cooperative one included
    (``harness/simuser/personas.py``), each with the agent messages to play and the act expected
    on each turn (None: no deviation)."""
    return _load("personas.jsonl")


def fault_cases() -> list[dict]:
    """The simulator-fault rules' hand-written cases (``user_faults.jsonl``): a message, the
    conversation before it, the outcome it reports (None: none decided), a fault kind and
    whether the message has it (as many "no" as "yes" per kind)."""
    return _load("user_faults.jsonl")


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
