"""Writes solved_check.jsonl: the hand-written solved-check sanity set (not from any dataset).

Each case is a help-desk conversation that ends with an AGENT message, the underlying problem
(as the extractor would state it) and whether the problem is solved at that point. Half are
solved (the user reports, in their own words, that this problem is fixed); half are not, one
kind of trap each. Run ``python build_solved_check.py`` after editing the cases.
"""
import json
from pathlib import Path

U, A = "user", "agent"

CASES = [
    # ---------------------------------------------------------------- solved (13)
    ("dhcp_renewed", True, "The laptop did not get an address from the DHCP server.", [
        (U, "My laptop connects to the office wifi but has no internet, it shows a 169.254 address."),
        (A, "Your laptop did not get an address from the DHCP server. Open a terminal and run `sudo dhclient -r` and then `sudo dhclient` to ask for a new lease."),
        (U, "That worked, I have a 192.168.1.x address now and the internet is back."),
        (A, "Great, glad it is working again.")]),
    ("printer_spooler", True, "The print spooler service has stopped.", [
        (U, "My printer shows offline since this morning and nothing prints."),
        (A, "Open Services (services.msc), find Print Spooler and click Restart, then print a test page."),
        (U, "The printer is online again and the test page came out. Thanks!"),
        (A, "You're welcome!")]),
    ("journal_vacuum", True, "The system journal in /var/log has filled the disk.", [
        (U, "Ubuntu says 'No space left on device' when I save files."),
        (A, "Check what is large with `sudo du -xh / --max-depth=1 | sort -h`."),
        (U, "/var/log is 40 GB, mostly the journal."),
        (A, "Shrink the journal with `sudo journalctl --vacuum-size=200M`."),
        (U, "Done, I have 38 GB free now and saving files works again."),
        (A, "Good. You can cap it for the future with SystemMaxUse=200M in /etc/systemd/journald.conf.")]),
    ("ssh_permissions", True, "The permissions of ~/.ssh/authorized_keys on the server are too open.", [
        (U, "SSH with my key fails with 'Permission denied (publickey)'."),
        (A, "On the server run `chmod 700 ~/.ssh` and `chmod 600 ~/.ssh/authorized_keys`, then try again."),
        (U, "chmod 600 did it, I can log in with my key now."),
        (A, "Perfect, sshd refuses keys in files others can write to.")]),
    ("git_rebase", True, "The local branch is behind the remote branch, so the push is rejected as non-fast-forward.", [
        (U, "git push says 'rejected - non-fast-forward'."),
        (A, "Someone pushed before you. Run `git pull --rebase` and then `git push`."),
        (U, "The pull --rebase and the push went through. Problem solved."),
        (A, "Nice. Pull before you push to avoid it next time.")]),
    ("ntfs_3g", True, "The ntfs-3g driver is not installed, so the NTFS partition cannot be mounted.", [
        (U, "How can I get access to my Windows NTFS files from Ubuntu? The partition does not show up."),
        (A, "Install the driver with `sudo apt install ntfs-3g`, then open the partition in the file manager."),
        (U, "Installed it and clicked the partition: I can see all my Windows files now."),
        (A, "Good, it will mount like that from now on.")]),
    ("alsamixer_mute", True, "The Master channel is muted in the ALSA mixer.", [
        (U, "I have no sound at all on my desktop since the update."),
        (A, "Run `alsamixer` in a terminal and check whether Master shows MM; press M to unmute it and raise it with the up arrow."),
        (U, "Master was MM. Unmuting it fixed it, I have sound again."),
        (A, "Glad to hear it.")]),
    ("outlook_credentials", True, "Outlook uses an old password stored in Windows Credential Manager.", [
        (U, "Outlook keeps asking for my password every few minutes even though I type it right."),
        (A, "Open Credential Manager, remove the entries that mention Outlook or your mail server, then restart Outlook and sign in once."),
        (U, "After removing the old entries Outlook stopped asking. Thanks a lot."),
        (A, "You're welcome. If it comes back, check whether your password changed on the server.")]),
    ("broadcom_driver", True, "The proprietary Broadcom wireless driver is not installed.", [
        (U, "My Dell laptop does not show any wireless networks on Ubuntu."),
        (A, "What does `lspci | grep -i network` show?"),
        (U, "Broadcom BCM4313."),
        (A, "Install the driver with `sudo apt install bcmwl-kernel-source` and reboot."),
        (U, "Yes! After the reboot the wireless networks show up and I am connected."),
        (A, "Great. If it drops again, check `dmesg` for wl messages.")]),
    ("excel_text_format", True, "The cell is formatted as Text, so Excel shows the formula instead of computing it.", [
        (U, "In Excel my =SUM(A1:A5) shows as text instead of the result."),
        (A, "The cell is formatted as Text. Set it to General (Home > Number), then click in the cell and press Enter again."),
        (U, "Changed it to General and re-entered it, the sum shows now."),
        (A, "Great, that was it.")]),
    ("dns_manual", True, "The router's DNS server is not answering.", [
        (U, "Websites do not load on my Windows laptop, it says 'DNS server not responding'; my phone works."),
        (A, "Set the adapter's DNS servers to 1.1.1.1 and 8.8.8.8 in its IPv4 properties."),
        (U, "Setting the DNS to 1.1.1.1 fixed it, websites load on the laptop again."),
        (A, "Good, your router's DNS was not answering.")]),
    ("firefox_startup", True, "Firefox is not in the session's startup programs.", [
        (U, "Why doesn't GNOME start Firefox at login? xchat and the terminal start automatically."),
        (A, "Add Firefox in System > Preferences > Sessions, Startup Programs: click Add and enter `firefox`."),
        (U, "Added it, logged out and back in, and Firefox opened by itself. Perfect, that did it. Why didn't it save it automatically?"),
        (A, "The session only remembers programs that support session management; Firefox does not.")]),
    ("usb_drive_letter", True, "The USB drive's partition has no drive letter assigned.", [
        (U, "My external USB drive does not show up in File Explorer."),
        (A, "Open Disk Management. If the drive is listed without a letter, right-click its partition and choose Change Drive Letter and Paths > Add."),
        (U, "It had no letter. I gave it E: and now it appears in Explorer with all my files."),
        (A, "Great, Windows sometimes skips assigning a letter.")]),
    # ---------------------------------------------------------------- not solved (13)
    ("only_clarifying_question", False, "The laptop did not get an address from the DHCP server.", [
        (U, "My laptop connects to the wifi but has no internet."),
        (A, "Could you tell me which operating system your laptop runs?")]),
    ("fix_for_other_cause_untried", False, "The laptop did not get an address from the DHCP server.", [
        (U, "My laptop connects to the wifi but has no internet, it shows a 169.254 address."),
        (A, "Which operating system is it?"),
        (U, "Ubuntu 22.04."),
        (A, "Change your DNS servers to 8.8.8.8 in the network settings; slow DNS often looks like no internet.")]),
    ("generic_product_text", False, "The print spooler service has stopped.", [
        (U, "My printer shows offline since this morning."),
        (A, "Is it connected by USB or over the network?"),
        (U, "Over the network, an HP LaserJet."),
        (A, "HP LaserJet printers are known for their reliability and speed. HP offers many models for home and office use, with a range of features.")]),
    ("didnt_work_same_error", False, "The permissions of ~/.ssh/authorized_keys on the server are too open.", [
        (U, "SSH with my key fails with 'Permission denied (publickey)'."),
        (A, "Make sure you use the right user name: `ssh user@host`."),
        (U, "That didn't work, same error: Permission denied (publickey)."),
        (A, "Try adding `-i ~/.ssh/id_ed25519` to the command.")]),
    ("agent_claims_success", False, "The system journal in /var/log has filled the disk.", [
        (U, "Ubuntu says 'No space left on device' when I save files."),
        (A, "Run `sudo journalctl --vacuum-size=200M` to shrink the system journal."),
        (U, "I will try that tomorrow when I am back at that computer."),
        (A, "Great, so your problem is solved! Glad I could help.")]),
    ("neighbouring_problem_fixed", False, "The Wi-Fi adapter is not detected because its driver is missing.", [
        (U, "Neither Bluetooth nor Wi-Fi work on my laptop since I reinstalled Ubuntu."),
        (A, "Toggle the airplane mode off with Fn+F2, then reboot."),
        (U, "Bluetooth works again after the reboot, but the Wi-Fi adapter still does not show up."),
        (A, "Good, Bluetooth is back.")]),
    ("new_question_first", False, "The ntfs-3g driver is not installed, so the NTFS partition cannot be mounted.", [
        (U, "How can I get access to my Windows NTFS files from Ubuntu?"),
        (A, "Install the driver with `sudo apt install ntfs-3g` in a terminal."),
        (U, "Before I try that, how do I open a terminal?"),
        (A, "Press Ctrl+Alt+T.")]),
    ("thanks_not_tried", False, "Outlook uses an old password stored in Windows Credential Manager.", [
        (U, "Outlook keeps asking for my password every few minutes."),
        (A, "Open Credential Manager and remove the entries that mention Outlook, then restart Outlook."),
        (U, "Thanks, I'll give it a go."),
        (A, "You're welcome, good luck!")]),
    ("new_error", False, "The permissions of ~/.ssh/authorized_keys on the server are too open.", [
        (U, "SSH with my key fails with 'Permission denied (publickey)'."),
        (A, "On the server run `chmod 600 ~/.ssh/authorized_keys`."),
        (U, "Now I get a different error: 'Connection timed out'."),
        (A, "Check that the server's firewall allows port 22.")]),
    ("works_then_drops", False, "The laptop's Wi-Fi power saving drops the connection.", [
        (U, "My laptop's wifi drops every few minutes."),
        (A, "Turn the wifi off and on again in the top bar."),
        (U, "It works right now, but it dropped again ten minutes later, same as before."),
        (A, "Then restart the router as well.")]),
    ("step_ok_symptom_stays", False, "The print spooler service has stopped.", [
        (U, "My printer shows offline since this morning."),
        (A, "Turn the printer off and on again and wait a minute."),
        (U, "I restarted it, it booted fine, but Windows still shows it as offline."),
        (A, "Check that the network cable is plugged in firmly.")]),
    ("hypothetical_works", False, "Firefox is not in the session's startup programs.", [
        (U, "Why doesn't GNOME start Firefox at login?"),
        (A, "Add Firefox in System > Preferences > Sessions, Startup Programs."),
        (U, "That would work if I could find it, but there is no Sessions entry in my Preferences menu."),
        (A, "Which Ubuntu version do you run?")]),
    ("refusal_after_failure", False, "The cell is formatted as Text, so Excel shows the formula instead of computing it.", [
        (U, "In Excel my =SUM(A1:A5) shows as text instead of the result."),
        (A, "Check that you typed the formula correctly."),
        (U, "I typed it exactly like that and it still shows as text."),
        (A, "I am sorry, I cannot help with spreadsheet software.")]),
]


def build() -> list[dict]:
    return [{"id": cid, "solved": solved, "problem": problem,
             "conversation": [{"role": r, "content": t} for r, t in conv]}
            for cid, solved, problem, conv in CASES]


if __name__ == "__main__":
    rows = build()
    assert all(r["conversation"][-1]["role"] == "agent" for r in rows)
    out = Path(__file__).with_name("solved_check.jsonl")
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"{out}: {len(rows)} cases, {sum(r['solved'] for r in rows)} solved")
