#!/usr/bin/env bash
# Installs Debian bookworm's OpenStack Zed pieces that the real-OpenStack test
# lane runs on loopback (tests/harness/openstack.ts configures and starts
# them from hack/openstack/templates; nothing here starts a daemon).
# Idempotent: does nothing when every package is installed already.
# Needs root and apt-get; about 8-9 minutes on a fresh machine.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../apt_install.sh"

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

apt_install openstack "${PACKAGES[@]}"
