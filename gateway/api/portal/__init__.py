"""The researcher portal (/portal): pages for people in a browser, built on the API.

The gateway serves each page as a small HTML document and the portal's own scripts and
style sheet (static/, no build step, nothing from a CDN); the scripts read and write
through the same /api/v1 endpoints as the CLI, and follow the event stream for live
updates. The session is an access token in an HttpOnly cookie (session.py).
"""
