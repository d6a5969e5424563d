"""The one policy for "does this environment-variable name hold a secret?".

Used by validation (a plain `spec.env` entry with such a name is refused: it belongs in
`spec.secretEnv`), by diagnostics (its value is never shown) and by training_job.json (its value
is withheld). Names are split into words (`_`, `-`, `.` and camelCase boundaries); a name looks
secret when a word is, or ends with, a credential word (`password`, `token`, `apikey`, …), is a
short form that only means a credential as a whole word (`pwd`, `pass`, `auth`), or when two
words form one (`api key`, `private key`, `access key`). A name that says where a secret lives
(`*_FILE`, `*_PATH`, `*_DIR`, Google's `GOOGLE_APPLICATION_CREDENTIALS`) is not a secret, and
neither is the shell's own `PWD`/`OLDPWD` (the working directory).
"""

from __future__ import annotations

import re

# A word that is, or ends with, one of these holds a credential: DB_PASSWORD, dbpassword,
# OPENAI_APIKEY, SSH_PRIVATEKEY, CLIENT_SECRET, HF_TOKEN, authToken.
_STRONG = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "privatekey",
    "accesskey",
    "secretkey",
    "credential",
    "credentials",
)
# Only as a whole word: `pass` (DB_PASS; not bypass), `pwd` (MYSQL_PWD), `auth` (BASIC_AUTH).
_WHOLE = frozenset({"pass", "pwd", "pw", "auth"})
# Two words that together name a credential.
_PAIRS = frozenset(
    {
        ("api", "key"),
        ("access", "key"),
        ("private", "key"),
        ("secret", "key"),
        ("signing", "key"),
        ("encryption", "key"),
        ("session", "key"),
    }
)
# The last word says where a secret is, not what it is.
_LOCATION = frozenset({"file", "path", "dir", "filename", "location"})
_NOT_SECRET = frozenset({"google_application_credentials", "pwd", "oldpwd"})
# `auth` that is a setting, not a credential: AUTH_MODE, OSS_AUTH_TYPE.
_AUTH_SETTINGS = frozenset(
    {"mode", "type", "method", "url", "host", "endpoint", "enabled", "provider", "scheme"}
)

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^A-Za-z0-9]+")


def words(name: str) -> list[str]:
    """`OPENAI_APIKEY` → [openai, apikey]; `dbPassword` → [db, password]."""
    return [w.lower() for part in _SPLIT.split(name) for w in _CAMEL.split(part) if w]


def looks_secret(name: str) -> bool:
    """Whether an env-var name looks like it holds a secret (a value for spec.secretEnv)."""
    if name.lower() in _NOT_SECRET:
        return False
    ws = words(name)
    if not ws or ws[-1] in _LOCATION:
        return False
    for i, w in enumerate(ws):
        after = ws[i + 1] if i + 1 < len(ws) else None
        if w.endswith(_STRONG) or (after is not None and (w, after) in _PAIRS):
            return True
        if w in _WHOLE and not (w == "auth" and after in _AUTH_SETTINGS):
            return True
    return False


# Values that are credentials whatever their variable is called:
# - a URL whose userinfo has a password, `scheme://user:password@host` (RFC 3986 §3.2.1, which
#   deprecates exactly this form); a password that is a Kubernetes `$(VAR)` reference is filled
#   in by the kubelet from another variable, so it is not a password in clear;
# - a PEM private key: RFC 7468's "-----BEGIN PRIVATE KEY-----" and the RSA, EC, DSA, OPENSSH
#   and ENCRYPTED variants, and OpenPGP's "PRIVATE KEY BLOCK".
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:([^\s/@]+)@")
_KUBELET_REF = re.compile(r"\$\([A-Za-z_][A-Za-z0-9_]*\)")
_PEM_PRIVATE = re.compile(r"-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----")


def credential_in(value: str) -> str | None:
    """What kind of credential `value` holds in clear ("a password in a URL", "a PEM private
    key"), or None. The value itself is never returned or shown."""
    if _PEM_PRIVATE.search(value):
        return "a PEM private key"
    for m in _URL_PASSWORD.finditer(value):
        if not _KUBELET_REF.fullmatch(m.group(1)):
            return "a password in a URL (scheme://user:password@host)"
    return None
