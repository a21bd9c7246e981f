# Sourced by the setup scripts: apt_install PKG... installs Debian packages (as root, or through
# sudo), quietly, waiting for a dpkg lock another install holds. The caller defines log and fail.

apt_install() {
  log "installing Debian packages: $*"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || fail "need root (or sudo) to apt-get install $*"
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null || fail "apt-get update failed"
  $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$@" >/dev/null \
    || fail "apt-get install $* failed"
}
