"""All ORM models; importing this package registers every table on Base.metadata."""

from marketplace.models.accounts import DeveloperProfile, RefreshToken, User
from marketplace.models.audit import AuditLog
from marketplace.models.base import Base
from marketplace.models.catalog import (
    FULL_PERCENT,
    SEED_CATEGORIES,
    Category,
    Channel,
    Distribution,
    ListingCount,
    Plugin,
    PluginType,
    PluginVersion,
    ReviewStatus,
    RolloutState,
)
from marketplace.models.commerce import Install, Purchase, Rating
from marketplace.models.console import ConsoleSession
from marketplace.models.delivery import (
    PluginDailyStats,
    PluginSignal,
    PluginVersionStats,
    SignalKind,
)
from marketplace.models.generation import CatalogGeneration
from marketplace.models.inspections import InspectionStatus, PluginInspection
from marketplace.models.orgs import Organization, OrganizationMember, OrgRole
from marketplace.models.revocations import Revocation
from marketplace.models.scenarios import SCENARIO_METADATA, Scenario, ScenarioVersion
from marketplace.models.tokens import PublishingToken
from marketplace.models.transparency import LogEntry, LogHead, LogNode
from marketplace.roles import IdentityStatus, Role

__all__ = [
    "FULL_PERCENT",
    "SCENARIO_METADATA",
    "SEED_CATEGORIES",
    "AuditLog",
    "Base",
    "CatalogGeneration",
    "Category",
    "Channel",
    "ConsoleSession",
    "DeveloperProfile",
    "Distribution",
    "IdentityStatus",
    "InspectionStatus",
    "Install",
    "ListingCount",
    "LogEntry",
    "LogHead",
    "LogNode",
    "OrgRole",
    "Organization",
    "OrganizationMember",
    "Plugin",
    "PluginDailyStats",
    "PluginInspection",
    "PluginSignal",
    "PluginType",
    "PluginVersion",
    "PluginVersionStats",
    "PublishingToken",
    "Purchase",
    "Rating",
    "RefreshToken",
    "ReviewStatus",
    "Revocation",
    "Role",
    "RolloutState",
    "Scenario",
    "ScenarioVersion",
    "SignalKind",
    "User",
]
