"""Shared fixtures for tests and doctests: the suite never writes into the user's home.

At start-up, before any test module is imported, ``HOME`` and ``ARROWMIX_CACHE`` point into a
temporary directory for the whole session (subprocesses inherit both), so module- and
session-scoped fixtures, and code that falls back to ``~/.cache/arrowmix``, stay out of the
real ``~/.cache``. Every test then gets its own cache root on top of that.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections import Counter

import pytest
from hypothesis import HealthCheck, settings

# The fast tier (scripts/test) draws 30 examples a property; CI's full run, 150.
settings.register_profile("dev", max_examples=30, deadline=None)
settings.register_profile(
    "ci",
    max_examples=150,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

#: The user's real home directory, as it was when the test session started.
REAL_HOME = os.path.expanduser("~")
_SAVED = {name: os.environ.get(name) for name in ("HOME", "ARROWMIX_CACHE")}
SESSION_HOME = tempfile.mkdtemp(prefix="arrowmix-test-home-")
os.environ["HOME"] = SESSION_HOME
os.environ["ARROWMIX_CACHE"] = os.path.join(SESSION_HOME, ".cache", "arrowmix")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Restore the environment and remove the session's home directory."""
    for name, value in _SAVED.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    shutil.rmtree(SESSION_HOME, ignore_errors=True)


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path_factory.mktemp("arrowmix-cache")
    monkeypatch.setenv("ARROWMIX_CACHE", str(root))
    import arrowmix

    arrowmix.enable_caching()


#: Test files of the slow tier besides the tests marked ``slow`` themselves: deselected by
#: ``scripts/test`` unless ``ARROWMIX_TEST_SLOW=1`` (what CI sets); plain ``pytest`` runs them.
SLOW_FILES = (
    "tests/integrations/test_ray.py",
    # every token stage after a mix of bounded corpora through the round-trip harness (the
    # fast tier keeps the S3 resume cases of tests/remote/test_remote_mix_tokens.py)
    "tests/stream/tokens/test_remote_mix_token_roundtrip.py",
    # the same harness over one bounded corpus (tests/remote/test_remote_tokens.py keeps the
    # S3 cases of every token stage in the fast tier)
    "tests/stream/tokens/test_remote_token_roundtrip.py",
    # the harness over numpy rows of one bounded corpus (tests/remote/test_remote_numpy_rows.py
    # keeps numpy rows over S3 in the fast tier)
    "tests/stream/sources/test_remote_numpy_roundtrip.py",
)


#: Round-trip harness classes (and one harness test) of the slow tier, by node id: a mark on
#: the class would also reach its subclasses. Each names the fast test that keeps its guarantee.
SLOW_TESTS = (
    # the schedule that changes every 3 steps, per row: TestShortStretchesBulk (the same
    # schedule and sharded sources, every harness check) and TestConstantTable (a named
    # per-row mix of those sources) stay in the fast tier
    "tests/stream/mixing/test_mix_schedule_carry.py::TestShortStretchesNamed",
    # a named mix of sharded row sources: TestConstantTable mixes the same sources by name
    # (every harness check, elastic), TestNamedMix a named seeded mix
    "tests/stream/mixing/test_mix_changes.py::TestNamedMixSharded",
    # Lance under more token stages and in a three-way mix: TestLanceBatchColumnarCollate keeps
    # a Lance corpus resuming exactly, TestParquetConcatPack, TestParquetBudgetBucketCollate
    # and TestParquetMixedWithChunks the same stages and mix over a file read in place
    "tests/stream/tokens/test_lance_token_roundtrip.py::TestLanceConcatPack",
    "tests/stream/tokens/test_lance_token_roundtrip.py::TestLanceBudgetBucketCollate",
    "tests/stream/tokens/test_lance_token_roundtrip.py::TestLanceMixedWithParquetAndChunks",
    # gathered numpy rows resumed: TestNumpyRowsRoundTrip resumes numpy rows at every step,
    # mid-block, and test_rows_equal_the_views_numpy_rows checks the gathered values
    "tests/stream/sources/test_numpy_rows_gather.py::TestGatheredRowsRoundTrip",
    # the same check test_harness_checks_buffering_stages_after_a_dealer runs (and requires
    # not to skip) in the fast tier
    "tests/stream/stages/test_stage_kit_contract.py::TestDealerHarness"
    "::test_elastic_resume_behind_buffering_stages",
    # IterableDataset pipelines resumed after every row, through JSON: TestChainRows,
    # TestMergeRows, TestMapConcurrent and TestFilterConcurrent resume the same stages at
    # every step in the fast tier
    "tests/hf/test_iterable_examples.py::test_concatenate_iterable_resumes_at_every_row",
    "tests/hf/test_iterable_async.py::test_async_map_resumes_at_every_row",
    # a replaced remote object's short answer: test_a_short_answer_is_retried_and_not_called_a_
    # replacement (the retry) and test_remote_open's replaced-chunk tests (the replacement
    # named) stay in the fast tier
    "tests/remote/test_remote_faults.py::test_a_short_answer_from_a_replaced_object_is_a_replacement",
    # map and filter over a bounded remote corpus: test_remote_tokens.py keeps every token stage
    # over S3 within the limit in the fast tier
    "tests/remote/test_remote_cache.py::test_map_and_filter_process_chunk_by_chunk_within_the_limit",
    # a copy downloaded by another process: test_a_flipped_byte_is_not_served_to_a_new_interpreter
    # keeps the check of copies in a new interpreter in the fast tier
    "tests/remote/test_remote_cache_damage.py"
    "::test_a_copy_another_process_downloaded_meanwhile_is_trusted_unhashed",
)


def _in_slow_tier(nodeid: str) -> bool:
    if nodeid.split("::", 1)[0] in SLOW_FILES:
        return True
    return any(nodeid == t or nodeid.startswith((t + "::", t + "[")) for t in SLOW_TESTS)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of ``SLOW_FILES`` and ``SLOW_TESTS`` ``slow`` before ``-m`` selects."""
    for item in items:
        if _in_slow_tier(item.nodeid):
            item.add_marker(pytest.mark.slow)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per reason tests were skipped, counted, instead of one line per test.

    The round-trip harness skips the checks a stage class opts out of (``Test<Stage> defines
    no make_sharded``): those reasons are counted together, with the class names left out.
    """
    reasons: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        if isinstance(report.longrepr, tuple):
            reason = report.longrepr[2].removeprefix("Skipped: ")
            reasons[re.sub(r"^\w+ defines no", "a test class defines no", reason)] += 1
    if reasons:
        terminalreporter.write_sep("-", f"{sum(reasons.values())} skipped, by reason")
        for reason, n in reasons.most_common():
            terminalreporter.write_line(f"{n:5d}  {reason}")
