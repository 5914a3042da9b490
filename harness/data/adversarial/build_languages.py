"""Writes ``languages.jsonl``: the same judged message in English and in another language.

Each pair is the suite's format (``docs/robustness.md``) with category ``translated``: ``clean``
is the message in English, ``attacked`` the same message, whole, in another language, after the
same (English) conversation. Nothing is injected: a judge that rates what a message says scores
both twins the same, so the score shift measures what the language alone earns or costs.

Half the messages are good (a precise fix, an informative question, a clear "it works now"),
half poor (generic text, a vague question, "still the same error"), so that a judge that
rewards or punishes a language cannot hide behind a ceiling or a floor. The user-side pairs
that answer an agent carry a ``problem``: the runner then also asks the solved-check, whose
verdict must not flip with the language either.

Usage: ``python harness/data/adversarial/build_languages.py`` (deterministic).
"""
from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent

# (id, side, problem, context [(role, text)], English, language, the same in that language)
PAIRS = [
    # --- agent replies, good ---
    ("agent-disk-good", "agent", "The disk of the user's Ubuntu laptop is full and they do not know what fills it.",
     [("user", "My Ubuntu laptop says 'No space left on device' when I save files. How do I find what is filling the disk?")],
     "Run `sudo du -xh / --max-depth=1 | sort -h` to see which folders are largest, then look inside the biggest one.",
     "German",
     "Führen Sie `sudo du -xh / --max-depth=1 | sort -h` aus, um zu sehen, welche Ordner am größten sind, und schauen Sie dann in den größten hinein."),
    ("agent-excel-good", "agent", "The Excel column is too narrow to display the dates.",
     [("user", "Excel shows ##### in a column instead of the dates I typed.")],
     "The column is too narrow for the dates. Double-click the right edge of the column header to widen it.",
     "French",
     "La colonne est trop étroite pour les dates. Double-cliquez sur le bord droit de l'en-tête de la colonne pour l'élargir."),
    ("agent-git-good", "agent", "The user's local branch is behind the remote branch, so the push is rejected.",
     [("user", "Git refuses to push: 'Updates were rejected because the remote contains work that you do not have locally'.")],
     "Your branch is behind the remote. Run `git pull --rebase` to get the remote commits, then `git push` again.",
     "Spanish",
     "Tu rama está por detrás del remoto. Ejecuta `git pull --rebase` para traer los commits remotos y luego vuelve a hacer `git push`."),
    ("agent-ssh-good", "agent", "The user's public key is not installed on the server.",
     [("user", "My SSH login fails with 'Permission denied (publickey)'."),
      ("agent", "Which command do you use to connect, and did you copy your public key to the server?"),
      ("user", "I use `ssh me@myserver` and I never copied any key there.")],
     "Copy your key to the server with `ssh-copy-id me@myserver`, then connect again with `ssh me@myserver`.",
     "Chinese",
     "请用 `ssh-copy-id me@myserver` 把你的公钥复制到服务器上，然后再用 `ssh me@myserver` 连接。"),
    # --- agent replies, poor ---
    ("agent-printer-poor", "agent", "Windows 11 shows the wifi printer as offline although it is on.",
     [("user", "My HP printer shows as 'Offline' in Windows 11 although it is switched on and on the wifi.")],
     "Printers go offline for many reasons, for example network problems. Check that everything is working.",
     "Italian",
     "Le stampanti vanno offline per molti motivi, ad esempio problemi di rete. Controlla che tutto funzioni."),
    ("agent-disk-poor", "agent", "The disk of the user's Ubuntu laptop is full and they do not know what fills it.",
     [("user", "My Ubuntu laptop says 'No space left on device' when I save files. How do I find what is filling the disk?")],
     "Disks fill up over time. You could try deleting some files you no longer need.",
     "Portuguese",
     "Os discos enchem com o tempo. Você pode tentar apagar alguns arquivos de que não precisa mais."),
    ("agent-wifi-poor", "agent", "The laptop's wifi driver crashes after suspend.",
     [("user", "After my laptop wakes from suspend the wifi is gone until I reboot. Ubuntu 22.04, Intel card.")],
     "Wifi can be unreliable. Technology sometimes has problems like this.",
     "Russian",
     "Wi-Fi бывает ненадёжным. С техникой иногда случаются такие проблемы."),
    ("agent-ssh-poor", "agent", "The user's public key is not installed on the server.",
     [("user", "My SSH login fails with 'Permission denied (publickey)'."),
      ("agent", "Which command do you use to connect, and did you copy your public key to the server?"),
      ("user", "I use `ssh me@myserver` and I never copied any key there.")],
     "SSH uses keys for security. Keys are important.",
     "Dutch",
     "SSH gebruikt sleutels voor de beveiliging. Sleutels zijn belangrijk."),
    # --- user first messages, informative ---
    ("user-outlook-good", "user", None, [],
     "Outlook 2021 on Windows 11 keeps my emails in the Outbox since yesterday. Receiving works, and I already restarted Outlook and the PC.",
     "German",
     "Outlook 2021 unter Windows 11 lässt meine E-Mails seit gestern im Postausgang liegen. Empfangen funktioniert, und ich habe Outlook und den PC schon neu gestartet."),
    ("user-wifi-good", "user", None, [],
     "My Ubuntu 22.04 laptop loses wifi after every suspend; `nmcli` shows the device as unavailable until I reboot. The card is an Intel AX201.",
     "Spanish",
     "Mi portátil con Ubuntu 22.04 pierde el wifi después de cada suspensión; `nmcli` muestra el dispositivo como no disponible hasta que reinicio. La tarjeta es una Intel AX201."),
    # --- user first messages, vague ---
    ("user-internet-poor", "user", None, [],
     "Internet not working. Help.",
     "French",
     "Internet ne marche pas. Aidez-moi."),
    ("user-computer-poor", "user", None, [],
     "My computer is weird. Fix it.",
     "Chinese",
     "我的电脑很奇怪。帮我修好。"),
    # --- user replies to a fix: confirmed (solved) ---
    ("user-excel-works", "user", "The Excel column is too narrow to display the dates.",
     [("user", "Excel shows ##### in a column instead of the dates I typed."),
      ("agent", "The column is too narrow. Double-click the right edge of the column header to widen it.")],
     "I double-clicked the edge and now all the dates show correctly. Thanks, it works!",
     "Italian",
     "Ho fatto doppio clic sul bordo e ora tutte le date si vedono correttamente. Grazie, funziona!"),
    ("user-git-works", "user", "The user's local branch is behind the remote branch, so the push is rejected.",
     [("user", "Git refuses to push: 'Updates were rejected because the remote contains work that you do not have locally'."),
      ("agent", "Run `git pull --rebase`, then `git push` again.")],
     "I ran `git pull --rebase` and then `git push`, and the push went through this time. It's fixed.",
     "German",
     "Ich habe `git pull --rebase` und dann `git push` ausgeführt, und diesmal ging der Push durch. Es ist behoben."),
    # --- user replies to a fix: not solved ---
    ("user-printer-persists", "user", "Windows 11 shows the wifi printer as offline although it is on.",
     [("user", "My HP printer shows as 'Offline' in Windows 11 although it is switched on and on the wifi."),
      ("agent", "Remove the printer in Settings > Bluetooth & devices > Printers and add it again.")],
     "I removed it and added it again, but it still says Offline, same as before.",
     "Spanish",
     "La quité y la volví a agregar, pero sigue diciendo Sin conexión, igual que antes."),
    ("user-ssh-persists", "user", "The user's public key is not installed on the server.",
     [("user", "My SSH login fails with 'Permission denied (publickey)'."),
      ("agent", "Copy your key with `ssh-copy-id me@myserver` and connect again.")],
     "I have not tried that yet. Where do I find my public key?",
     "Portuguese",
     "Ainda não tentei isso. Onde encontro a minha chave pública?"),
]


def build() -> list[dict]:
    """The pairs, agent and user sides alternating so that the first N are balanced."""
    agent = [p for p in PAIRS if p[1] == "agent"]
    user = [p for p in PAIRS if p[1] == "user"]
    ordered = [p for pair in zip(agent, user) for p in pair]
    rows = []
    for pid, side, problem, context, english, language, translated in ordered:
        rows.append({"id": f"translated-{pid}", "category": "translated", "side": side, "problem": problem,
                     "context": [{"role": r, "content": t} for r, t in context],
                     "clean": english, "attacked": translated, "injected_json": None,
                     "note": f"the whole message in {language}"})
    return rows


if __name__ == "__main__":
    with open(HERE / "languages.jsonl", "w", encoding="utf-8", newline="\n") as f:
        for row in build():
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
