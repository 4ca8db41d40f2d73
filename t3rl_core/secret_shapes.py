"""Credentials known by their shape, whatever the key, flag or variable that holds them is called.

Names tell most credentials apart (`t3rl_core.secret_names`); these are the ones text gives away
by itself, wherever it appears (a job variable named `MODEL_OPTS`, a server flag, a URL's query, a
header in a service's command):
- tokens whose issuer marks them with a prefix: OpenAI/Anthropic `sk-…`, Hugging Face `hf_…`, GitHub
  `ghp_…`/`github_pat_…`, GitLab `glpat-…`, Slack `xoxb-…`, Stripe `sk_live_…`, Google `AIza…`, AWS
  access key ids `AKIA…`, and JSON Web Tokens (`eyJ….eyJ….…`);
- the value of a URL query parameter named like a credential (`?token=…`, `&api_key=…`, `&sig=…`);
- the value of an HTTP authorization header (`Authorization: Bearer …`, `X-Api-Key: …`).

`credentials_in(text)` lists them and `mask_shapes(text)` masks them; t3rl_core.secret's `mask_text`,
through which every file and line t3rl writes passes, applies it.
"""

from __future__ import annotations

import re

from t3rl_core.secret_pieces import unfolded

MASK = "***"
# Each issuer's prefix and the shortest body it issues (shorter: a word that happens to start so).
# The look-behind keeps `task-…`, `bhf_…` and the like out.
_PREFIXED = re.compile(
    r"(?<![A-Za-z0-9_-])("
    r"sk-(?:proj-|ant-[a-z0-9]+-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|hf_[A-Za-z0-9]{30,}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|github_pat_[A-Za-z0-9_]{30,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|AIza[A-Za-z0-9_-]{35}"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r")(?![A-Za-z0-9_])"
)
# A token a view cut short (`sk-proj-Ab12…`): its prefix and what is left of it before the ellipsis.
_CUT = re.compile(
    r"(?<![A-Za-z0-9_-])(?:sk-|[srp]k_|hf_|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|AIza|AKIA|ASIA|eyJ)"
    r"[A-Za-z0-9_.-]{4,}(?=…|\.\.\.)"
)
# What each token of `_PREFIXED` and `_CUT` begins with: text without any is not searched (every line
# printed is).
_TOKEN_STARTS = (
    "sk-", "sk_", "rk_", "pk_", "hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
    "xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "AIza", "AKIA", "ASIA", "eyJ",
)  # fmt: skip
# What the look-behind of `_PREFIXED` and `_CUT` refuses before a token's beginning.
_BEFORE_NO_TOKEN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
# Words a header of `_HEADER` holds (lower case), likewise.
_HEADER_WORDS = ("authorization", "bearer", "api-key", "auth-token", "access-token")
# `?token=V` / `&api_key=V` / `;sig=V` in a URL (SAS, signed and OAuth URLs): V.
_QUERY = re.compile(
    r"(?i)([?&;](?:token|access_token|auth_token|id_token|refresh_token|api_?key|api-key|key|secret"
    r"|client_secret|password|passwd|pwd|sig|signature|x-amz-signature|x-amz-credential"
    r"|x-amz-security-token)=)([^&#\\\s'\"<>]+)"
)
# `Authorization: Bearer V`, `Authorization: token V`, `X-Api-Key: V`, `Proxy-Authorization: Basic V`,
# and a bare `Bearer V` (a header as code passes it around). V holds a digit (`Bearer authentication`
# is prose), or is cut short by a view (`Bearer abcd…`).
_HEADER = re.compile(
    r"(?i)((?:\b(?:proxy-)?authorization\s*[:=]\s*['\"]?(?:bearer|basic|token|digest)?\s*"
    r"|\b(?:x-api-key|api-key|x-auth-token|x-access-token)\s*[:=]\s*['\"]?"
    r"|\bbearer\s+))"
    r"((?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{8,}|[A-Za-z0-9._~+/=-]{4,}(?=…|\.\.\.))"
)
_NOT_VALUES = ("env:", "file:", "${", MASK)


def credentials_in(text: str) -> list[str]:
    """Every credential `text` gives away by its shape (known prefixes, URL query, header)."""
    found = [m.group(2) for m in _QUERY.finditer(text)] if "=" in text else []
    if _may_hold_token(text):
        found += [m.group(1) for m in _PREFIXED.finditer(text)] + _CUT.findall(text)
    if _has_header(text):
        found += [m.group(2) for m in _HEADER.finditer(text)]
    return [value for value in found if not value.startswith(_NOT_VALUES)]


def folded_credentials_in(text: str) -> list[str]:
    """The credentials of `text` read with its line breaks taken out (a renderer may fold a token
    over lines): each as it reads whole. Text with no token's beginning, no `=` and no header word on
    any line is not unfolded (a fold inside a token's first characters is not looked for)."""
    if not (any(start in text for start in _TOKEN_STARTS) or "=" in text or _has_header(text)):
        return []
    return credentials_in(unfolded(text, _TOKEN_STARTS))


def is_shaped_credential(value: object) -> bool:
    """The whole of `value` is a prefixed token (`sk-…`, `hf_…`, a JWT): a credential whatever its key."""
    return isinstance(value, str) and _PREFIXED.fullmatch(value.strip().strip("'\"")) is not None


def mask_shapes(text: str) -> str:
    """`text` with every credential known by its shape replaced by the mask (only there: a query's
    short value is not masked elsewhere in the text)."""
    if _may_hold_token(text):
        text = _CUT.sub(MASK, _PREFIXED.sub(MASK, text))
    if "=" in text:
        text = _QUERY.sub(_keep_name, text)
    if _has_header(text):
        text = _HEADER.sub(_keep_name, text)
    return text


def _may_hold_token(text: str) -> bool:
    """A token's beginning stands where `_PREFIXED` or `_CUT` could match it: not after a letter, digit,
    `_` or `-`. Every eval record's JSON holds `task_id`, whose `sk_` alone sent ~10 KB through both
    patterns (~0.5 ms a record on the event loop)."""
    for start in _TOKEN_STARTS:
        at = text.find(start)
        while at >= 0:
            if at == 0 or text[at - 1] not in _BEFORE_NO_TOKEN:
                return True
            at = text.find(start, at + 1)
    return False


def _has_header(text: str) -> bool:
    lower = text.lower()
    return any(word in lower for word in _HEADER_WORDS)


def _keep_name(match: re.Match[str]) -> str:
    value = match.group(2)
    return match.group(0) if value.startswith(_NOT_VALUES) else match.group(1) + MASK
