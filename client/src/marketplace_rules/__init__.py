"""The marketplace's rules for manifests and packages, shared by the service and the CLI.

One source for both sides: the service turns findings into its errors and review notes
(`marketplace.packages`), the publishing tool reports them before anything is sent
(`marketplace_client.manifest_check`). Everything here is pure and imports only the
standard library (and `semver`, in `versions`), so the CLI can use it without the
server's dependencies.
"""
