#!/usr/bin/env bash
# Installs Debian's rabbitmq-server, the message broker the tests consume
# Nova's notifications from (tests/harness/rabbitmq.ts configures and starts
# it on loopback; nothing here starts a daemon). Idempotent: does nothing when
# it is installed already. Needs root and apt-get.
set -euo pipefail

if dpkg-query -W -f='${Status}' rabbitmq-server 2>/dev/null | grep -q "install ok installed"; then
  echo "rabbitmq: rabbitmq-server already installed"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "rabbitmq: installing needs root (apt-get install rabbitmq-server)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# policy-rc.d keeps postinst from starting the daemon on machines that do
# have an init system: the tests start their own.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod +x "$policy"
  created_policy=1
fi
trap '[[ $created_policy -eq 1 ]] && rm -f "$policy"' EXIT

apt-get update -qq || echo "rabbitmq: apt-get update failed, using the lists there are" >&2
apt-get install -y -q --no-install-recommends \
  -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
  rabbitmq-server
echo "rabbitmq: installed $(dpkg-query -W -f='${Version}' rabbitmq-server)"
