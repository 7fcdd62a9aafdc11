"""A Ray cluster for the integration tests: started once per session, on loopback only."""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="session")
def ray_session():
    """``ray`` with a local 2-CPU cluster (no dashboard, no usage stats), shut down at the end."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    # Workers import arrowmix from this checkout (it is not installed in every environment).
    before = os.environ.get("PYTHONPATH")
    paths = [ROOT, *filter(None, (before or "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths are limited
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            object_store_memory=512 * 2**20,
            _temp_dir=temp,
            logging_level="ERROR",
            log_to_driver=False,
        )
    # The raylet (and so every worker) has the environment now; restore this process's.
    if before is None:
        del os.environ["PYTHONPATH"]
    else:
        os.environ["PYTHONPATH"] = before
    try:
        yield ray
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
