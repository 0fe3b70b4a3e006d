"""The command line parses before it loads an analysis: --help and argument errors are fast.

Each check runs in a fresh interpreter and counts what the parse imported (not a timed test:
the cost of a start-up is the modules it loads).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from core.analyses.calibration_tests import TESTS
from core.base.options import GROUP_ROWS, N_TEST_RESAMPLES
from core.cli import build_parser
from core.estimators import ESTIMATORS
from core.figures.diagrams import DIAGRAMS
from core.stats.lenses import LENSES

#: What a parse must not load: the numerics and everything above them.
HEAVY = ("numpy", "pandas", "scipy", "plotly", "pyarrow", "core.analyses", "core.estimators")

_PROBE = """
import contextlib, io, json, sys
import core.cli
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    code = core.cli.main({argv!r})
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {roots!r} or m.startswith({inner!r}))
print(json.dumps({{"code": code, "out": out.getvalue(), "err": err.getvalue(), "heavy": heavy}}))
"""


def _probe(*argv: str) -> dict:
    roots = {h for h in HEAVY if "." not in h}
    inner = tuple(h for h in HEAVY if "." in h)
    code = _PROBE.format(argv=list(argv), roots=roots, inner=inner)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (("--help",), 0, "commands:"),
        ((), 2, "usage: calibscope"),
        (("metrics", "f.csv", "--bins", "0"), 2, "argument --bins: must be a whole number"),
        (("report", "f.csv", "--test-resamples", "x"), 2, "argument --test-resamples"),
        (("check", "f.csv"), 2, "the following arguments are required: --max-ece"),
        (("metrics",), 2, "Give the predictions"),
        (("compare", "f.csv", "--no-such-option"), 2, "unrecognized arguments"),
    ],
)
def test_help_and_argument_errors_load_no_numerics(argv, code, says):
    got = _probe(*argv)
    assert got["code"] == code
    assert says in got["out"] + got["err"]
    assert got["heavy"] == [], f"the parse of {argv} loaded {got['heavy'][:8]}"


def test_a_command_help_lists_the_registries_names():
    """Choices are read from the registries when a help is printed (and are the registries')."""
    got = _probe("metrics", "--help")
    assert got["code"] == 0
    assert "{" + ",".join(ESTIMATORS.names()) + "}" in got["out"]
    assert "{" + ",".join(LENSES.names()) + "}" in got["out"]
    report = build_parser()._subparsers._group_actions[0].choices["report"].format_help()
    assert "{" + ",".join([*TESTS.names(), "none"]) + "}" in report
    assert ", ".join(DIAGRAMS.names(from_analysis=False)) in " ".join(report.split())


def test_a_bad_choice_is_checked_against_its_registry():
    got = _probe("metrics", "f.csv", "--estimator", "bogus")
    assert got["code"] == 2
    line = got["err"].strip()
    assert line.count("\n") == 0
    assert line.startswith("calibscope: error: argument --estimator: invalid choice: 'bogus'")
    assert ", ".join(repr(n) for n in ESTIMATORS.names()) in line
    # a good one parses
    args = build_parser().parse_args(["metrics", "f.csv", "--estimator", ESTIMATORS.names()[-1]])
    assert args.estimator == ESTIMATORS.names()[-1]


def test_the_parsers_defaults_are_the_options():
    args = build_parser().parse_args(["check", "f.csv", "--max-ece", "0.1"])
    assert args.test_resamples == N_TEST_RESAMPLES.default
    assert args.min_group_rows == GROUP_ROWS.default
