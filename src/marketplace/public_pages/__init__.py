"""The public pages: the landing page at / and a page per listed plugin."""
