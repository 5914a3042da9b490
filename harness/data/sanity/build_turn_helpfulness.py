"""Writes turn_helpfulness.jsonl: helpfulness pairs inside real-looking conversations.

The 12 pairs of ``harness.selfscore.sanity_sets.HELPFULNESS_PAIRS`` rate one agent reply to a first question.
Batches b18 and b19 (docs/batches.md) showed biases those pairs do not reach, deeper in a
conversation: user helpfulness gave 1 to a clear report that a step was done and the problem
stays ("I tried logging in again and the issue is still there."), and agent helpfulness gave 8
to "contact the system administrator" and to a word-for-word repeat of the agent's previous
message. Each case here is modelled on such a turn of the #ubuntu threads (written by hand, not
copied from a dataset): a conversation so far, then two versions of the judged message, one
that helps and one that does not. The judge passes a case when it scores the helpful version
strictly higher, so a judge that gives every message the same score fails all of them.

``role`` is the author of the judged message; ``first`` marks the user's opening question
(judged with the first-turn rubric). Run ``python build_turn_helpfulness.py`` after editing.
"""
import json
from pathlib import Path

U, A = "user", "agent"

SSH_Q = ("Hello all, I'm trying to ssh to account@localhost but keep getting a 'roaming not allowed "
         "by server' error. I've checked the permissions, 700 for .ssh and 600 for authorized_keys.")
GRUB_Q = "I installed Ubuntu 8.04 next to 7.10 but the GRUB menu only lists 7.10, so I cannot start 8.04."
SOUND_Q = "my sound stopped working after yesterday's update"
APT_Q = "apt-get update fails with '404 Not Found' for all the gutsy repositories, so I cannot install mysql-client."
WIFI_Q = "My wireless card is not detected since I installed Ubuntu 8.04, the wired network works."
GDM_Q = "I did a software update on Hardy and the GUI stopped working. All I get now is a text login."

# (id, role, kind of the useless version, conversation so far, helpful version, useless version)
CASES = [
    # ---------------------------------------------------------------- agent, later turns (6)
    ("agent_ssh_repeat", A, "repeats its previous message", [
        (U, SSH_Q),
        (A, "Check that your public key is in ~/.ssh/authorized_keys and restart the SSH server with `sudo /etc/init.d/ssh restart`."),
        (U, "I restarted the SSH server, but I still get the same error.")],
     "The 'roaming' line is only a warning; the real refusal is the key. Copy your key with `ssh-copy-id account@localhost`, which installs it with the right permissions, then run `ssh -v account@localhost` and tell me which key it offers.",
     "Check that your public key is in ~/.ssh/authorized_keys and restart the SSH server with `sudo /etc/init.d/ssh restart`."),
    ("agent_grub_sysadmin", A, "sends the user to someone else", [
        (U, GRUB_Q),
        (A, "Try changing the boot order in your BIOS so that the disk with 8.04 boots first."),
        (U, "There is only one disk, and changing the boot order did nothing. The menu still lists only 7.10.")],
     "Then the GRUB of 7.10 is still in charge and does not know about 8.04. Boot 7.10, run `sudo update-grub` so that it finds the new kernel, check that /boot/grub/menu.lst has an 8.04 entry now, and reboot.",
     "It may be a problem with your hardware or the system configuration. You can try contacting the system administrator or the manufacturer for assistance."),
    ("agent_sound_repeat", A, "repeats its previous message", [
        (U, SOUND_Q),
        (A, "Open the sound settings and check that the output device is not muted."),
        (U, "It is not muted and the volume is at the maximum. Still no sound.")],
     "Run `alsamixer` in a terminal, press F6 to pick your sound card and check whether Master or PCM show MM (muted); press M on each to unmute them. If your card is not listed there, run `aplay -l` and paste its output.",
     "Open the sound settings and check that the output device is not muted."),
    ("agent_apt_try_later", A, "tells the user to try again later", [
        (U, APT_Q),
        (A, "Run `sudo apt-get update` again, the servers may be busy."),
        (U, "I ran it three times, and every gutsy URL still gives 404.")],
     "Gutsy has reached its end of life, so its packages moved to old-releases.ubuntu.com. In /etc/apt/sources.list replace archive.ubuntu.com and security.ubuntu.com with old-releases.ubuntu.com, then run `sudo apt-get update` again.",
     "I'm sorry to hear that you are still having trouble. Please try again later, and if the problem persists, contact your system administrator."),
    ("agent_wifi_generic", A, "generic advice that ignores the user's report", [
        (U, WIFI_Q),
        (A, "Which wireless card do you have? Run `lspci | grep -i network` and paste the output."),
        (U, "It says: 03:00.0 Network controller: Broadcom Corporation BCM4312 802.11b/g (rev 01)")],
     "The BCM4312 needs Broadcom's proprietary driver. Open System > Administration > Hardware Drivers, enable the 'Broadcom STA wireless driver' and reboot; from a terminal, `sudo apt-get install bcmwl-kernel-source` does the same.",
     "Wireless cards can have many different problems. Make sure that your wireless card is working properly and try again."),
    ("agent_gdm_repeat", A, "repeats its previous message", [
        (U, GDM_Q),
        (A, "Install gdm with `sudo apt-get install gdm`."),
        (U, "gdm is already installed, and after a reboot I still get the text login.")],
     "Then the update probably removed the desktop itself. Log in on the text console and run `sudo apt-get install ubuntu-desktop`, which reinstalls GNOME and its session, then start the login screen with `sudo /etc/init.d/gdm start`.",
     "Install gdm with `sudo apt-get install gdm`."),
    # ---------------------------------------------------------------- user, later turns (6)
    ("user_ssh_still_there", U, "no information", [
        (U, SSH_Q),
        (A, "Try logging in again to see if the issue has been resolved.")],
     "I tried logging in again and the issue is still there.",
     "ok"),
    ("user_ssh_verbose", U, "repeats the question, ignores the agent", [
        (U, "My SSH login to the server fails with 'Permission denied (publickey)'."),
        (A, "Run `ssh -v user@host` and tell me which key the client offers.")],
     "I ran `ssh -v user@host`. It offers /home/me/.ssh/id_rsa, then says 'Authentications that can continue: publickey', and I still get Permission denied.",
     "My SSH login to the server fails with 'Permission denied (publickey)'. Can you help me?"),
    ("user_sound_acts_as_agent", U, "speaks as the help desk", [
        (U, SOUND_Q),
        (A, "Run `alsamixer` and check whether Master shows MM, which means muted.")],
     "In alsamixer Master showed MM. I pressed M and it shows 00 now, but there is still no sound.",
     "I'm sorry to hear you are having trouble with your sound. Please provide more details about your problem, and I will do my best to help you."),
    ("user_apt_refuses", U, "refuses the step without reporting anything", [
        (U, APT_Q),
        (A, "Edit /etc/apt/sources.list, replace archive.ubuntu.com with old-releases.ubuntu.com, then run `sudo apt-get update`.")],
     "I changed the sources to old-releases.ubuntu.com and ran `sudo apt-get update`. The lists downloaded without errors and mysql-client installs now.",
     "I don't want to change any files. Just tell me why it doesn't work."),
    ("user_wifi_rant", U, "off-topic complaint", [
        (U, WIFI_Q),
        (A, "Which wireless card do you have? Run `lspci | grep -i network` and paste the output.")],
     "It says: 03:00.0 Network controller: Broadcom Corporation BCM4312 802.11b/g (rev 01)",
     "I am completely fed up with these stupid wireless cards, they never work on Linux."),
    ("user_grub_later", U, "postpones, reports nothing", [
        (U, GRUB_Q),
        (A, "Boot 7.10 and run `sudo update-grub`, then check /boot/grub/menu.lst for an 8.04 entry.")],
     "I ran `sudo update-grub` in 7.10. menu.lst still lists only the 7.10 kernels, and there is no 8.04 kernel in /boot.",
     "Thanks, I will try that some time next week."),
    # ---------------------------------------------------------------- user, first question (3)
    ("first_sound_vague", U, "no details", [],
     "Since yesterday's kernel update (2.6.24-19) my sound is gone on Ubuntu 8.04: the volume icon works, but `aplay -l` lists no sound cards. Booting the old kernel brings the sound back.",
     "my sound does not work recently..i need help"),
    ("first_wifi_rant", U, "a complaint with no problem details", [],
     "On Ubuntu 8.04 my Broadcom BCM4312 wireless card is not detected: `iwconfig` shows no wireless interface and Hardware Drivers lists nothing. The wired network works.",
     "I am completely FEDUP with the stupid wireless cards. Any care to help"),
    ("first_apt_vague", U, "no system, no error", [],
     "`sudo apt-get update` on Ubuntu 7.10 fails with '404 Not Found' for every archive.ubuntu.com gutsy URL, so I cannot install mysql-client.",
     "apt is broken again, what do I do"),
]


def build() -> list[dict]:
    return [{"id": cid, "role": role, "first": not conv, "useless_kind": kind,
             "conversation": [{"role": r, "content": t} for r, t in conv],
             "helpful": helpful, "useless": useless}
            for cid, role, kind, conv, helpful, useless in CASES]


if __name__ == "__main__":
    rows = build()
    for r in rows:  # the judged message follows the conversation in turn order
        last = r["conversation"][-1]["role"] if r["conversation"] else A
        assert last != r["role"], r["id"]
    out = Path(__file__).with_name("turn_helpfulness.jsonl")
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"{out}: {len(rows)} pairs, {sum(r['role'] == A for r in rows)} agent, "
          f"{sum(r['role'] == U for r in rows)} user")
