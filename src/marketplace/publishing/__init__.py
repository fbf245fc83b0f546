"""The publishing core: items (plugins, scenarios, ...) whose versions an administrator
reviews. Each kind of item is a small `ItemKind` descriptor; everything here is written
once against it: lookup and ownership, queues and lists, review moves and their audit
records, takedown, the package upload and download information."""
