#!/usr/bin/env bash
# The system packages the app and its tests need beyond Python (Debian names): Debian's chromium
# (plotly's kaleido chart export for the PDF, the real-browser tests), poppler-utils (pdftoppm,
# the PDF render checks), and the PDF's fonts (advisor/report/fonts.py FALLBACKS: DejaVu, then
# Chinese/Japanese, Korean and emoji fallbacks). Installs only what is missing, as root; as any
# other user it says what is missing and leaves it (those tests skip, the PDF names the gaps).
# Shared by `make setup` and .ci/run.
set -euo pipefail

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v pdftoppm >/dev/null 2>&1 || need_apt+=(poppler-utils)
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need_apt+=(fonts-dejavu-core)
[ -f /usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf ] || need_apt+=(fonts-droid-fallback)
[ -f /usr/share/fonts/truetype/nanum/NanumGothic.ttf ] || need_apt+=(fonts-nanum)
[ -f /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] || need_apt+=(fonts-noto-color-emoji)
if [ ${#need_apt[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: installing ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
else
  echo "system-deps: not root (or no apt-get), cannot install ${need_apt[*]}; browser/PDF-render tests will skip" >&2
fi
