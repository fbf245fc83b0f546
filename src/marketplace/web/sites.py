"""The signed-in HTML sites: the reviewers' console and the publishers' portal.

Both are one kind of thing: pages under a prefix, a database session per browser, a login
form, a CSRF token per session. What differs between them is data, kept here: the prefix,
the cookies, who may enter, the words and the navigation. A session belongs to one site,
so a console cookie opens nothing in the portal and the other way round.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from marketplace.models import User
from marketplace.roles import Role


@dataclass(frozen=True)
class NavLink:
    key: str
    label: str
    href: str


@dataclass(frozen=True)
class Site:
    key: str  # the session table's `site`, and the cookies' names
    prefix: str
    name: str  # "review console"
    home_label: str  # the error page's way back
    login_intro: str
    login_notice: str  # the login page's line when a page sent the browser there
    not_allowed: str
    may_enter: Callable[[User], bool]
    nav: tuple[NavLink, ...]

    @property
    def session_cookie(self) -> str:
        return f"mkt_{self.key}"

    @property
    def login_cookie(self) -> str:
        # The login form's CSRF token (no session exists yet).
        return f"mkt_{self.key}_login"

    @property
    def login_path(self) -> str:
        return f"{self.prefix}/login"

    @property
    def logout_path(self) -> str:
        return f"{self.prefix}/logout"

    def owns(self, path: str) -> bool:
        return path == self.prefix or path.startswith(self.prefix + "/")


def _may_review(user: User) -> bool:
    """ADMIN or SUPER_ADMIN, as read from the database on this request."""
    return Role(user.role).at_least(Role.ADMIN)


def _may_publish(user: User) -> bool:
    """A DEVELOPER account or above (CONTRACT 17), as the developer API accepts."""
    return Role(user.role).at_least(Role.DEVELOPER)


CONSOLE = Site(
    key="console",
    prefix="/console",
    name="review console",
    home_label="Back to the review queue",
    login_intro="Administrators review plugins, versions, scenarios and developer identities here.",
    login_notice="Please log in to review.",
    not_allowed=(
        "The review console is for administrators. This account cannot use it; "
        "ask a SUPER_ADMIN for the ADMIN role."
    ),
    may_enter=_may_review,
    nav=(
        NavLink("queue", "Queue", "/console"),
        NavLink("categories", "Categories", "/console/categories"),
        NavLink("audit", "Audit log", "/console/audit"),
    ),
)

PORTAL = Site(
    key="portal",
    prefix="/portal",
    name="publisher portal",
    home_label="Back to your plugins",
    login_intro=(
        "Developers see their plugins' reviews, findings, rollouts, installs and ratings, "
        "and manage their tokens and organizations here."
    ),
    login_notice="Please log in to see your plugins.",
    not_allowed=(
        "The publisher portal is for developer accounts. Register as a developer "
        "(POST /api/v1/developer/register) and log in again."
    ),
    may_enter=_may_publish,
    nav=(
        NavLink("plugins", "Plugins", "/portal"),
        NavLink("tokens", "Tokens", "/portal/tokens"),
        NavLink("orgs", "Organizations", "/portal/orgs"),
    ),
)

SITES = (CONSOLE, PORTAL)
