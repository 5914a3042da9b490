#!/usr/bin/env bash
# Debian packages deskbench uses beyond PyPI:
#   chromium       the headless browser of the Gradio app's browser tests (driven by Playwright)
#   libportaudio2  PortAudio, which `sounddevice` (local call mode) loads at import
#   espeak-ng      the fallback text-to-speech voice
# Installs what is missing when run as root (or with passwordless sudo); otherwise says what to run.
set -euo pipefail
want=(chromium libportaudio2 espeak-ng)
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
  echo "deskbench: no apt-get here; install ${missing[*]} with your package manager." >&2
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
  echo "deskbench: missing Debian packages: ${missing[*]}. Run: sudo apt-get install -y ${missing[*]}" >&2
  echo "(browser tests and voice features need them; they are skipped with that reason until then)" >&2
  exit 0
fi
echo "Installing Debian packages: ${missing[*]} ..."
$SUDO apt-get install -y -q "${missing[@]}" >/dev/null || {
  $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q "${missing[@]}" >/dev/null; }
