# Shared by the CI scripts (source it: `. "$(dirname "$0")/lib.sh"`): one way to install
# Debian packages, to echo and run a command, and to get the Python venv the interop checks
# use.
#   run CMD...                 echo "+ CMD" and run it
#   apt_install PKG...         apt-get install (one apt-get update per process), via sudo -n
#                              when not root
#   need CMD:PKG...            apt_install the PKG of every CMD that is not on PATH
#   ci_venv [PYPI_PKG...]      sets VENV (LIBTENSOR_CI_VENV, default ~/.cache/libtensor-ci-venv),
#                              creates it when missing and pip-installs the packages it cannot
#                              import (e.g. ci_venv torch numpy)
# shellcheck shell=bash

CI_SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then CI_SUDO="sudo -n"; fi
CI_APT_UPDATED=${CI_APT_UPDATED:-0}

run() {
  echo "+ $*"
  "$@"
}

apt_install() {
  if [ "$CI_APT_UPDATED" = 0 ]; then
    $CI_SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    CI_APT_UPDATED=1
    export CI_APT_UPDATED
  fi
  echo "+ apt-get install $*"
  $CI_SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

need() {
  local pair missing=()
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
  done
  if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
}

ci_venv() {
  VENV="${LIBTENSOR_CI_VENV:-${HOME:-/tmp}/.cache/libtensor-ci-venv}"
  export LIBTENSOR_CI_VENV="$VENV"
  if [ ! -x "$VENV/bin/python" ]; then
    echo "creating the venv $VENV"
    if ! python3 -m venv "$VENV" 2>/dev/null; then # Debian ships venv's pip bootstrap separately
      rm -rf "$VENV"
      apt_install python3-venv
      python3 -m venv "$VENV"
    fi
    run "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
  fi
  local p missing=()
  for p in "$@"; do
    "$VENV/bin/python" -c "import ${p//-/_}" 2>/dev/null || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    run "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${missing[@]}"
  fi
}
