"""The dashboard's pages: one :class:`PageSpec` line per page.

To add a page, write ``dashboard/app_pages/<name>.py`` and append one line to
``PAGES``. Sections appear in the sidebar in the order they first occur here.
Icons must be Material Symbols names (``":material/<name>:"``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageSpec:
    """One page of the navigation.

    Attributes
    ----------
    file : str
        Script path relative to the ``dashboard/`` folder.
    title : str
        Label in the navigation and the browser tab.
    icon : str
        Material Symbols icon, e.g. ``":material/insights:"``.
    url_path : str
        Unique path segment of the page's URL.
    section : str
        Navigation section heading.
    default : bool
        Whether this is the landing page (exactly one page).
    help : str
        Tooltip in the navigation.
    """

    file: str
    title: str
    icon: str
    url_path: str
    section: str
    default: bool = False
    help: str = ""


# One line per page; keep each entry on a single line so adding a page is a one-line change.
# fmt: off
PAGES: list[PageSpec] = [
    PageSpec("app_pages/data.py", "Data", ":material/upload_file:", "data", "Data", default=True, help="Upload predictions or pick a sample"),
    PageSpec("app_pages/reliability.py", "Reliability", ":material/insights:", "reliability", "Analysis", help="Reliability diagram, bin table and metrics"),
    PageSpec("app_pages/estimators.py", "Estimators", ":material/compare_arrows:", "estimators", "Analysis", help="Every estimator side by side; error against the number of bins; the sweep"),
    PageSpec("app_pages/tests.py", "Tests", ":material/science:", "tests", "Analysis", help="p-values of “the model is calibrated”"),
    PageSpec("app_pages/bias.py", "Bias vs n", ":material/trending_down:", "bias", "Analysis", help="Estimator bias against sample size; worlds with known truth"),
    PageSpec("app_pages/recalibration.py", "Recalibration", ":material/tune:", "recalibration", "Analysis", help="Fit recalibrators on calibration rows, judge them on test rows"),
    PageSpec("app_pages/validity.py", "Validity", ":material/verified:", "validity", "Analysis", help="Validity plots of histogram binning; guarantee calculator"),
    PageSpec("app_pages/compare.py", "Compare", ":material/leaderboard:", "compare", "Analysis", help="Several models on identical bins"),
    PageSpec("app_pages/subgroups.py", "Subgroups", ":material/groups:", "subgroups", "Analysis", help="Calibration per subgroup and per time window"),
    PageSpec("app_pages/papers.py", "Papers", ":material/school:", "papers", "Teaching", help="Each paper's key result in one click, the paper's number beside ours"),
    PageSpec("app_pages/report.py", "Report", ":material/description:", "report", "Export", help="Download a self-contained HTML report and JSON of every number"),
]
# fmt: on
