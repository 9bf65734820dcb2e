"""Who people and programs are: users, OAuth clients, device codes, refresh and revoked
tokens, sign-in failures, and projects with their members."""
