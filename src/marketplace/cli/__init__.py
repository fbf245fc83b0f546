"""The server's commands (serve, db, user, storage, keys), added to the client's `marketplace`
command through the `marketplace.commands` entry point (`marketplace_client.main`)."""
