"""Identity: who a caller is and what they may do.

Accounts and passwords (`accounts`), sign-in throttling (`login_throttle`), the built-in
OAuth2/OIDC issuer (`server`, `grants`, `oauth_models`, `device_approval`, `keys`,
`tokens`, `metadata`), verification of tokens from any trusted issuer (`verify`,
`authenticator`) and project roles (`project_access`). The caller itself is
`gateway.domain.principal.Principal`. Below the services: reads through repositories only.
"""
