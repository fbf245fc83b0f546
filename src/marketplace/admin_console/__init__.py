"""The reviewer console: server-rendered pages under /console for ADMIN and SUPER_ADMIN.

Plain HTML forms, no scripts. Sessions live in the database (`console_sessions`); every
form carries the session's CSRF token; every response carries strict security headers.
The pages call the same services as the admin API, so a decision here writes the same
state and audit records as one made through /api/v1/admin.
"""
