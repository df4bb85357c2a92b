"""The real-OpenStack lane's compute driver: Nova's fake live-migrating
driver, with the behaviours the stock fake drivers cannot give a test.

Loaded by nova-compute as ``compute_driver = lane_driver.LaneDriver`` (see
sitecustomize.py beside it). What a live migration of a server does is chosen
by the test through the server's metadata, read when the copy starts:

``lane_copy_seconds``
    How long the copy runs (default 5, as the stock fake driver's). An abort
    or a force-complete ends it early.
``lane_fail``
    How a failing attempt ends once its copy time is over: ``error`` or
    ``failed`` (the driver rolls back, as libvirt does on a failed copy: the
    record gets that status, the server stays ACTIVE on its source), or
    ``instance-error`` (the driver raises: Nova records ``error`` and puts the
    server in ERROR).
``lane_fail_times``
    How many attempts of this server fail (default: every one). Attempts are
    counted by the source host's driver and kept across its restarts.

Unlike the stock fake drivers it keeps its guests, and the attempts, in a
file in the compute's state folder (``CONF.state_path``), so a restarted
compute still has them; each live migration has its own abort and
force-complete flags (the stock driver shares one pair among all); and a
paused or suspended guest reports libvirt's power state.
"""
import json
import os
import time

from oslo_log import log as logging

import nova.conf
from nova.compute import power_state
from nova import exception
from nova.virt import fake

CONF = nova.conf.CONF
LOG = logging.getLogger(__name__)

_STATE_FILE = "lane_guests.json"
_DEFAULT_COPY_SECONDS = 5.0
_FAIL_MODES = ("error", "failed", "instance-error")


class LaneMigrationFailure(exception.NovaException):
    msg_fmt = "lane driver: live migration of %(uuid)s failed as told " \
              "(lane_fail=instance-error, attempt %(attempt)s)"


def _plan(instance):
    """What the server's metadata asks of its live migration."""
    meta = dict(instance.metadata or {})
    copy = meta.get("lane_copy_seconds")
    fail = meta.get("lane_fail")
    times = meta.get("lane_fail_times")
    try:
        copy = float(copy) if copy is not None else _DEFAULT_COPY_SECONDS
    except ValueError:
        LOG.error("lane_copy_seconds %r is not a number; using %s", copy,
                  _DEFAULT_COPY_SECONDS, instance=instance)
        copy = _DEFAULT_COPY_SECONDS
    if fail is not None and fail not in _FAIL_MODES:
        LOG.error("lane_fail %r is not one of %s; not failing", fail,
                  _FAIL_MODES, instance=instance)
        fail = None
    try:
        times = int(times) if times is not None else None
    except ValueError:
        LOG.error("lane_fail_times %r is not an integer; failing every "
                  "attempt", times, instance=instance)
        times = None
    return copy, fail, times


class LaneDriver(fake.FakeLiveMigrateDriver):
    """FakeLiveMigrateDriver with per-server behaviour and kept guests."""

    def __init__(self, virtapi, read_only=False):
        super(LaneDriver, self).__init__(virtapi, read_only)
        # uuid -> {"abort": bool, "complete": bool} while a copy runs.
        self._copies = {}
        # uuid -> live-migration attempts started from this host.
        self._attempts = {}
        # uuid -> (vcpus, memory_mb, root_gb): the claims a restart re-makes.
        self._sizes = {}
        self._load()

    # Guests kept in a file -------------------------------------------------

    def _path(self):
        return os.path.join(CONF.state_path, _STATE_FILE)

    def _load(self):
        try:
            with open(self._path()) as f:
                data = json.load(f)
        except FileNotFoundError:
            return
        for uuid, g in data.get("guests", {}).items():
            self.instances[uuid] = fake.FakeInstance(g["name"], g["state"],
                                                     uuid)
            self._sizes[uuid] = (g["vcpus"], g["mem"], g["disk"])
            self.resources.claim(vcpus=g["vcpus"], mem=g["mem"],
                                 disk=g["disk"])
        self._attempts = dict(data.get("attempts", {}))
        LOG.info("lane driver: %d guests kept from before a restart",
                 len(self.instances))

    def _save(self):
        guests = {}
        for uuid, i in self.instances.items():
            size = self._sizes.get(uuid, (0, 0, 0))
            guests[uuid] = {"name": i.name, "state": i.state,
                            "vcpus": size[0], "mem": size[1],
                            "disk": size[2]}
        tmp = self._path() + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"guests": guests, "attempts": self._attempts}, f)
        os.replace(tmp, self._path())

    def _set_state(self, instance, state):
        if instance.uuid not in self.instances:
            raise exception.InstanceNotFound(instance_id=instance.uuid)
        self.instances[instance.uuid].state = state
        self._save()

    def spawn(self, context, instance, image_meta, injected_files,
              admin_password, allocations, network_info=None,
              block_device_info=None, power_on=True, accel_info=None):
        super(LaneDriver, self).spawn(
            context, instance, image_meta, injected_files, admin_password,
            allocations, network_info=network_info,
            block_device_info=block_device_info, power_on=power_on,
            accel_info=accel_info)
        f = instance.flavor
        self._sizes[instance.uuid] = (f.vcpus, f.memory_mb, f.root_gb)
        self._save()

    def finish_revert_migration(self, context, instance, network_info,
                                migration, block_device_info=None,
                                power_on=True):
        super(LaneDriver, self).finish_revert_migration(
            context, instance, network_info, migration,
            block_device_info=block_device_info, power_on=power_on)
        self._save()

    def post_live_migration_at_destination(self, context, instance,
                                           network_info,
                                           block_migration=False,
                                           block_device_info=None):
        super(LaneDriver, self).post_live_migration_at_destination(
            context, instance, network_info, block_migration,
            block_device_info)
        # A paused guest arrives paused, as with libvirt.
        if instance.vm_state == "paused":
            self._set_state(instance, power_state.PAUSED)

    def destroy(self, context, instance, network_info, block_device_info=None,
                destroy_disks=True, destroy_secrets=True):
        super(LaneDriver, self).destroy(
            context, instance, network_info,
            block_device_info=block_device_info,
            destroy_disks=destroy_disks, destroy_secrets=destroy_secrets)
        self._sizes.pop(instance.uuid, None)
        self._attempts.pop(instance.uuid, None)
        self._save()

    def power_off(self, instance, timeout=0, retry_interval=0):
        self._set_state(instance, power_state.SHUTDOWN)

    def power_on(self, context, instance, network_info,
                 block_device_info=None, accel_info=None):
        self._set_state(instance, power_state.RUNNING)

    # libvirt's power states, where the stock fake driver stays RUNNING.
    def pause(self, instance):
        self._set_state(instance, power_state.PAUSED)

    def unpause(self, instance):
        self._set_state(instance, power_state.RUNNING)

    def suspend(self, context, instance):
        self._set_state(instance, power_state.SUSPENDED)

    def resume(self, context, instance, network_info, block_device_info=None):
        self._set_state(instance, power_state.RUNNING)

    # Live migration ----------------------------------------------------------

    def live_migration(self, context, instance, dest,
                       post_method, recover_method, block_migration=False,
                       migrate_data=None):
        copy_seconds, fail, fail_times = _plan(instance)
        uuid = instance.uuid
        attempt = self._attempts.get(uuid, 0) + 1
        self._attempts[uuid] = attempt
        self._save()
        flags = {"abort": False, "complete": False}
        self._copies[uuid] = flags
        LOG.info("lane driver: copy to %s for %.1f s (attempt %d, fail %s)",
                 dest, copy_seconds, attempt, fail, instance=instance)
        deadline = time.monotonic() + copy_seconds
        try:
            while (not flags["abort"] and not flags["complete"] and
                   time.monotonic() < deadline):
                time.sleep(0.1)
        finally:
            self._copies.pop(uuid, None)
        if flags["abort"]:
            recover_method(context, instance, dest, migrate_data,
                           migration_status="cancelled")
            return
        failing = fail is not None and (fail_times is None or
                                        attempt <= fail_times)
        if failing and not flags["complete"]:
            LOG.warning("lane driver: live migration fails as told (%s)",
                        fail, instance=instance)
            if fail == "instance-error":
                raise LaneMigrationFailure(uuid=uuid, attempt=attempt)
            recover_method(context, instance, dest, migrate_data,
                           migration_status=fail)
            return
        post_method(context, instance, dest, block_migration, migrate_data)

    def live_migration_force_complete(self, instance):
        flags = self._copies.get(instance.uuid)
        if flags is not None:
            flags["complete"] = True

    def live_migration_abort(self, instance):
        flags = self._copies.get(instance.uuid)
        if flags is not None:
            flags["abort"] = True
