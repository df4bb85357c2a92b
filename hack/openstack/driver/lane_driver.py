"""The real-OpenStack lane's compute driver: Nova's fake live-migrating
driver, with the behaviours the stock fake drivers cannot give a test.

Loaded by nova-compute as ``compute_driver = lane_driver.LaneDriver`` (see
sitecustomize.py beside it). What a live migration of a server does is chosen
by the test through the server's metadata, read when the copy starts:

``lane_copy_seconds``
    How long the copy runs (default 5, as the stock fake driver's). An abort
    or a force-complete ends it early.
``lane_slow_times``
    How many attempts copy for ``lane_copy_seconds`` (default: every one);
    later ones take the default 5 s.
``lane_fail``
    How a failing attempt ends once its copy time is over: ``error`` or
    ``failed`` (the driver rolls back, as libvirt does on a failed copy: the
    record gets that status, the server stays ACTIVE on its source), or
    ``instance-error`` (the driver raises: Nova records ``error`` and puts the
    server in ERROR).
``lane_fail_times``
    How many attempts of this server fail (default: every one). Attempts are
    counted by the source host's driver and kept across its restarts.
``lane_unconverged``
    ``true``: the copy does not converge. Its remaining bytes fall at the
    link's rate to a third of the memory, then hover there (the guest
    dirties memory as fast as the link copies it: 4% above that low every
    other 5 s, never below it) until a force-complete, an abort, or
    libvirt's completion timeout ends it.
``lane_unconverged_times``
    How many attempts do not converge (default: every one); later ones copy
    as usual.

Progress is reported as the libvirt driver does: the copy's memory figures
(``memory_total/processed/remaining``, bytes) are saved on Nova's migration
record every 5 s (``GET /servers/{id}/migrations/{mid}`` shows them) and the
instance's ``progress`` with them. The link copies the flavor's memory in
``lane_copy_seconds``. ``live_migration_force_complete`` acts as libvirt's:
with ``[libvirt] live_migration_permit_post_copy`` the record turns
``running (post-copy)`` and the rest is pulled by the destination; without
it the guest is paused on the source (power state PAUSED), stops dirtying,
and the copy ends; an abort of that paused copy unpauses it. Either way the
guest runs on the destination. ``[libvirt] live_migration_completion_timeout``
(per GiB, at least 2 GiB counted) and ``live_migration_timeout_action`` are
honoured as libvirt does.

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
from oslo_utils import units

import nova.conf
from nova.compute import power_state
from nova import exception
from nova.virt import fake

CONF = nova.conf.CONF
LOG = logging.getLogger(__name__)

_STATE_FILE = "lane_guests.json"
_DEFAULT_COPY_SECONDS = 5.0
# libvirt's monitor: a look every 0.5 s, progress saved every 10th look.
_TICK_SECONDS = 0.5
_SAVE_EVERY = 10
_FAIL_MODES = ("error", "failed", "instance-error")


class LaneMigrationFailure(exception.NovaException):
    msg_fmt = "lane driver: live migration of %(uuid)s failed as told " \
              "(lane_fail=instance-error, attempt %(attempt)s)"


def _number(meta, key, kind, default, instance):
    """A metadata value as `kind`, or `default` (logged) when it is not."""
    raw = meta.get(key)
    if raw is None:
        return default
    try:
        return kind(raw)
    except ValueError:
        LOG.error("%s %r is not a %s; using %r", key, raw, kind.__name__,
                  default, instance=instance)
        return default


def _plan(instance):
    """What the server's metadata asks of its live migration."""
    meta = dict(instance.metadata or {})
    fail = meta.get("lane_fail")
    if fail is not None and fail not in _FAIL_MODES:
        LOG.error("lane_fail %r is not one of %s; not failing", fail,
                  _FAIL_MODES, instance=instance)
        fail = None
    unconverged = meta.get("lane_unconverged", "false").lower()
    if unconverged not in ("true", "false"):
        LOG.error("lane_unconverged %r is not true or false; converging",
                  unconverged, instance=instance)
    return {
        "copy": _number(meta, "lane_copy_seconds", float,
                        _DEFAULT_COPY_SECONDS, instance),
        "fail": fail,
        "fail_times": _number(meta, "lane_fail_times", int, None, instance),
        "slow_times": _number(meta, "lane_slow_times", int, None, instance),
        "unconverged": unconverged == "true",
        "unconverged_times": _number(meta, "lane_unconverged_times", int,
                                     None, instance),
    }


class _Copy(object):
    """The memory copy of one live migration, as libvirt's job info sees it.

    The link copies ``total`` bytes in ``copy_seconds``. A converging copy's
    remaining bytes fall with it to 0; a held one's fall to a third of the
    memory and hover there (dirtied as fast as copied). Once the guest stops
    dirtying (paused, or post-copy), the remaining bytes drain at the link's
    rate.
    """

    HOVER = 1.0 / 3

    def __init__(self, total, copy_seconds, held):
        self.total = total
        self.rate = total / max(copy_seconds, 0.1)
        self.held = held
        self.drain_from = None  # (t, remaining) when dirtying stopped

    def remaining(self, t):
        if self.drain_from is not None:
            t0, r0 = self.drain_from
            return max(0, int(r0 - self.rate * (t - t0)))
        left = self.total - self.rate * t
        floor = self.total * self.HOVER
        if not self.held or left > floor:
            return max(0, int(left))
        # 4% above the floor every other 5 s (a save apart): the figure
        # moves, and no new low comes once a save has seen the floor.
        since = t - (self.total - floor) / self.rate
        return int(floor * (1 + 0.04 * (int(since / 5) % 2)))

    def processed(self, t):
        return int(self.rate * t)

    def stop_dirtying(self, t):
        if self.drain_from is None:
            self.drain_from = (t, self.remaining(t))


class LaneDriver(fake.FakeLiveMigrateDriver):
    """FakeLiveMigrateDriver with per-server behaviour and kept guests."""

    def __init__(self, virtapi, read_only=False):
        super(LaneDriver, self).__init__(virtapi, read_only)
        # uuid -> the tasks queued for its copy while one runs.
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
        # A guest deleted while it copies ends the copy, as libvirt's job
        # fails with its domain: the monitor rolls back.
        tasks = self._copies.get(instance.uuid)
        if tasks is not None:
            tasks.append("destroyed")
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
        plan = _plan(instance)
        uuid = instance.uuid
        attempt = self._attempts.get(uuid, 0) + 1
        copy_seconds = plan["copy"]
        if plan["slow_times"] is not None and attempt > plan["slow_times"]:
            copy_seconds = _DEFAULT_COPY_SECONDS
        held = plan["unconverged"] and (plan["unconverged_times"] is None or
                                        attempt <= plan["unconverged_times"])
        self._attempts[uuid] = attempt
        self._save()
        copy = _Copy(instance.flavor.memory_mb * units.Mi, copy_seconds, held)
        # Tasks queued by force-complete and abort, as libvirt's
        # active_migrations.
        tasks = []
        self._copies[uuid] = tasks
        LOG.info("lane driver: copy to %s at %d B/s for %.1f s (attempt %d, "
                 "fail %s, unconverged %s)", dest, copy.rate, copy_seconds,
                 attempt, plan["fail"], held, instance=instance)
        try:
            outcome = self._monitor(instance, migrate_data, copy, tasks)
        finally:
            self._copies.pop(uuid, None)
        if outcome == "cancelled":
            recover_method(context, instance, dest, migrate_data,
                           migration_status="cancelled")
            return
        if outcome == "failed":
            recover_method(context, instance, dest, migrate_data)
            return
        failing = plan["fail"] is not None and (
            plan["fail_times"] is None or attempt <= plan["fail_times"])
        if failing and outcome != "forced":
            LOG.warning("lane driver: live migration fails as told (%s)",
                        plan["fail"], instance=instance)
            if plan["fail"] == "instance-error":
                raise LaneMigrationFailure(uuid=uuid, attempt=attempt)
            recover_method(context, instance, dest, migrate_data,
                           migration_status=plan["fail"])
            return
        post_method(context, instance, dest, block_migration, migrate_data)

    def _monitor(self, instance, migrate_data, copy, tasks):
        """libvirt's _live_migration_monitor over the modelled copy: runs
        queued tasks, applies the completion timeout, saves progress.
        Gives "completed", "forced", "cancelled" or "failed".
        """
        migration = getattr(migrate_data, "migration", None)
        post_copy = CONF.libvirt.live_migration_permit_post_copy
        data_gb = max(2.0, instance.flavor.memory_mb * units.Mi / units.Gi)
        completion_timeout = int(
            CONF.libvirt.live_migration_completion_timeout * data_gb)
        start = time.monotonic()
        forced = False
        n = 0
        while True:
            t = time.monotonic() - start
            while tasks:
                task = tasks.pop(0)
                if task == "abort":
                    return self._cancelled(instance, forced, post_copy)
                if task == "destroyed":
                    return "failed"
                if forced:
                    LOG.warning("lane driver: copy already forced",
                                instance=instance)
                    continue
                forced = True
                copy.stop_dirtying(t)
                if post_copy and migration is not None:
                    LOG.info("Switching to post-copy migration mode",
                             instance=instance)
                    migration.status = "running (post-copy)"
                    migration.save()
                else:
                    self._set_state(instance, power_state.PAUSED)
            remaining = copy.remaining(t)
            if remaining <= 0:
                return "forced" if forced else "completed"
            if (completion_timeout and t > completion_timeout and
                    not (forced and post_copy)):
                LOG.warning("Live migration not completed after %d sec",
                            completion_timeout, instance=instance)
                if CONF.libvirt.live_migration_timeout_action == \
                        "force_complete":
                    tasks.append("force-complete")
                    completion_timeout = 0
                else:
                    return self._cancelled(instance, forced, post_copy)
            if n % _SAVE_EVERY == 0 and migration is not None:
                self._save_stats(instance, migration, copy, t)
            n += 1
            time.sleep(_TICK_SECONDS)

    def _cancelled(self, instance, forced, post_copy):
        # libvirt's recover task after a pause for force-complete.
        if forced and not post_copy:
            self._set_state(instance, power_state.RUNNING)
        return "cancelled"

    @staticmethod
    def _save_stats(instance, migration, copy, t):
        """libvirt's migration.save_stats: the record and the progress."""
        remaining = copy.remaining(t)
        migration.memory_total = copy.total
        migration.memory_processed = copy.processed(t)
        migration.memory_remaining = remaining
        migration.disk_total = 0
        migration.disk_processed = 0
        migration.disk_remaining = 0
        migration.save()
        instance.progress = 100 - round(remaining * 100 / copy.total)
        instance.save()

    def live_migration_force_complete(self, instance):
        tasks = self._copies.get(instance.uuid)
        if tasks is None:
            raise exception.NoActiveMigrationForInstance(
                instance_id=instance.uuid)
        tasks.append("force-complete")

    def live_migration_abort(self, instance):
        tasks = self._copies.get(instance.uuid)
        if tasks is not None:
            tasks.append("abort")
