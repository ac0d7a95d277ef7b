"""The suite's xdist groups work: tests that share compiled programs run in one worker.

The suite runs with ``-n auto --dist loadgroup`` (pyproject.toml), and tests marked with the same
``pytest.mark.xdist_group`` share session fixtures and compiled programs only if they land in the same
worker. pytest-xdist routes them by a ``@GROUP`` suffix it adds to the node ids; pytest 9.2 ignores that
rewrite (pytest-dev/pytest-xdist#1386), and then every group is spread over the workers without a word and
the suite takes minutes longer. This test fails when that happens.
"""

import os

import pytest


@pytest.mark.xdist_group("xdist_groups_check")
def test_a_grouped_test_carries_its_group_to_the_scheduler(request):
    if "PYTEST_XDIST_WORKER" not in os.environ or not getattr(request.config.option, "loadgroup", False):
        pytest.skip("only under pytest-xdist with --dist loadgroup (the default addopts)")
    assert request.node.nodeid.endswith("@xdist_groups_check"), (
        f"pytest-xdist did not group this test (node id {request.node.nodeid!r}): the xdist_group marks are "
        "ignored, so grouped tests recompile their programs in every worker; see pyproject.toml's pin of pytest"
    )
