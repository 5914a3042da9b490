"""Builds heldout.jsonl, the fresh held-out part of the human-labelled agreement set (issue 43).

Every row is a real #ubuntu IRC thread (``../ubuntu_irc/ubuntu_irc_test_threads.jsonl``, CC BY 4.0)
whose ``solved`` label is the asker's own verdict in the thread (``labelled_by: people``): the asker
says it worked, that they got it, or accepts the answer in their own words (solved), or says it did
not work, gives up, goes elsewhere or is still asking at the end (not solved). The verdicts, the
quotes they rest on, the one-sentence ``problem`` and (for solved threads) the ``solution`` are the
hand-written table below (:data:`VERDICTS`); the turns are the thread's messages, rebuilt with the
agreement set's merge rule (``build_labelled.thread_turns``), so the same input gives the same bytes.

A thread may be used only if it is in none of: labelled.jsonl, troubleshooting.jsonl and its review,
the sanity sets (by thread id or a question within the overlap limit), and no file of the repository
names its thread id (``build_labelled.held_out_references`` and :func:`named_threads`).

Run from the repository root: ``.venv/bin/python harness/data/agreement/build_heldout.py`` writes the
file and prints its counts and sha256; ``--check`` only checks that the file is what this script
builds (exit status 1 if not). The file is frozen: its sha256 is recorded in SOURCE.md and
docs/selfscore.md and a test compares them; do not rebuild it after figures were read on it.
"""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from build_labelled import (LABELLED, OVERLAP_LIMIT, ROOT, THREADS, held_out_references,  # noqa: E402
                            normal, overlap, read_jsonl, thread_turns)

HELDOUT = HERE / "heldout.jsonl"
KIND = "irc_asker_verdict"
LICENCE = "CC BY 4.0 (#ubuntu logs via jkkummerfeld/irc-disentanglement)"
THREAD_ID = re.compile(r"\d{4}-\d{2}-\d{2}_\d{2}#\d+")

#: thread id -> (solved, the asker's words the verdict rests on and how, problem, solution or None)
VERDICTS: dict[str, tuple[bool, str, str, str | None]] = {
    "2005-07-06_14#1291": (True, "After the explanation the asker says 'ok, thanks. got it.'",
        "`sudo echo fglrx >> /etc/modules` fails with permission denied, because the redirection runs as the user, not as root.",
        "Run it from a root shell (`sudo -s` or `sudo su -`, then `echo fglrx >> /etc/modules`): with sudo in front only echo runs as root, the redirection does not."),
    "2008-07-14_18#1088": (True, "'Seveas - thanks a load, that worked!'",
        "Two monitors of different resolutions (1280x1024 and 1440x900) show one cloned desktop instead of two different screens.",
        "Configure the two screens in xorg.conf (compiz is lost); the Screen Resolution dialog cannot do it for monitors of different sizes."),
    "2014-06-18_13#1001": (True, "'Great histo, thank you so much !!' after the multi-pattern commands.",
        "Move every line of file1 that contains any of 24 strings to a new file2 and delete those lines from file1.",
        "One grep and one sed with several -e patterns: `grep -e pattern1 -e pattern2 file1 > file2 ; sed -i -e 's/pattern1//g' -e 's/pattern2//g' file1` (back up the file first)."),
    "2015-03-18_05#1478": (True, "'AWESOME!! :D', 'thanks k1l_ :)' after the text-mode factoid.",
        "Boot Ubuntu 14.10 straight to a text console without starting the graphical interface.",
        "Append `text` to the kernel line in the GRUB menu (Shift or Esc during boot to reach it)."),
    "2016-02-22_17#1158": (True, "'YESSSS IT BOOTED', 'thank you, you have been a great help'.",
        "Remove the EFI (boot) flag from an existing partition without wiping its data, so the Windows disk stops taking the boot.",
        "`sudo cgdisk /dev/sdX` and change the partition's type; the data stays."),
    "2016-06-08_07#1250": (True, "The asker tests the port as suggested and ends 'closed, thanks lyze :)'.",
        "A port that wesnoth (no longer installed) listens on worries the asker: is the machine open to the internet?",
        "Behind the router's firewall a listening local port is not reachable unless the router forwards it; test the port from outside with an open-port checker."),
    "2010-08-17_18#1302": (True, "'thanks for the info, the new version is being installed'.",
        "The updates offer a kernel with the same version that `uname -r` shows as installed (2.6.31-22-generic).",
        "Kernel packages have a further version number that `uname -r` does not show; `dpkg -l 'linux-image*'` or the update's description shows that the offered package is a newer build, so install it."),
    "2010-08-17_18#1219": (True, "'ah, that clears up more dust. thanks' after the explanations.",
        "Where command aliases and variables belong: ~/.profile or ~/.bashrc, and what the difference is.",
        "~/.bashrc is read by every interactive shell, ~/.profile only at login (and Ubuntu's ~/.profile reads ~/.bashrc); aliases go in ~/.bashrc."),
    "2016-02-22_17#1323": (True, "'Is it apt-get upgrade?' - 'yes' - 'tyvm :)'.",
        "How to update Ubuntu Server 14.04.3 to the 14.04.4 point release.",
        "The point release comes with the regular updates: `sudo apt-get update` then `sudo apt-get upgrade` (or full-upgrade)."),
    "2014-06-18_13#1239": (True, "'ah kewl .. thanks', then 'tis ok .. i figured it out'.",
        "Whether iptables stops at the first matching rule, so that an ACCEPT-all rule in the middle of a chain lets every packet through.",
        "Yes: a packet that matches a rule with a terminating target (ACCEPT, DROP) is not checked against later rules; `iptables -L -v` shows which interface a rule applies to."),
    "2008-07-14_18#1021": (True, "'bah, shouldve known :P', 'thanks Seveas :)'.",
        "Unpack a Debian source package (.orig.tar.gz, .dsc, .diff.gz) into a source tree to configure and build by hand.",
        "`dpkg-source -x filename.dsc` (from the dpkg-dev package)."),
    "2016-02-22_17#1150": (True, "'So, prompt=lts?' - 'yeah' - 'Thanks' ... 'Many thanks'.",
        "The upgrade from Ubuntu 12.04 (precise) to 14.04 (trusty) finds no new release.",
        "/etc/update-manager/release-upgrades says Prompt=never; set Prompt=lts and run the upgrade again."),
    "2015-03-18_05#1444": (True, "'thank you', then 'great' after the answer that the rest of the script runs as that user.",
        "Switch to another user inside a post-install bash script (su says it must be run from a terminal).",
        "Have the script call itself as that user: `su $USERNAME -l -c \"$(readlink -f $0) $*\"`, guarded by a check of the current user."),
    "2016-02-22_17#1003": (True, "'I see. Thank you.' after the explanation.",
        "What the leading / in `cd /bin` means.",
        "A leading / starts the path at the root of the file system (like C:\\ on Windows); without it the shell looks for bin in the current directory."),
    "2010-08-17_18#1201": (False, "'Didn't work, weird.' after the console keys; the asker never reports a way that worked.",
        "Stop the X server (the graphical session) from the login screen.", None),
    "2013-09-01_02#1056": (False, "'looks like the easy way is to make a new profile and setup all the accounts again :(': the asker gives up on the profile.",
        "Thunderbird shows the account names but not their folders; a new profile works.", None),
    "2013-09-01_02#1253": (False, "'I've googled myself sick and have still not got the answer!'",
        "Object-oriented PHP scripts do not run on a LAMP install, even with PEAR installed.", None),
    "2007-12-01_03#1006": (False, "'so there is no way I can change its hidden status without using windows?' and 'i've tried googling with no help for a couple days'.",
        "A music folder on an MP3 player carries the Windows (FAT) hidden attribute, so Rockbox cannot see it, and there is no Windows to clear it.", None),
    "2010-08-17_18#1408": (False, "'ahh bummer ... its gone now it seems' about the only PPA anyone knew.",
        "Install VLC 1.1.2 on Ubuntu 10.04; the repositories have an older version and the PPA everyone points to is gone.", None),
    "2010-08-17_18#1428": (False, "The asker repeats the error three times; the only replies are 'what'.",
        "apt-get, aptitude and firefox fail with '/usr/bin/python: relocation error: symbol __realpath_chk, version GLIBC_2.4 not defined in file libc.so.6'.", None),
    "2014-06-18_13#1037": (False, "'I'll just try #nagios i guess': the asker leaves for another channel.",
        "A web page showing live CPU, RAM and bandwidth of 6 remote servers with about one-second refresh, to spot spikes.", None),
    "2014-06-18_13#1165": (False, "'anyone??? can't seem to find an answer' after the only reply named the plugin library.",
        "Where Google Chrome on 12.04 keeps cached Flash video files, to copy them for later viewing.", None),
    "2014-06-18_13#1315": (False, "'when clicking on detect display it does nothing'; the asker posts the question again at the end.",
        "A second monitor on HDMI gets no signal from the desktop PC (the DVI screen works).", None),
    "2015-03-18_05#1254": (False, "'yeah - been there tried that' to the two links, the only replies.",
        "Release and renew the DHCP lease on Ubuntu 14.04.", None),
    "2007-12-01_03#1198": (False, "Every suggestion is reported as doing nothing ('nothing to do', 'did nothing').",
        "After a dist-upgrade to Gutsy most GNOME panel applets are missing or broken.", None),
    "2016-06-08_07#1432": (False, "The asker's last question ('... connection refused by the host, why is that ?') gets no answer.",
        "vnc4server started with -geometry and -randr refuses connections, while plain vncserver accepts them.", None),
    "2015-03-18_05#1418": (False, "'how do I install them again ...', 'ikonia? any suggestions?', 'or any body else for that matter?' go unanswered.",
        "Reinstall the Logitech G19 keyboard's driver software (gnome15) after reinstalling Ubuntu, now that its repository is gone.", None),
    "2016-06-08_07#1471": (False, "'Could you explain why please? Im scratching my head' goes unanswered.",
        "On 14.04 /etc/security/limits.conf applies only after adding pam_limits.so to common-session, on 16.04 without it: why?", None),
}


def named_threads() -> set[str]:
    """Thread ids written in any tracked file of the repository (except the threads file and the
    built-in task set that list them all, and this script)."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    skip = ("ubuntu_irc_test_threads.jsonl", "ubuntu_irc/tasks.jsonl", "agreement/build_heldout.py",
            "agreement/heldout.jsonl")
    named: set[str] = set()
    for name in files:
        if name.endswith(skip):
            continue
        try:
            named |= set(THREAD_ID.findall((ROOT / name).read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
    return named


def build_rows() -> list[dict]:
    """The held-out rows, in the order of :data:`VERDICTS`."""
    threads = {t["thread_id"]: t for t in read_jsonl(THREADS)}
    rows = []
    for n, (tid, (solved, words, problem, solution)) in enumerate(VERDICTS.items(), 1):
        turns = thread_turns(threads[tid])
        row = {"id": f"fresh-{n:02d}", "question": turns[0]["user"], "problem": problem}
        if solution:
            row["solution"] = solution
        row.update(turns=turns,
                   labels={"solved": solved, "labelled_by": "people",
                           "note": f"The asker's own words in the thread: {words}"},
                   split="heldout", kind=KIND,
                   source={"dataset": "ubuntu_irc", "id": f"ubuntu-irc-{tid}", "thread_id": tid, "licence": LICENCE},
                   origin="verbatim")
        rows.append(row)
    return rows


def problems(rows: list[dict], named: set[str]) -> list[str]:
    """Why a row may not be in the fresh held-out part (empty when every row may)."""
    used_ids, used_questions = held_out_references()
    labelled = read_jsonl(LABELLED)
    used_ids |= {r["source"].get("thread_id") for r in labelled} | named
    used_questions += [(f"labelled {r['id']}", r["question"]) for r in labelled]
    out = []
    for row in rows:
        tid = row["source"]["thread_id"]
        if tid in used_ids:
            out.append(f"{row['id']}: thread {tid} is used or named elsewhere")
        close = [w for w, q in used_questions
                 if normal(q) == normal(row["question"]) or overlap(row["question"], q) >= OVERLAP_LIMIT]
        if close:
            out.append(f"{row['id']}: question too close to {close[0]}")
    return out


def serialise(rows: list[dict]) -> bytes:
    """The file's bytes: one JSON object a line, keys in the order built, UTF-8."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def main(argv: list[str]) -> int:
    rows = build_rows()
    bad = problems(rows, named_threads())
    data = serialise(rows)
    solved = sum(r["labels"]["solved"] for r in rows)
    print(f"{len(rows)} conversations ({sum(len(r['turns']) for r in rows)} turns): solved {solved}, "
          f"not solved {len(rows) - solved}; every label labelled_by people")
    for p in bad:
        print("PROBLEM", p)
    if "--check" in argv:
        same = HELDOUT.exists() and HELDOUT.read_bytes() == data
        print("heldout.jsonl is what this script builds" if same else "heldout.jsonl DIFFERS from what this script builds")
        return 0 if same and not bad else 1
    if bad:
        return 1
    HELDOUT.write_bytes(data)
    print(f"wrote {HELDOUT.relative_to(ROOT)} sha256 {hashlib.sha256(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
