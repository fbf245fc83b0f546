"""All ORM models; importing this package registers every table on Base.metadata."""

from marketplace.models.accounts import DeveloperProfile, RefreshToken, User
from marketplace.models.audit import AuditLog
from marketplace.models.base import Base
from marketplace.models.catalog import (
    SEED_CATEGORIES,
    Category,
    Distribution,
    ListingCount,
    Plugin,
    PluginType,
    PluginVersion,
    ReviewStatus,
)
from marketplace.models.commerce import Install, Purchase, Rating
from marketplace.models.console import ConsoleSession
from marketplace.models.generation import CatalogGeneration
from marketplace.models.inspections import InspectionStatus, PluginInspection
from marketplace.models.revocations import Revocation
from marketplace.models.scenarios import SCENARIO_METADATA, Scenario, ScenarioVersion
from marketplace.models.tokens import PublishingToken
from marketplace.models.transparency import LogEntry, LogHead, LogNode
from marketplace.roles import IdentityStatus, Role

__all__ = [
    "SCENARIO_METADATA",
    "SEED_CATEGORIES",
    "AuditLog",
    "Base",
    "CatalogGeneration",
    "Category",
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
    "Plugin",
    "PluginInspection",
    "PluginType",
    "PluginVersion",
    "PublishingToken",
    "Purchase",
    "Rating",
    "RefreshToken",
    "ReviewStatus",
    "Revocation",
    "Role",
    "Scenario",
    "ScenarioVersion",
    "User",
]
