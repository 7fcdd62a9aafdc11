from __future__ import annotations

import argparse
import time

import pytest

from arrowmix._cli.humanize import ago, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("123", 123),
        ("10B", 10),
        ("1KB", 1000),
        ("1kib", 1024),
        ("2K", 2048),
        ("500MB", 500_000_000),
        ("1.5GiB", 3 * 2**29),
        ("20GB", 20 * 10**9),
        (" 3 tb ", 3 * 10**12),
        (".5M", 2**19),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "GB", "-1GB", "1.2.3GB", "5 PB", "1e9", "20 G B"])
def test_parse_size_rejects(text):
    with pytest.raises(argparse.ArgumentTypeError, match="invalid size"):
        parse_size(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("45s", 45), ("30m", 1800), ("12h", 43200), ("7d", 604800), ("2w", 1209600),
     ("1d12h", 129600), ("1.5h", 5400), ("1h 30m", 5400), ("0s", 0)],
)  # fmt: skip
def test_parse_duration(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "7", "d", "7x", "-1d", "7d3", "h7"])
def test_parse_duration_rejects(text):
    with pytest.raises(argparse.ArgumentTypeError, match="invalid duration"):
        parse_duration(text)


def test_ago():
    now = 2_000_000_000.0
    assert ago(now - 2, now) == "just now"
    assert ago(now - 42, now) == "42 s ago"
    assert ago(now - 86400 * 1.5, now) == "1 day ago"
    old = now - 40 * 86400
    assert ago(old, now) == time.strftime("%Y-%m-%d", time.localtime(old))
    assert ago(now + 3600, now) == time.strftime("%Y-%m-%d", time.localtime(now + 3600))
