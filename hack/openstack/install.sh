#!/usr/bin/env bash
# Installs Debian bookworm's OpenStack Zed pieces that the real-OpenStack test
# lane runs on loopback (tests/harness/openstack.ts configures and starts
# them from hack/openstack/templates; nothing here starts a daemon).
# Idempotent: does nothing when every package is installed already.
# Needs root and apt-get; about 8-9 minutes on a fresh machine.
set -euo pipefail

# nova-compute depends on nova-compute-kvm | nova-compute-hypervisor:
# nova-compute-ironic provides the latter with a few small packages instead of
# libvirt and qemu (its own config is never read: every process gets explicit
# --config-file options). neutron-server with ML2 only: Nova calls Neutron in
# the live-migration pre-checks even for servers booted without networks.
PACKAGES=(
  mariadb-server rabbitmq-server
  keystone placement-api glance-api
  nova-api nova-conductor nova-scheduler nova-compute nova-compute-ironic
  neutron-server
  python3-pymysql uwsgi-core uwsgi-plugin-python3
  python3-openstackclient
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "openstack: packages already installed"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "openstack: installing needs root (apt-get); missing: ${missing[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# The packages' debconf questions all default to "no" (no database set-up,
# no endpoint registration); policy-rc.d keeps postinst from starting daemons
# on machines that do have an init system.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod +x "$policy"
  created_policy=1
fi
trap '[[ $created_policy -eq 1 ]] && rm -f "$policy"' EXIT

start=$SECONDS
apt-get update -qq || echo "openstack: apt-get update failed, using the lists there are" >&2
apt-get install -y -q --no-install-recommends \
  -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
  "${missing[@]}"
echo "openstack: installed ${#missing[@]} packages in $((SECONDS - start)) s"
