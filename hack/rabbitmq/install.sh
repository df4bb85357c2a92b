#!/usr/bin/env bash
# Installs Debian's rabbitmq-server, the message broker the tests consume
# Nova's notifications from (tests/harness/rabbitmq.ts configures and starts
# it on loopback; nothing here starts a daemon). Idempotent: does nothing when
# it is installed already. Needs root and apt-get.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../apt_install.sh"

apt_install rabbitmq rabbitmq-server
