/**
 * The endpoint editor's credential sections — auth (Basic, OAuth2 client credentials), TLS
 * (private CA, client certificate and key, uploaded as PEM files or pasted) and a legacy
 * signature — appended to ENDPOINT_SECTIONS by endpoint-fields.js. Secrets come back masked
 * (`••••••1234`): left as they are, the mask is sent back and keeps the stored secret, exactly
 * as for header values. A section whose fields are unchanged returns the stored object itself, so
 * the editor's comparison leaves it out of the PATCH.
 */
import { field, h } from './dom.js';

const text = (attrs) => h('input', { autocomplete: 'off', ...attrs });
const choose = (options, selected) =>
  h(
    'select',
    {},
    options.map(([value, label]) => h('option', { value, selected: value === selected }, label)),
  );
/** Only the keys with a value: optional fields left empty are not sent. */
const compact = (object) => Object.fromEntries(Object.entries(object).filter(([, v]) => v !== ''));
/** The stored object when `next` says the same (jsonb keeps its own key order), else `next`. */
const unchanged = (stored, next) =>
  stored &&
  Object.keys(next).length === Object.keys(stored).length &&
  Object.entries(next).every(([k, v]) => stored[k] === v)
    ? stored
    : next;

function auth(e) {
  const stored = e?.auth ?? null;
  const type = choose(
    [
      ['', 'None'],
      ['basic', 'Basic (user name and password)'],
      ['oauth2_client_credentials', 'OAuth2 client credentials'],
    ],
    stored?.type ?? '',
  );
  const basic = stored?.type === 'basic' ? stored : {};
  const oauth = stored?.type === 'oauth2_client_credentials' ? stored : {};
  const username = text({ value: basic.username });
  const password = text({ value: basic.password, type: 'password' });
  const tokenUrl = text({
    type: 'url',
    value: oauth.token_url,
    placeholder: 'https://auth.partner.example/oauth/token',
  });
  const clientId = text({ value: oauth.client_id });
  const clientSecret = text({ value: oauth.client_secret, type: 'password' });
  const scope = text({ value: oauth.scope ?? '' });
  const audience = text({ value: oauth.audience ?? '' });
  const basicFields = h(
    'div',
    { class: 'stack' },
    field('User name', username),
    field('Password', password, 'stored sealed; the masked value keeps it'),
  );
  const oauthFields = h(
    'div',
    { class: 'stack' },
    field('Token endpoint', tokenUrl, "the partner's OAuth2 token URL"),
    field('Client ID', clientId),
    field('Client secret', clientSecret, 'stored sealed; the masked value keeps it'),
    field('Scope', scope, 'optional, space-separated'),
    field('Audience', audience, 'optional'),
  );
  const show = () => {
    basicFields.hidden = type.value !== 'basic';
    oauthFields.hidden = type.value !== 'oauth2_client_credentials';
  };
  type.addEventListener('change', show);
  show();
  const value = () => {
    if (type.value === '') return { auth: null };
    if (type.value === 'basic') {
      return {
        auth: unchanged(stored, { type: 'basic', username: username.value, password: password.value }),
      };
    }
    const next = compact({
      type: 'oauth2_client_credentials',
      token_url: tokenUrl.value.trim(),
      client_id: clientId.value,
      client_secret: clientSecret.value,
      scope: scope.value.trim(),
      audience: audience.value.trim(),
    });
    return { auth: unchanged(stored, next) };
  };
  return { node: [field('Authentication', type), basicFields, oauthFields], value };
}

/** What a read shows of a certificate: its subject and when it ends. */
const described = (c) =>
  `${c.subject}, until ${c.not_after.slice(0, 10)} (SHA-256 ${c.fingerprint_sha256.slice(0, 23)}…)`;

/** A PEM field: paste into the text area or pick a file; "Remove" clears the stored one. */
function pemField(label, stored, hint) {
  const area = h('textarea', { rows: 3, spellcheck: 'false', placeholder: '-----BEGIN …-----' });
  const file = h('input', {
    type: 'file',
    accept: '.pem,.crt,.cer,.key,text/plain',
    'aria-label': `${label} file`,
  });
  file.addEventListener('change', async () => {
    if (file.files?.[0]) area.value = await file.files[0].text();
  });
  const remove = h('input', { type: 'checkbox', 'aria-label': `Remove the stored ${label.toLowerCase()}` });
  const node = h(
    'div',
    { class: 'stack' },
    field(label, area, stored ? `stored: ${stored}; paste or upload a new one to replace it` : hint),
    file,
    stored ? h('label', { class: 'check' }, remove, h('span', {}, 'Remove the stored one')) : null,
  );
  const read = () => (area.value.trim() ? area.value.trim() : stored && remove.checked ? null : undefined);
  return { node, read };
}

function tls(e) {
  const stored = e?.tls ?? {};
  const ca = pemField(
    'CA certificates',
    stored.ca_certificates?.map(described).join('; '),
    "the partner's private CA (PEM); when set, only it is trusted",
  );
  const cert = pemField(
    'Client certificate',
    stored.client_certificate && described(stored.client_certificate),
    'presented to the partner (mTLS)',
  );
  const key = pemField(
    'Client key',
    stored.client_key ? 'a key (never shown)' : undefined,
    'its unencrypted private key',
  );
  const value = () => {
    const patch = {};
    for (const [name, f] of [
      ['ca_certificates', ca],
      ['client_certificate', cert],
      ['client_key', key],
    ]) {
      const v = f.read();
      if (v !== undefined) patch[name] = v;
    }
    return Object.keys(patch).length ? { tls: patch } : {};
  };
  return {
    node: [
      h('p', { class: 'muted' }, 'For https URLs. Keys are stored sealed and never shown.'),
      ca.node,
      cert.node,
      key.node,
    ],
    value,
  };
}

function legacySignature(e) {
  const stored = e?.legacy_signature ?? null;
  const on = h('input', {
    type: 'checkbox',
    checked: Boolean(stored),
    'aria-label': 'Send a legacy signature',
  });
  const header = text({ value: stored?.header, placeholder: 'X-Signature' });
  const secret = text({ value: stored?.secret, type: 'password' });
  const encoding = choose(
    [
      ['hex', 'hex'],
      ['base64', 'base64'],
    ],
    stored?.encoding ?? 'hex',
  );
  const content = choose(
    [
      ['body', 'the body'],
      ['timestamp.body', 'timestamp.body'],
    ],
    stored?.content ?? 'body',
  );
  const prefix = text({ value: stored?.prefix ?? '', placeholder: 'sha256=' });
  const timestampHeader = text({
    value: stored?.timestamp_header ?? '',
    placeholder: 'X-Signature-Timestamp',
  });
  const fields = h(
    'div',
    { class: 'stack' },
    field('Signature header', header),
    field('Signing secret', secret, 'HMAC-SHA256 key; stored sealed, the masked value keeps it'),
    field('Encoding', encoding),
    field('Signed content', content),
    field('Prefix', prefix, 'optional, put before the digest'),
    field('Timestamp header', timestampHeader, 'optional'),
  );
  const show = () => {
    fields.hidden = !on.checked;
  };
  on.addEventListener('change', show);
  show();
  const value = () => {
    if (!on.checked) return { legacy_signature: null };
    const next = compact({
      header: header.value.trim(),
      secret: secret.value,
      encoding: encoding.value,
      prefix: prefix.value,
      content: content.value,
      timestamp_header: timestampHeader.value.trim(),
    });
    return { legacy_signature: unchanged(stored, next) };
  };
  return {
    node: [
      h('label', { class: 'check' }, on, h('span', {}, "Also sign in the partner's older format")),
      h('p', { class: 'muted' }, 'The Standard Webhooks headers are always sent as well.'),
      fields,
    ],
    value,
  };
}

/** The credential sections, folded unless the endpoint has one set. */
export const CREDENTIAL_SECTIONS = [
  { key: 'auth', title: 'Authentication', optional: true, fields: ['auth'], build: auth },
  {
    key: 'tls',
    title: 'TLS: private CA and client certificate',
    optional: true,
    fields: ['tls'],
    build: tls,
  },
  {
    key: 'legacy_signature',
    title: 'Legacy signature',
    optional: true,
    fields: ['legacy_signature'],
    build: legacySignature,
  },
];
