"""What the HTML sites share: the signed-in sites (the reviewers' console under /console,
the publishers' portal under /portal) and the public pages. One layout, one login, one
kind of session, one set of security headers; each site's pages live in its own package.
"""
