"""Map on a real two-node Ray cluster, corpus and cache directory on S3 (moto), a node lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ray_multinode_driver.py")


def test_map_on_two_nodes_survives_a_lost_node_and_equals_a_local_run(tmp_path):
    pytest.importorskip("ray.cluster_utils")
    pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    # One Ray cluster per driver process: the driver runs apart from the session's cluster.
    done = subprocess.run(
        [sys.executable, DRIVER], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=400, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["nodes"] == 2
    # The worker node was removed mid-map: the first run failed with some segments done...
    assert report["first_error"] is not None
    assert 0 < report["done_before_rerun"] < report["segments"]
    # ...and the second computed only the missing ones (the finished objects were kept).
    assert report["kept"]
    assert report["equal"], "the Ray result differs from the local run"
    # Each node read chunks through its own local cache directory, none through the driver's.
    assert report["node_copies"][0] > 0 and report["node_copies"][1] > 0
    assert report["node_copies"][2] == 0
