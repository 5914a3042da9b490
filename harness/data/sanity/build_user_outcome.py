"""Writes user_outcome.jsonl: the hand-written sanity set of the simulated user's outcome decision.

Each case is a hidden scenario (the true underlying problem, the fix that worked in the real
thread, the asker's facts), the question, and an agent message. ``fixed`` says whether doing
what the agent says would fix the true problem: then the simulated user must report that it
works; otherwise it must report that the problem persists (or answer the agent's question).
Half are fixes (worded differently from the real fix), half are not (a question, a fix for
another cause, generic text, a partial step). Run ``python build_user_outcome.py`` after editing.

The first 16 have a one-line solution written for the case. The last 6 (``THREAD_CASES``) are
real #ubuntu threads of the shipped troubleshooting set that the default batch does not play
(it plays the first 10): their solution is what a batch gives the simulated user
(``harness.tasks.datasets.task_solution``): the thread's labelled fix, the helper turn(s) named in
``troubleshooting_fixes.tsv``, addressed nicks and chatter included; and half of their agent
messages are the generic lists of steps the 1.5B agent writes (in batch b16 such a list passed
for the fix of a sound thread).
"""
import json
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from harness.tasks.datasets import task_solution  # noqa: E402

CASES = [
    # ------------------------------------------------------------------- fixes (8)
    ("dhcp_release_renew", True, "The laptop did not get an address from the DHCP server.",
     "Release and renew the DHCP lease: sudo dhclient -r; sudo dhclient",
     "My laptop connects to the wifi but has no internet, it shows a 169.254 address.",
     ["Ubuntu 22.04", "the address is 169.254.12.7"],
     "Your laptop did not get an address from the router. Run `sudo dhclient -r` and then `sudo dhclient` to request a new lease."),
    ("spooler_restart", True, "The print spooler service has stopped.",
     "Restart the Print Spooler service in services.msc.",
     "My printer shows offline since this morning and nothing prints.", ["Windows 10", "an HP LaserJet on the network"],
     "Open a Command Prompt as administrator and run `net stop spooler` followed by `net start spooler`, then print again."),
    ("journal_vacuum", True, "The system journal in /var/log has filled the disk.",
     "sudo journalctl --vacuum-size=200M",
     "Ubuntu says 'No space left on device' when I save files.", ["/var/log/journal is 40 GB"],
     "Your journal logs are huge. Clean them with `sudo journalctl --vacuum-time=3d`, which deletes entries older than three days."),
    ("ssh_perms", True, "The permissions of ~/.ssh/authorized_keys on the server are too open.",
     "chmod 700 ~/.ssh; chmod 600 ~/.ssh/authorized_keys",
     "SSH with my key fails with 'Permission denied (publickey)'.", ["authorized_keys is mode 666"],
     "sshd ignores key files that others can write. On the server, run `chmod go-w ~/.ssh/authorized_keys ~/.ssh` and try again."),
    ("ntfs_driver", True, "The ntfs-3g driver is not installed, so the NTFS partition cannot be mounted.",
     "Install ntfs-3g with apt and mount the partition.",
     "How can I get access to my Windows NTFS files from Ubuntu?", ["the partition is /dev/sda2"],
     "Install the NTFS driver: `sudo apt-get install ntfs-3g`. Then click the partition in the file manager to mount it."),
    ("alsa_unmute", True, "The Master channel is muted in the ALSA mixer.",
     "Unmute Master in alsamixer.",
     "I have no sound at all since the update.", ["onboard Intel sound"],
     "Open the sound settings, look at the Output volume: it is probably muted. Click the speaker icon to unmute and raise the slider."),
    ("broadcom_wl", True, "The proprietary Broadcom wireless driver is not installed.",
     "sudo apt install bcmwl-kernel-source, then reboot",
     "My Dell laptop does not show any wireless networks on Ubuntu.", ["Broadcom BCM4313"],
     "Open Software & Updates, go to the Additional Drivers tab, select the Broadcom STA wireless driver and apply, then restart."),
    ("excel_format", True, "The cell is formatted as Text, so Excel shows the formula instead of computing it.",
     "Set the cell format to General and re-enter the formula.",
     "In Excel my =SUM(A1:A5) shows as text instead of the result.", ["Excel 2016"],
     "Right-click the cell, choose Format Cells, pick General instead of Text, then press F2 and Enter to recalculate it."),
    # ------------------------------------------------------------------- not fixes (8)
    ("dhcp_asks_os", False, "The laptop did not get an address from the DHCP server.",
     "Release and renew the DHCP lease: sudo dhclient -r; sudo dhclient",
     "My laptop connects to the wifi but has no internet.", ["Ubuntu 22.04"],
     "Could you tell me which operating system your laptop runs?"),
    ("dhcp_dns", False, "The laptop did not get an address from the DHCP server.",
     "Release and renew the DHCP lease: sudo dhclient -r; sudo dhclient",
     "My laptop connects to the wifi but has no internet, it shows a 169.254 address.", ["Ubuntu 22.04"],
     "Change your DNS servers to 8.8.8.8 and 8.8.4.4 in the network settings; slow DNS often looks like no internet."),
    ("spooler_generic", False, "The print spooler service has stopped.",
     "Restart the Print Spooler service in services.msc.",
     "My printer shows offline since this morning.", ["Windows 10"],
     "HP LaserJet printers are known for their reliability. HP offers many models for home and office use."),
    ("journal_tmp", False, "The system journal in /var/log has filled the disk.",
     "sudo journalctl --vacuum-size=200M",
     "Ubuntu says 'No space left on device' when I save files.", ["/var/log/journal is 40 GB"],
     "Empty the trash and delete files in your Downloads folder you do not need."),
    ("ssh_username", False, "The permissions of ~/.ssh/authorized_keys on the server are too open.",
     "chmod 700 ~/.ssh; chmod 600 ~/.ssh/authorized_keys",
     "SSH with my key fails with 'Permission denied (publickey)'.", ["authorized_keys is mode 666"],
     "Make sure you use the right user name in the command: `ssh user@host`."),
    ("ntfs_reboot", False, "The ntfs-3g driver is not installed, so the NTFS partition cannot be mounted.",
     "Install ntfs-3g with apt and mount the partition.",
     "How can I get access to my Windows NTFS files from Ubuntu?", ["the partition is /dev/sda2"],
     "Restart your computer and check whether the partition appears."),
    ("alsa_speakers", False, "The Master channel is muted in the ALSA mixer.",
     "Unmute Master in alsamixer.",
     "I have no sound at all since the update.", ["onboard Intel sound"],
     "Check that your speakers are plugged into the green jack and switched on."),
    ("broadcom_list", False, "The proprietary Broadcom wireless driver is not installed.",
     "sudo apt install bcmwl-kernel-source, then reboot",
     "My Dell laptop does not show any wireless networks on Ubuntu.", ["Broadcom BCM4313"],
     "Run `lspci | grep -i network` and tell me what it prints."),
]


IRC = Path(__file__).parents[1] / "ubuntu_irc" / "troubleshooting.jsonl"

THREAD_CASES = [  # (id, fixed, thread id, problem, agent message)
    ("irc_grub_reinstall", True, "ubuntu-irc-2007-12-01_03#1101",
     "Installing Windows XP overwrote the master boot record, so GRUB no longer loads.",
     "Windows XP wrote its own boot loader over the MBR. Boot the Ubuntu live CD, mount your Linux "
     "partition and run `sudo grub-install --root-directory=/mnt /dev/sda` to put the boot menu back."),
    ("irc_grub_generic", False, "ubuntu-irc-2007-12-01_03#1101",
     "Installing Windows XP overwrote the master boot record, so GRUB no longer loads.",
     "1. Check the boot order in your BIOS. 2. Make sure all your disks are connected. 3. Run "
     "sudo apt-get update && sudo apt-get upgrade to get the latest packages."),
    ("irc_flash_reinstall", True, "ubuntu-irc-2013-09-01_02#1450",
     "The flashplugin-installer package did not finish installing, so the browser has no Flash plugin.",
     "Delete the Flash file you copied by hand and run `sudo apt-get install --reinstall "
     "flashplugin-installer`; it downloads the plugin again and installs it for the browser."),
    ("irc_flash_generic", False, "ubuntu-irc-2013-09-01_02#1450",
     "The flashplugin-installer package did not finish installing, so the browser has no Flash plugin.",
     "Try restarting your browser and your computer. If Flash is still missing, clear the browser "
     "cache and make sure your system is up to date with sudo apt-get update."),
    ("irc_vi_modes", True, "ubuntu-irc-2016-02-22_17#1273",
     "The user does not know that vi starts in command mode, so it does not accept typed text.",
     "Vi starts in command mode. Press i to start typing, then Esc and :wq to save and quit; or "
     "open the file with the simpler editor nano instead."),
    ("irc_vi_reinstall", False, "ubuntu-irc-2016-02-22_17#1273",
     "The user does not know that vi starts in command mode, so it does not accept typed text.",
     "Try reinstalling vi with sudo apt-get install --reinstall vim and restart the terminal; a "
     "broken package can stop the editor from accepting input."),
]


def thread_cases() -> list[dict]:
    threads = {t["id"]: t for t in map(json.loads, IRC.read_text(encoding="utf-8").splitlines())}
    rows = []
    for cid, fixed, tid, problem, agent in THREAD_CASES:
        t = threads[tid]
        solution = task_solution(t.get("reference_answer"), t["agent_replies"])
        rows.append({"id": cid, "fixed": fixed, "problem": problem, "solution": solution,
                     "question": t["question"], "facts": t["facts"], "agent": agent})
    return rows


def build() -> list[dict]:
    return [{"id": cid, "fixed": fixed, "problem": problem, "solution": solution,
             "question": question, "facts": facts, "agent": agent}
            for cid, fixed, problem, solution, question, facts, agent in CASES] + thread_cases()


if __name__ == "__main__":
    rows = build()
    out = Path(__file__).with_name("user_outcome.jsonl")
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"{out}: {len(rows)} cases, {sum(r['fixed'] for r in rows)} fixes")
