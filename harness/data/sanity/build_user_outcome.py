"""Writes user_outcome.jsonl: the hand-written sanity set of the simulated user's outcome decision.

Each case is a hidden scenario (the true underlying problem, the fix that worked in the real
thread, the asker's facts), the question, and an agent message. ``fixed`` says whether doing
what the agent says would fix the true problem: then the simulated user must report that it
works; otherwise it must report that the problem persists (or answer the agent's question).
Half are fixes (worded differently from the real fix), half are not (a question, a fix for
another cause, generic text, a partial step). Run ``python build_user_outcome.py`` after editing.
"""
import json
from pathlib import Path

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


def build() -> list[dict]:
    return [{"id": cid, "fixed": fixed, "problem": problem, "solution": solution,
             "question": question, "facts": facts, "agent": agent}
            for cid, fixed, problem, solution, question, facts, agent in CASES]


if __name__ == "__main__":
    rows = build()
    out = Path(__file__).with_name("user_outcome.jsonl")
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"{out}: {len(rows)} cases, {sum(r['fixed'] for r in rows)} fixes")
