"""Makes the lane's compute driver importable as ``nova.virt.lane_driver``.

Nova (Zed) loads ``compute_driver`` with
``importutils.import_object('nova.virt.%s' % compute_driver, virtapi)``: a
driver must be a module of the ``nova.virt`` package. The harness puts this
folder first on the computes' PYTHONPATH; Python imports ``sitecustomize``
at start-up, and the finder below answers for ``nova.virt.lane_driver`` with
the file beside it, so nothing is written into the installed packages.
Debian's own sitecustomize (apport's hook) is run as well.
"""
import importlib.abc
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_NAME = "nova.virt.lane_driver"


class _LaneDriverFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != _NAME:
            return None
        return importlib.util.spec_from_file_location(
            fullname, os.path.join(_HERE, "lane_driver.py"))


sys.meta_path.insert(0, _LaneDriverFinder())

# The system's sitecustomize, which this module shadows.
_system = "/usr/lib/python%d.%d/sitecustomize.py" % sys.version_info[:2]
if os.path.exists(_system):
    try:
        _spec = importlib.util.spec_from_file_location("_system_sitecustomize",
                                                       _system)
        _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
    except Exception:  # the apport hook is optional
        pass
