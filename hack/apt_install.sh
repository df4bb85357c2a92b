# Sourced by hack/*/install.sh: `apt_install TAG PACKAGE...` installs the
# Debian packages of PACKAGE... that are missing, without starting any
# daemon, and says so on lines starting with "TAG:". Idempotent: does
# nothing when every package is installed already. Needs root and apt-get
# when something is missing (it exits 1 without them).

apt_install() {
  local tag=$1
  shift
  local missing=() p
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "$tag: packages already installed"
    return 0
  fi
  if [[ $(id -u) -ne 0 ]]; then
    echo "$tag: installing needs root (apt-get); missing: ${missing[*]}" >&2
    exit 1
  fi

  export DEBIAN_FRONTEND=noninteractive
  # The packages' debconf questions take their defaults; policy-rc.d keeps
  # postinst from starting daemons on machines that do have an init system
  # (the tests start their own).
  local policy=/usr/sbin/policy-rc.d
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    trap "rm -f '$policy'" EXIT
  fi
  local start=$SECONDS
  apt-get update -qq || echo "$tag: apt-get update failed, using the lists there are" >&2
  apt-get install -y -q --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "${missing[@]}"
  echo "$tag: installed ${missing[*]} in $((SECONDS - start)) s"
}
