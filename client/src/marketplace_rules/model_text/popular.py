"""Tool names of popular MCP servers (reference servers, GitHub, Slack, mail and chat
servers, databases, browsers): a reference to one from another server's text is a
reference to another tool. Only names specific enough not to be ordinary words."""

from __future__ import annotations

from typing import Final

POPULAR_TOOLS: Final = frozenset(
    {
        # mail and chat
        "send_email", "send_mail", "read_email", "list_emails", "search_emails",
        "draft_email", "reply_email", "forward_email", "send_message", "list_chats",
        "get_chat", "list_messages", "read_messages", "search_messages", "send_file",
        "slack_post_message", "slack_reply_to_thread", "slack_list_channels",
        "slack_get_channel_history", "post_message", "send_dm", "send_sms",
        "whatsapp_send_message", "telegram_send_message", "discord_send_message",
        # filesystem
        "read_file", "read_text_file", "read_media_file", "read_multiple_files",
        "write_file", "edit_file", "create_directory", "list_directory",
        "directory_tree", "move_file", "search_files", "get_file_info",
        "list_allowed_directories", "delete_file",
        # shell and code
        "execute_command", "run_command", "run_shell", "shell_exec", "exec_command",
        "run_terminal_cmd", "execute_code", "run_python", "run_script",
        # git and GitHub
        "git_status", "git_diff", "git_commit", "git_add", "git_log", "git_push",
        "create_or_update_file", "push_files", "get_file_contents",
        "search_repositories", "create_repository", "create_issue", "update_issue",
        "add_issue_comment", "create_pull_request", "merge_pull_request",
        "create_branch", "fork_repository", "list_commits", "search_code",
        # databases
        "execute_sql", "run_query", "query_database", "list_tables", "describe_table",
        "apply_migration", "read_query", "write_query",
        # web and browser
        "fetch_url", "web_search", "brave_web_search", "browser_navigate",
        "browser_click", "browser_type", "browser_snapshot", "puppeteer_navigate",
        "puppeteer_evaluate", "playwright_navigate",
        # memory and notes
        "create_entities", "add_observations", "read_graph", "search_nodes",
        "create_note", "save_memory",
        # payments and accounts
        "transfer_funds", "send_payment", "create_payment", "get_balance",
    }
)

HOST_TOOLS: Final = frozenset(
    {
        "read", "write", "edit", "multiedit", "bash", "glob", "grep", "ls", "webfetch",
        "websearch", "task", "todowrite", "todoread", "notebookedit", "notebookread",
        "skill", "agent",
    }
)
"""The agent host's own tools (`the Read tool`, `WebFetch`): skills name them to say how
to work, which is not shadowing another server's tool."""
