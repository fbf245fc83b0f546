"""Errors the command-line tool reports: a stable code and a one-line message."""

from __future__ import annotations

from typing import Any, Self


class CliError(Exception):
    """A failure shown to the user as `CODE: message` and a non-zero exit."""

    exit_code = 1  # a kind of failure scripts must tell apart overrides it
    # Set once `next_steps.explain` named the item and added the next step.
    explained = False

    def __init__(self, code: str, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details: dict[str, Any] = details or {}

    def with_message(self, message: str) -> Self:
        """The same error (class, code, details, status) saying `message`."""
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.args = (message,)
        clone.message = message
        return clone

    def headline(self) -> str:
        """The first line of the error as printed."""
        return f"{self.code}: {self.message}"

    def one_line(self) -> str:
        """The whole error on one line (used in summaries)."""
        return self.headline()

    def extra_lines(self) -> list[str]:
        """Further lines printed under the one-line message (e.g. every manifest problem)."""
        return []

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


class ManifestInvalid(CliError):
    """manifest.json has problems; all of them are listed at once."""

    def __init__(
        self, problems: list[str], *, findings: list[dict[str, str]] | None = None
    ) -> None:
        count = len(problems)
        noun = "problem" if count == 1 else "problems"
        details: dict[str, Any] = {"problems": problems}
        if findings is not None:
            details["findings"] = findings  # {code, severity, path, message}, for --json
        super().__init__("MANIFEST_INVALID", f"manifest.json has {count} {noun}", details=details)
        self.problems = problems

    def one_line(self) -> str:
        return f"{self.headline()}: " + "; ".join(self.problems)

    def extra_lines(self) -> list[str]:
        return [f"  - {problem}" for problem in self.problems]


class SecretsFound(CliError):
    """The folder holds secrets (`rules.secrets`): nothing is packed or uploaded."""

    def __init__(self, problems: list[str]) -> None:
        count = len(problems)
        noun = "secret" if count == 1 else "secrets"
        super().__init__(
            "SECRETS_FOUND",
            f"the plugin folder holds {count} {noun}; remove them (and revoke them where "
            "they were issued) before publishing",
            details={"problems": problems},
        )
        self.problems = problems

    def one_line(self) -> str:
        return f"{self.headline()}: " + "; ".join(self.problems)

    def extra_lines(self) -> list[str]:
        return [f"  - {problem}" for problem in self.problems]
