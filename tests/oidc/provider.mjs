// A real third-party OpenID provider (panva's oidc-provider) for gridgate's auth tests.
//
//   node provider.mjs [port]        (or OIDC_PORT=...; 0 or nothing = any free port)
//
// Listens on 127.0.0.1 only and prints one line `READY <issuer>` once it accepts
// requests. One confidential client may use client_credentials. Resource indicators
// (RFC 8707) make its access tokens JWTs (RFC 9068, typ at+jwt):
//   - resource GRIDGATE_RESOURCE (the default): aud = OIDC_AUDIENCE ("gridgate")
//   - resource OTHER_RESOURCE:                    aud = "other-api"
// Environment: OIDC_AUDIENCE, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

import Provider from 'oidc-provider';

export const GRIDGATE_RESOURCE = 'urn:gridgate:api';
export const OTHER_RESOURCE = 'urn:example:other-api';

const port = Number(process.argv[2] ?? process.env.OIDC_PORT ?? 0);
const audience = process.env.OIDC_AUDIENCE ?? 'gridgate';
const clientId = process.env.OIDC_CLIENT_ID ?? 'gridgate-automation';
const clientSecret = process.env.OIDC_CLIENT_SECRET ?? randomBytes(24).toString('base64url');
const apiScopes = 'jobs:read jobs:write';

// A fresh signing key per run: nothing secret is committed.
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = {
  ...privateKey.export({ format: 'jwk' }),
  kid: `test-${randomBytes(6).toString('hex')}`,
  use: 'sig',
  alg: 'RS256',
};

const resourceServers = {
  [GRIDGATE_RESOURCE]: { audience, scope: apiScopes },
  [OTHER_RESOURCE]: { audience: 'other-api', scope: apiScopes },
};

function configuration() {
  return {
    clients: [{
      client_id: clientId,
      client_secret: clientSecret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: apiScopes,
    }],
    scopes: ['openid', 'offline_access', 'jobs:read', 'jobs:write'],
    jwks: { keys: [signingKey] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: false },
      revocation: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => GRIDGATE_RESOURCE,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (ctx, resourceIndicator) => {
          const server = resourceServers[resourceIndicator];
          if (!server) {
            throw new Provider.errors.InvalidTarget();
          }
          return {
            ...server,
            accessTokenFormat: 'jwt',
            accessTokenTTL: 600,
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
  };
}

const server = createServer();
server.listen(port, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, configuration());
  server.on('request', provider.callback());
  process.stdout.write(`READY ${issuer}\n`);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  });
}
