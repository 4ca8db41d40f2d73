"""Credentials known by their shape, whatever the key, flag or variable that holds them is called.

Names tell most credentials apart (`t3rl_core.secret_names`); these are the ones text gives away
by itself, wherever it appears (a job variable named `MODEL_OPTS`, a server flag, a URL's query, a
header in a service's command):
- tokens whose issuer marks them with a prefix: OpenAI/Anthropic `sk-…`, Hugging Face `hf_…`, GitHub
  `ghp_…`/`github_pat_…`, GitLab `glpat-…`, Slack `xoxb-…`, Stripe `sk_live_…`, Google `AIza…`, AWS
  access key ids `AKIA…`, NVIDIA `nvapi-…`, LangSmith `lsv2_…`, Vault `hvs.…`, Shopify `shpat_…`,
  Twilio `SK…`, … (one row each in `ISSUERS`), and JSON Web Tokens (`eyJ….eyJ….…`);
- the value of a URL query parameter named like a credential (`?token=…`, `&api_key=…`, `&sig=…`);
- the value of an HTTP authorization header (`Authorization: Bearer …`, `X-Api-Key: …`) and an Azure
  connection string's key (`AccountKey=…`);
- a private key in PEM (`-----BEGIN PRIVATE KEY-----`) or OpenPGP's armour, whose markers stay;
- what a command or a `.netrc` or `.pgpass` record makes a credential whatever it looks like
  (`mysql -pV`, `curl -u alice:V`, `wandb login V`, `machine h login u password V`, `h:5432:db:u:V`,
  also over lines continued by a backslash: t3rl_core.secret_commands), and a random-looking key under
  any `…_KEY` name or after a credential's word of any program (`STRIPE_KEY=V`, `mytool login V`);
- a key of 32+ base62/base64 characters that reads as drawn at random, standing alone, whatever
  precedes it (t3rl_core.secret_name_words.is_bare_key; not in an episode's own text).

`credentials_in(text)` lists them and `mask_shapes(text)` masks them; t3rl_core.secret's `mask_text`,
through which every file and line t3rl writes passes, applies it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from t3rl_core.secret_commands import (
    call_credential_spans,
    command_spans,
    key_word_spans,
    named_spans,
    protocol_login_span,
    protocol_login_spans,
)
from t3rl_core.secret_name_words import (
    PASS_ENDINGS,
    bare_key_spans,
    is_bare_key,
    is_hash_under,
    is_secret_name,
    looks_like_credential,
)
from t3rl_core.secret_pieces import base64_texts, decoded_names, masked_spans, replaced_spans, unfolded
from t3rl_core.secret_prose import (
    SEPARATOR,
    block_entry_in,
    block_entry_indent,
    cookie_block_opened,
    cookie_item_spans,
    is_url_key,
    item_value_span,
    jwk_private_spans,
    prose_spans,
)

MASK = "***"
# Every issuer's token, one row each: who issues it, what its tokens begin with (text holding none of
# these is not searched), the pattern of a whole token, and the pattern of its beginning that a view
# cutting it short (`sk-proj-Ab12…`) leaves recognisable (None: too short or plain to tell from a word
# so). `_PREFIXED`, `_CUT` and `_TOKEN_STARTS` are made from it: an issuer added here
# is masked whole, cut short, in every record and in an episode's text, and refused at pre-flight.
# A token's body has at least the length its issuer gives it (shorter: a word that happens to start
# so); the look-behind of `_PREFIXED` and `_CUT` keeps `task-…`, `bhf_…` and the like out.
# A base64 character, also percent-encoded (`+`, `/`, `=` in a URL's query: `%2B`, `%2F`, `%3D`).
_B64 = r"(?:[A-Za-z0-9+/=]|%2[BbFf]|%3[Dd])"
# The same as a body and its padding apart (`=` only at the end), for a token that is base64 of a document.
_B64_BODY = r"(?:[A-Za-z0-9+/]|%2[BbFf])"
_B64_PAD = r"(?:=|%3[Dd]){0,2}"
# What a view left of a token of lower-case hex (Twilio's, Mailgun's) before its ellipsis: 8+ hex
# digits, a letter and a digit among them (`SKIPPED…`, `key-value…`, `SK20240101…` are not one).
_HEX_CUT = r"(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])(?=[0-9a-f]{8,}(?:…|\.\.\.))"
ISSUERS: tuple[tuple[str, tuple[str, ...], str, str | None], ...] = (
    ("OpenAI, Anthropic", ("sk-",),
     r"sk-(?:proj-|ant-[a-z0-9]+-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", r"sk-"),
    ("Stripe (secret, restricted, publishable)", ("sk_", "rk_", "pk_"),
     r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}", r"[srp]k_"),
    ("Hugging Face", ("hf_",), r"hf_[A-Za-z0-9]{30,}", r"hf_"),
    ("GitHub", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}", r"gh[pousr]_|github_pat_"),
    # Personal, deploy, runner, CI job, pipeline trigger, feed, incoming mail, agent, SCIM, OAuth app.
    ("GitLab", ("glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "glft-", "glimt-", "glagent-", "glsoat-",
                "gloas-"),
     r"gl(?:pat|dt|rt|cbt|ptt|ft|imt|agent|soat|oas)-[A-Za-z0-9_-]{20,}",
     r"gl(?:pat|dt|rt|cbt|ptt|ft|imt|agent|soat|oas)-"),
    # Bot, user and app-level (Socket Mode's `xapp-1-…`) tokens.
    ("Slack", ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xapp-"),
     r"xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}", r"xox[abposr]-|xapp-"),
    ("Google API", ("AIza",), r"AIza[A-Za-z0-9_-]{35}", r"AIza"),
    ("AWS access key id", ("AKIA", "ASIA"), r"(?:AKIA|ASIA)[A-Z0-9]{16}", r"AKIA|ASIA"),
    ("JSON Web Token", ("eyJ",), r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", r"eyJ"),
    # Keys of the hosted LLMs a user simulator or an eval engine calls, and of the registries and
    # clouds a job reaches.
    ("Groq", ("gsk_",), r"gsk_[A-Za-z0-9]{40,}", r"gsk_"),
    ("xAI", ("xai-",), r"xai-[A-Za-z0-9]{40,}", r"xai-"),
    ("Perplexity", ("pplx-",), r"pplx-[A-Za-z0-9]{40,}", r"pplx-"),
    ("npm", ("npm_",), r"npm_[A-Za-z0-9]{36,}", r"npm_"),
    ("PyPI", ("pypi-AgE",), r"pypi-AgE[A-Za-z0-9_-]{50,}", r"pypi-AgE"),
    ("Replicate", ("r8_",), r"r8_[A-Za-z0-9]{30,}", r"r8_"),
    ("DigitalOcean", ("dop_v1_", "doo_v1_", "dor_v1_"), r"do[por]_v1_[a-f0-9]{64}", r"do[por]_v1_"),
    ("Google OAuth", ("ya29.",), r"ya29\.[A-Za-z0-9_-]{20,}", r"ya29\."),
    # What a training job or its cluster reaches: NVIDIA's NIM endpoints, LangSmith's tracing,
    # Databricks, HashiCorp Vault, Docker Hub, SendGrid, Stripe's webhooks, an age key (sops).
    ("NVIDIA", ("nvapi-",), r"nvapi-[A-Za-z0-9_-]{60,}", r"nvapi-"),
    ("LangSmith", ("lsv2_",), r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}", r"lsv2_"),
    ("Databricks", ("dapi",), r"dapi[a-f0-9]{32}(?:-[0-9])?", r"dapi"),
    ("HashiCorp Vault", ("hvs.",), r"hvs\.[A-Za-z0-9_-]{24,}", r"hvs\."),
    ("Docker Hub", ("dckr_pat_",), r"dckr_pat_[A-Za-z0-9_-]{27,}", r"dckr_pat_"),
    ("SendGrid", ("SG.",), r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", r"SG\."),
    ("Stripe webhooks", ("whsec_",), rf"whsec_{_B64}{{32,}}", r"whsec_"),
    ("age", ("AGE-SECRET-KEY-1",),
     r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", r"AGE-SECRET-KEY-1"),
    # Round eight: shops, telephony and what a data pipeline reaches.
    ("Shopify", ("shpat_", "shpss_", "shpca_", "shppa_"),
     r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}", r"shp(?:at|ss|ca|pa)_"),
    # Cut short, `SK…` and `key-…` are words: what is left must be hex with a letter and a digit.
    ("Twilio API key", ("SK",), r"SK[0-9a-f]{32}", rf"SK{_HEX_CUT}"),
    ("Mailgun", ("key-",), r"key-[0-9a-f]{32}", rf"key-{_HEX_CUT}"),
    ("Atlassian", ("ATATT3",), r"ATATT3(?:[A-Za-z0-9_=-]|%3[Dd]){150,}", r"ATATT3"),
    ("Linear", ("lin_api_",), r"lin_api_[A-Za-z0-9]{40}", r"lin_api_"),
    ("Notion", ("secret_", "ntn_"), r"secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{46}", r"ntn_"),
    ("Postman", ("PMAK-",), r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", r"PMAK-"),
    ("Grafana", ("glsa_", "glc_"),
     rf"glsa_[A-Za-z0-9]{{32}}_[a-f0-9]{{8}}|glc_{_B64}{{32,}}", r"glsa_|glc_"),
    # Wave eight: the hosted models and the infrastructure an RL run reaches besides (a cluster's
    # tailnet, a run's database, its error tracker, its packages).
    ("Hugging Face organisation", ("api_org_",), r"api_org_[A-Za-z0-9]{30,}", r"api_org_"),
    ("Together AI", ("tgp_v1_",), r"tgp_v1_[A-Za-z0-9_-]{40,}", r"tgp_v1_"),
    ("Fireworks AI", ("fw_",), r"fw_[A-Za-z0-9]{20,}", None),
    ("Tailscale", ("tskey-",), r"tskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{20,}", r"tskey-"),
    ("Supabase", ("sbp_",), r"sbp_[a-f0-9]{40}", r"sbp_"),
    ("Neon", ("napi_",), r"napi_[a-z0-9]{60,}", r"napi_"),
    ("Sentry", ("sntrys_", "sntryu_"), rf"sntry[su]_{_B64}{{40,}}", r"sntry[su]_"),
    ("Pulumi", ("pul-",), r"pul-[a-f0-9]{40}", r"pul-"),
    ("RubyGems", ("rubygems_",), r"rubygems_[a-f0-9]{48}", r"rubygems_"),
    # Wave nine: issuers whose prefix is as short as a word's start, known by their whole shape instead.
    # Modal's token id and secret: `ak-`/`as-` and exactly 22 base62 characters, nothing of a name
    # after (`as-is`, `ak-47`, `as-yet-unnamed` are none); cut short, a word (`as-Intern…`).
    ("Modal", ("ak-", "as-"), r"a[ks]-[A-Za-z0-9]{22}", None),
    # Terraform Cloud / HCP's user and team tokens, `<14 characters>.atlasv1.<the secret>`: the mark is
    # inside, so the row's token is what follows the id (the id before the mark names the token only).
    ("Terraform Cloud", ("atlasv1.",), r"atlasv1\.[A-Za-z0-9_-]{60,}", r"atlasv1\."),
    # Wave ten: the chat bots a tool-use environment or a run's notifier drives, a run's other trackers,
    # vector stores and search tools an agent calls, and the platforms a job deploys to.
    # Telegram's bot token is `<bot id>:AA<33 characters>`: the id before the colon is the bot's public
    # user id; the secret is what follows (always `AA` then 33 base64url characters). A PEM block's
    # `-----` is no part of one: a body line ending in `AA…` beside its END line read as a token.
    ("Telegram bot", ("AA",), r"AA(?:[A-Za-z0-9_]|-(?!----)){33}", None),
    # Discord's bot token: base64 of the bot's numeric id (17 to 19 digits: its first digit makes the
    # first two characters), a 6-character time stamp and an HMAC of 27 to 38, dot-separated.
    ("Discord bot", ("MT", "Mj", "Mz", "ND", "NT", "Nj", "Nz", "OD", "OT"),
     r"(?:M[Tjz]|N[DTjz]|O[DT])[A-Za-z0-9_-]{21,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}", None),
    # neptune.ai's API token: base64 of its JSON (`{"api_address":…, "api_key":…}`), no dot in it (a JWT
    # has two).
    ("Neptune", ("eyJhcGlfYWRkcmVzcyI6",), rf"eyJhcGlfYWRkcmVzcyI6{_B64_BODY}{{40,}}{_B64_PAD}",
     r"eyJhcGlfYWRkcmVzcyI6"),
    ("1Password service account", ("ops_eyJ",), rf"ops_eyJ(?:{_B64_BODY}|[_-]){{100,}}{_B64_PAD}",
     r"ops_eyJ"),
    ("Pinecone", ("pcsk_",), r"pcsk_[A-Za-z0-9_]{40,}", r"pcsk_"),
    ("Tavily", ("tvly-",), r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{20,}", r"tvly-"),
    ("Jina AI", ("jina_",), r"jina_[A-Za-z0-9_-]{40,}", r"jina_"),
    ("New Relic", ("NRAK-", "NRII-", "NRJS-"), r"NR(?:AK|II|JS)-[A-Za-z0-9_-]{20,}", r"NR(?:AK|II|JS)-"),
    ("Heroku", ("HRKU-",), r"HRKU-[A-Za-z0-9_-]{30,}", r"HRKU-"),
    ("PlanetScale", ("pscale_tkn_", "pscale_pw_", "pscale_oauth_"),
     r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}", r"pscale_(?:tkn|pw|oauth)_"),
    ("Figma", ("figd_",), r"figd_[A-Za-z0-9_-]{40,}", r"figd_"),
    ("SonarQube", ("squ_", "sqp_", "sqa_"), r"sq[upa]_[a-f0-9]{40}", r"sq[upa]_"),
    ("Doppler", ("dp.pt.", "dp.st.", "dp.ct.", "dp.sa.", "dp.scim.", "dp.audit."),
     r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,44}", r"dp\.(?:pt|st|ct|sa|scim|audit)\."),
    ("Square", ("sq0atp-", "sq0csp-"), r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}", r"sq0(?:atp|csp)-"),
    ("Contentful", ("CFPAT-",), r"CFPAT-[A-Za-z0-9_-]{43}", r"CFPAT-"),
    ("Dynatrace", ("dt0c01.",), r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}", r"dt0c01\."),
    ("Bitbucket app password", ("ATBB",), r"ATBB[A-Za-z0-9]{32,}", r"ATBB"),
    ("Alibaba Cloud", ("LTAI",), r"LTAI[A-Za-z0-9]{12,20}", r"LTAI"),
    ("Tencent Cloud", ("AKID",), r"AKID[A-Za-z0-9]{32}", r"AKID"),
)  # fmt: skip
_PREFIXED = r"(?<![A-Za-z0-9_-])(" + "|".join(token for _, _, token, _ in ISSUERS) + r")(?![A-Za-z0-9_])"
# A token a view cut short (`sk-proj-Ab12…`): its prefix and what is left of it before the ellipsis.
_CUT = (
    r"(?<![A-Za-z0-9_-])(?:" + "|".join(cut for _, _, _, cut in ISSUERS if cut) + r")"
    r"[A-Za-z0-9_.+/=-]{4,}(?=…|\.\.\.)"
)
# Every character a token of `ISSUERS`, whole or cut short, holds from its start on (a base64 body's
# `+/=`, a percent-encoded one's `%`, the dots of `ya29.`, `SG.`, a JWT's and an ellipsis's), and the
# length of the shortest whole token (Slack's `xoxb-` and ten more): a token's start followed by fewer
# such characters and no ellipsis is no token, so `_may_hold_token` answers without the patterns.
_TOKEN_RUN = r"[A-Za-z0-9_.+/=%-]*"
_SHORTEST_TOKEN = 15


@functools.cache
def _issued_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """`_PREFIXED` and `_CUT` compiled, once, when text first may hold a token (~15 M instructions: a
    cold `t3rl validate` or `plan` whose config and output hold none never compiles them)."""
    return re.compile(_PREFIXED), re.compile(_CUT)


# What each token of `_PREFIXED` and `_CUT` begins with: text without any is not searched (every line
# printed is).
_TOKEN_STARTS = tuple(start for _, starts, _, _ in ISSUERS for start in starts)


# What `_may_hold_token` searches for (one str.find over the text each): a family's common beginning
# where its starts share 2+ characters (`xox` for Slack's six, `gh` for GitHub's), each start
# otherwise, with the starts a hit must then be. Each search is a pass over the text (~38 KB an eval
# record): one per start would cost 53 passes, these cost 36.
def _needles(starts: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    groups: dict[str, list[str]] = {}
    for start in starts:
        groups.setdefault(start[:2], []).append(start)
    needles = []
    for group in groups.values():
        shared = 0
        while shared < min(map(len, group)) and len({start[shared] for start in group}) == 1:
            shared += 1
        needles.append((group[0][:shared], tuple(group)))
    return tuple(needles)


_NEEDLES = _needles(_TOKEN_STARTS)
# What the look-behind of `_PREFIXED` and `_CUT` refuses before a token's beginning.
_BEFORE_NO_TOKEN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
# Words a header of `_HEADER` holds (lower case), likewise.
_HEADER_WORDS = ("authorization", "bearer", "api-key", "auth-token", "access-token", "cookie", "digest ")
# Those holding a `-`, looked for only in text holding one (a memchr), and the others. Made from the table.
_HEADER_DASHED = tuple(word for word in _HEADER_WORDS if "-" in word)
_HEADER_UNDASHED = tuple(word for word in _HEADER_WORDS if "-" not in word)
# A name that says it holds a credential ends in a credential's word (`_SECRET_KEY_NAME` of
# t3rl_core.secret_names, plus a URL's `sig`, `signature`, `jwt`), whatever words come before it
# (`hf_token`, `PRIVATE-TOKEN`, `X-Goog-Signature`, `OPENAI_API_KEY`); `key` alone only after a word that
# makes it a credential's (`sort_key` is not one). Matched from the word on, after `_`, `-` or no name
# character: a pattern that walked the words before it cost a 13 KB eval record ~10 ms.
_SECRET_WORD = (
    r"(?:(?:api|access|secret|private|wandb|client|subscription|account)[_-]?key"
    r"|token|secret|password|passwd|pwd|passphrase|credentials?|signature|sig|jwt|auth)"
)
# `?token=V` / `&private_token=V` / `;sig=V` in a URL (SAS, signed and OAuth URLs), or in its fragment
# (`#access_token=V`, OAuth's implicit flow): V. OAuth's authorization code (`?code=V`, `device_code`)
# is one too, for the minutes it lives, when it looks like one (`_OAUTH_CODE`): `?code=404` stays.
_QUERY = re.compile(
    rf"(?i)([?&;#](?:(?:[A-Za-z0-9._-]*[_-])?{_SECRET_WORD}|key|(?:authorization_|auth_|device_)?code)=)"
    r"([^&#\\\s'\"<>]+)"
)
# An authorization code: 10+ characters with a letter and a digit, not an error's constant (`E_AUTH_1234`,
# capitals, digits and `_`) or a version (`v2.1.0-rc1`).
_OAUTH_CODE = re.compile(r"(?=.*[A-Za-z])(?=.*[0-9])(?![A-Z0-9_]+$)(?!v?[0-9][0-9.]*(?:-\w+)?$).{10,}")
# The same names assigned in text (a traceback's repr, a child's error, a dumped environment or JSON):
# `HF_TOKEN=V`, `api_key='V'`, `"password": "V"`, and a flag's `--api-key V`. V holds a letter and a digit
# and has 8+ characters (`token: 151643` is a vocabulary id; `eos_token: <|im_end|>` starts with no such
# character). Found from where each word below stands in the lower-cased text (str.find, as fast as the
# test whether any is there), what follows matched at that place: a pattern scanning a whole 37 KB eval
# record cost it 0.5-6 ms more.
_NAME_WORDS = ("key", "token", "secret", "pass", "pwd", "cred", "sig", "jwt", "auth")
# Pattern strings compiled on first use through re's cache (never on import: a cold validate masks
# little). What makes `key` a credential's (`api_key`, `wandb-key`), read back from before it.
_KEY_HEAD = r"(?:api|access|secret|private|wandb|client|subscription|account)[_-]?$"
_VALUE = r"((?=[A-Za-z._~+/=-]*[0-9])(?=[0-9._~+/=-]*[A-Za-z])[A-Za-z0-9._~+/=-]{8,})"
# A quote around a name or a value, escaped however many times it was encoded: JSON inside JSON (a tool
# call's arguments in a trajectories.jsonl line, a request's body in a JSON log line) writes `\"`.
_QUOTE = r"(?:\\*['\"])?"
# The end of a name after its word: the rest of a longer word, in the plural too (`DB_PASSWORDS`), and a
# number telling one of several apart (`API_KEY_2`, `password2`), as t3rl_core.secret_name_words reads
# a name.
# A password's word in another language that begins as `pass` does (`passwort`, `passord`:
# t3rl_core.secret_name_words.OTHER_LANGUAGES) ends there too: read where `pass` is already searched for.
_NAME_END = rf"(?:words?|wds?|phrases?|natures?|entials?|{'|'.join(PASS_ENDINGS)}|s)?(?:_?[0-9]+)?"
# After the word: the rest of a longer one (`password`, `passphrase`, `signature`, `credentials`, in any
# case: `MY_PASSWORD=V` in a dumped environment), a closing quote, the separator, the value; or a flag's
# value after a space. Matched ignoring case.
# The value may open a list or a sweep of several (`[V1,V2]`, `choice(V1, V2)`), whose next items follow
# as `_NEXT_ITEM`s: a value without `=` (`password=V,user=alice2024` ends at the user).
# A value on the next line: after a shell's line continuation (`--api-key \\` and the value indented
# below, `PASSWORD=\\`), or as a YAML block scalar (`password: |`, `>-`).
_NEXT_LINE = r"(?:\\\r?\n\s*|[|>][+-]?[ \t]*\r?\n\s*)?"
# A subscript's closing bracket may stand before the sign (`os.environ['HF_TOKEN'] = 'V'`).
# The sign may be Ruby's and PHP's `=>`, Go's `:=`, make's `?=` and `+=`, or percent-encoded once or
# more (`password%3DV`, `password%3A%20V`: a query inside another's value; `%253D`: inside a third's).
# `_value_may_follow` skips `_ENCODED_SIGN` as it skips a plain sign, so the patterns are tried whatever
# was masked before.
_PERCENT = r"%(?:25)*"
_ENCODED_SIGN = rf"{_PERCENT}(?:3[DdAa]|20)"
# Wave ten: R's `<-` and `<<-`, the or-assignments of Ruby and JavaScript (`||=`, `??=`).
_SIGN = rf"(?:=>|[:?+]=|\|\|=|\?\?=|<<?-|[:=]|{_PERCENT}3[DdAa](?:{_PERCENT}20)*)"
# What a typed language writes between a credential's name and its `=` (wave ten): a type annotation
# (Python's `password: str = V`, `api_key: Optional[str] = V`, TypeScript's `: string`, Rust's `: &str`,
# Kotlin's and Scala's `: String`, Swift's `String?`), or Go's type after a space (`var password string =
# V`). `_value_may_follow` skips it where a plain `=` follows within `_ANNOTATION_REACH` characters.
_ANNOTATION = (
    r"(?:[ \t]*:[ \t]*&?[A-Za-z_][\w.]*(?:\[[\w., \[\]|]{0,40}\])?[?!]?|[ \t]+(?:string|str|String|&str))"
    r"(?=[ \t]*=[^=>])"
)
_ANNOTATION_REACH = 64
_ASSIGNED = (
    rf"{_NAME_END}{_QUOTE}\]?(?:{_ANNOTATION})?\s*{_SIGN}\s*{_NEXT_LINE}(?:choice\(|[\[(])?{_QUOTE}{_VALUE}"
)
# A name's next value: a list's or a sweep's (`V1,V2`), or what a change sets it to (`"V1" -> "V2"`:
# terraform's plan, a diff's summary).
_NEXT_ITEM = (
    rf"{_QUOTE}\s*(?:,|->|=>|\u2192)\s*{_QUOTE}"
    r"((?=[A-Za-z._~+/-]*[0-9])(?=[0-9._~+/-]*[A-Za-z])[A-Za-z0-9._~+/-]{8,})"
)
# The flag's value also as the next item of a list written out (`'--api-key', 'V'` in a failed command's
# repr, `"--api-key", "V"` in JSON, `[--api-key,V]` in an override).
# What `_value_may_follow` reads: the suffixes `_ASSIGNED` and `_FLAG_VALUE` take, read ignoring case
# as `re` does (`İ`, `ı`, `ſ`, the Kelvin sign are also `i`, `s`, `k`), what they let stand before a
# value (besides spaces and `choice(`), and a run of `_VALUE`'s characters
_SUFFIXES = (
    "words", "word", "wds", "wd", "phrases", "phrase", "natures", "nature", "entials", "ential",
    *PASS_ENDINGS, "s",
)  # fmt: skip
_NAMED_VALUE: list[re.Pattern[str]] = []  # `_named_value_patterns()`
_FOLD = str.maketrans("\u0130\u0131\u017f\u212a", "iisk")
# `_SUFFIXES` by their first letter, and the longest's length: after an ASCII word (every eval record's
# `max_tokens`, `cut_tokens`) the few suffixes its next letter may begin are compared with it lower-cased
# once, not each suffix's slice translated (`_FOLD`, a dict's lookups) and lower-cased (~45 K
# instructions a name's word). Made from `_SUFFIXES`: a suffix added there is read here.
_SUFFIXES_AT: dict[str, tuple[str, ...]] = {}
for _suffix in filter(None, _SUFFIXES):  # an empty one would add `at`, which is read first anyway
    _SUFFIXES_AT[_suffix[0]] = (*_SUFFIXES_AT.get(_suffix[0], ()), _suffix)
_LONGEST_SUFFIX = max(map(len, _SUFFIXES))
# What may stand between a name and its value: `_SIGN`'s characters (`>` of `=>` and `?` of `?=` too: without
# them the patterns were tried on `'password' => 'V'` only once something else had compiled them; `+` is a
# value's character), quotes, a list's opening.
_BEFORE_VALUE = frozenset("\\'\":=>?,[(]<-|")
_VALUE_RUN = "[A-Za-z0-9._~+/=\u0130\u0131\u017f\u212a-]*"
_FLAG_VALUE = rf"{_NAME_END}(?:[ \t]*\\\r?\n\s*|\s+|{_QUOTE}\s*,\s*){_QUOTE}{_VALUE}"
# What may not stand before the name's word: more of a name that is another word (`monkey`, `design`).
# A dot may: it ends the path of a dotted key (`eval.engine.api_key=V`, an override quoted in a log).
_NOT_BEFORE_WORD = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
# Words that name a credential glued to the word before as well (libpq's `PGPASSWORD`, `HTPASSWD`).
_GLUED = ("password", "passwd", "passphrase")
# The number after a name's word (`API_KEY_2`), skipped by `_value_may_follow`.
_NUMBER_AFTER = re.compile(r"(?:_?[0-9]+)?")
# `|`, `>`, `|-`, `>+` and the line break after: what `_NEXT_LINE` lets stand before a value below.
_BLOCK_SCALAR = re.compile(r"(?:[|>][+-]?[ \t]*\r?\n\s*)?")
# A URL whose user part is a token (`https://<token>@github.com/…`, as git takes one, also with a password
# after it: `https://<token>:x-oauth-basic@github.com/…`): the token.
_USER_TOKEN = r"://((?=[A-Za-z_-]*[0-9])(?=[0-9_-]*[A-Za-z])[A-Za-z0-9_-]{20,})(?=(?::[^/\s]*)?@)"
# `Authorization: Bearer V`, `Authorization: token V`, `X-Api-Key: V`, `Proxy-Authorization: Basic V`,
# and a bare `Bearer V` (a header as code passes it around). V holds a digit (`Bearer authentication`
# is prose), or is cut short by a view (`Bearer abcd…`). A pattern string compiled on first use, through
# re's cache: text without a header word (all a cold validate or plan scrubs) never needs it.
_HEADER = (
    # Any scheme (Negotiate, Okta's SSWS, a vendor's own), after a space or its URL-encoding (`Bearer%20V`).
    rf"(?i)((?:\b(?:proxy-)?authorization{_QUOTE}\s*[:=]\s*{_QUOTE}(?:[a-z][a-z0-9_-]*(?:\s+|%20))?\s*"
    rf"|\b(?:x-api-key|api-key|x-auth-token|x-access-token){_QUOTE}\s*[:=]\s*{_QUOTE}"
    # Digest's credentials are its parameters (RFC 7616): `response` is a hash of the password a
    # dictionary recovers it from (MD5 of `user:realm:password` under the nonce), the rest say whose.
    rf"""|\bdigest\s+(?:[\w-]+\s*=\s*(?:\\*"[^"\r\n]*"|[^\s,"\\]*)\s*,\s*)*?response\s*=\s*{_QUOTE}"""
    r"|\bbearer(?:\s+|%20)))"
    r"((?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{8,}|[A-Za-z0-9._~+/=-]{4,}(?=…|\.\.\.))"
)
# An Azure connection string's key (`AccountKey=V;`, `SharedAccessKey=V`): base64 of 32+ bytes.
_AZURE_KEY = r"(?<![A-Za-z])((?:Account|SharedAccess)Key\s*=\s*)([A-Za-z0-9+/]{40,}={0,2})"
# `Cookie: V` and `Set-Cookie: V` (a logged-in session, as good as a password): V to the line's end, every
# pair of it, when it holds a digit (`cookie: none set` is prose).
_COOKIE = rf"(?i)(\b(?:set-)?cookie{_QUOTE}\s*:\s*{_QUOTE})((?=[^\r\n'\"\\]*[0-9])[^\r\n'\"\\]+)"
# The header's name and a value (a line-by-line copier sees its first line masked already, or without a
# digit); a YAML key `cookie:` above its mapping has none, and is no header.
_COOKIE_HEADER = rf"(?i)\b(?:set-)?cookie{_QUOTE}[ \t]*:[ \t]*\S"
_NOT_VALUES = ("env:", "file:", "${", MASK)
# A private key in PEM (`-----BEGIN [RSA |EC |OPENSSH |ENCRYPTED ]PRIVATE KEY-----`, a service account's
# JSON, an SSH key a job dumps) or in OpenPGP's armour (`-----BEGIN PGP PRIVATE KEY BLOCK-----`, a signing
# key of a release job): its body, over real or JSON-escaped line breaks, up to its END line or, cut
# short, the end of the text. Looked for only where `PEM_MARK` stands.
PEM_MARK = "PRIVATE KEY"
_PEM_BEGIN = r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
_PEM = rf"(?s)({_PEM_BEGIN})(.+?)(-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)"
# Every private key file whose body lies between two markers, one row each: the mark text holding one
# holds (looked for first), the whole block (the markers kept, groups 1 and 3), the pattern of a line
# opening it and the text a line closing it holds (a line-by-line copier's `PemLines` masks the lines
# between). PuTTY's `.ppk` (versions 2 and 3: `PuTTY-User-Key-File-3: ssh-ed25519` … `Private-Lines: N`,
# then N lines of base64, then `Private-MAC:`): its public lines above are public.
PRIVATE_BLOCKS: tuple[tuple[str, str, str, str], ...] = (
    (PEM_MARK, _PEM, _PEM_BEGIN, "-----END "),
    ("Private-Lines:", r"(?s)(Private-Lines:[ \t]*[0-9]+)(.+?)(Private-MAC:|$)",
     r"Private-Lines:[ \t]*[0-9]+", "Private-MAC:"),
)  # fmt: skip


def credentials_in(text: str, commands: bool = True, decoded: bool = True) -> list[str]:
    """Every credential `text` gives away by its shape (known prefixes, URL query, header), with
    `commands` what a command or a `.netrc` record gives away (t3rl_core.secret_commands), and with
    `decoded` what its reading with a name's escapes undone and its base64 documents hold (the reader
    of folded text, which `mask_text` runs on every record with a line break, leaves those to it)."""
    found = [m.group(2) for m in _QUERY.finditer(text) if _query_credential(m)] if "=" in text else []
    if _may_hold_token(text):
        prefixed, cut = _issued_patterns()
        found += [m.group(1) for m in prefixed.finditer(text)] + cut.findall(text)
    # Lower-cased once for both (~0.1 ms for 7 KB with one non-ASCII character).
    lower = text.lower()
    if _has_header(lower):
        found += [m.group(2) for m in re.finditer(_HEADER, text)]
        found += [m.group(2) for m in re.finditer(_COOKIE, text)]
    found += [text[start:end] for start, end in _named_spans(text, lower, commands)]
    for mark, block, _, _ in PRIVATE_BLOCKS:
        if mark in text:
            found += [m.group(2) for m in re.finditer(block, text) if m.group(2).strip(" \\n")]
    found += [text[start:end] for start, end in command_spans(text)] if commands else []
    # Read as it reads with a name's escaped characters undone too (`api%5Fkey=V`), as `mask_text`
    # masks it: a config value holding one is refused at pre-flight as the plain one is.
    decoding = decoded_names(text) if decoded else None
    if decoding is not None:
        found += credentials_in(decoding[0], commands)
    # And a base64 document holding one (`cHdkPXR1bGlwOXgx`, `pwd=tulip9x1`), as `mask_text` masks it.
    if decoded:
        found += [run for run, document in base64_texts(text) if credentials_in(document, commands)]
    return [value for value in found if not value.startswith(_NOT_VALUES)]


def any_credentials_in(texts: Iterable[str]) -> bool:
    """Whether `credentials_in` may find one in any of `texts`, in one scan of them joined by
    `SEPARATOR`: never False where a text holds one (True where none does is possible: a caller that
    needs to know which scans each then)."""
    return bool(credentials_in(SEPARATOR.join(texts)))


def folded_credentials_in(text: str) -> list[str]:
    """The credentials of `text` read with its line breaks taken out (a renderer may fold a token
    over lines): each as it reads whole. Text with no token's beginning, no `=` and no header word on
    any line is not unfolded (a fold inside a token's first characters is not looked for). A command's
    words and a `.netrc` record's are not read so: with its line breaks taken out, a record's value
    runs into the next record's `machine`, masked with it (and that record's value left)."""
    if not (any(start in text for start in _TOKEN_STARTS) or "=" in text or _has_header(text.lower())):
        return []
    found = credentials_in(unfolded(text, _TOKEN_STARTS), commands=False, decoded=False)
    if all(value in text for value in found):  # none read over a line break (the common case)
        return found
    # A value read over a line break into a word of prose (`password=V` above `started server`): when
    # the value is whole without that line (the text read with such lines apart gives its beginning),
    # the word is the next line's text, not the value's end.
    apart = credentials_in(unfolded(text, _TOKEN_STARTS, prose_apart=True), commands=False, decoded=False)
    return [value if value in text else _before_prose(value, apart) for value in found]


def _before_prose(value: str, apart: list[str]) -> str:
    """The longest of `apart` that `value` begins with and is longer than, else `value`."""
    heads = [head for head in apart if len(head) < len(value) and value.startswith(head)]
    return max(heads, key=len, default=value)


def is_shaped_credential(value: object) -> bool:
    """The whole of `value` is a prefixed token (`sk-…`, `hf_…`, a JWT), a private key or a key known by
    its look alone (t3rl_core.secret_name_words.is_bare_key): a credential whatever its key."""
    if not isinstance(value, str):
        return False
    text = value.strip().strip("'\"")
    whole_token = (
        len(text) >= _SHORTEST_TOKEN
        and text.startswith(_TOKEN_STARTS)
        and _issued_patterns()[0].fullmatch(text) is not None
    )
    return (
        whole_token
        or any(mark in text and re.fullmatch(block, text) is not None for mark, block, _, _ in PRIVATE_BLOCKS)
        or is_bare_key(text)
        or is_url_key(text)
    )


def mask_issued(text: str) -> str:
    """`text` with the credentials its form alone gives away masked: an issuer's prefixed token (whole or
    cut short by a view), a JSON Web Token, a private key's body, an Azure connection string's key
    (`AccountKey=V`, `SharedAccessKey=V`), an HTTP authorization header's value (`Authorization: Basic
    V`, `Bearer V`, `X-Api-Key: V`: no BFCL or tau2 task's data is written so). A name's value
    (`"password": "V"`) is not read here: in an episode's own text it is the task's data (BFCL's made-up
    passwords), which the official scorers replay from the record. What a command or a `.netrc` record
    makes a credential is (`mysql -pV`: no task's data is written so)."""
    return _issued(text)[0]


def _issued(text: str) -> tuple[str, str, bool]:
    """`mask_issued`'s text, with it lower-cased and whether that holds a header word (`mask_shapes`
    reads both again: each a pass over the text)."""
    for start, end in reversed(command_spans(text)):
        text = text[:start] + MASK + text[end:]
    if _may_hold_token(text):
        prefixed, cut = _issued_patterns()
        text = cut.sub(MASK, prefixed.sub(MASK, text))
    for mark, block, _, _ in PRIVATE_BLOCKS:
        if mark in text:
            text = re.sub(block, lambda m: m.group(1) + MASK + m.group(3), text)
    if "Key" in text and "=" in text:
        text = re.sub(_AZURE_KEY, _keep_name, text)
    lower = text.lower()
    header = _has_header(lower)
    if header:
        masked = re.sub(_HEADER, _keep_name, text)
        if masked != text:
            text, lower = masked, masked.lower()
    return text, lower, header


def mask_shapes(text: str) -> str:
    """`text` with every credential known by its shape replaced by the mask (only there: a query's
    short value is not masked elsewhere in the text)."""
    text, lower, header = _issued(text)
    if "=" in text:
        queried = _QUERY.sub(_keep_query_name, text)
        if queried != text:
            text, lower = queried, queried.lower()
    if header:
        cookies = re.sub(_COOKIE, _keep_name, text)  # the headers were masked by _issued
        if cookies != text:
            text, lower = cookies, cookies.lower()
    spans = _named_spans(text, lower)
    for start, end in reversed(spans):
        text = text[:start] + MASK + text[end:]
    return text


class PemLines:
    """What text read line by line (a stage's log, whose tee sees one line at a time, already masked)
    gives away over lines: a private key's body (`mask_shapes` masks the rest of the BEGIN line, and
    this every line after it up to its END line), a command continued on the next line by a
    backslash (`mysql -u root \\` then `  -pV app`), read with the lines before it, and a YAML block
    scalar under a credential's entry (`password: >-` above the value's pieces, one a line): every line
    indented further than the entry, as `secret_prose.entry_value_spans` masks the block in one text; and
    the items of a mapping of cookies over lines (`cookies:` or `"cookies": {` above `  session: V`), as
    `secret_prose.cookie_spans` reads them in one text."""

    def __init__(self) -> None:
        self.inside = ""  # what the line closing the private key this is inside holds (`PRIVATE_BLOCKS`)
        self.continued = ""  # the lines of a command so far, each ending with a backslash
        self.block: int | None = None  # the indentation of the credential's entry whose block this is
        # A mapping of cookies left open above (`cookies:`, `"cookies": {`): its entry's indentation and
        # whether it is a flow mapping, closed by `}`.
        self.cookies: tuple[int, bool] | None = None
        # The line a copier cut short (a run of 64 KB without a line break, `t3rl_core.redact`), up to its
        # last 4 KB: its next piece is read joined to it, as a reader of the output sees the line (a
        # `Cookie:` header or a token the cut parted).
        self.cut = ""
        # A `Cookie:` or `Set-Cookie:` header above: a line that begins with a space or a tab continues it
        # (HTTP's folded header, a wrapped log line), its cookies as much the header's as the first line's.
        self.cookie_header = False

    def needed(self, text: str) -> bool:
        """Lines of `text` may give away what only this reads (a copier that masks a chunk at a time
        passes its lines here only then)."""
        return (
            bool(self.inside)
            or self.block is not None
            or self.cookies is not None
            or bool(self.cut)
            or not text.endswith(("\n", "\r"))
            or any(mark in text for mark, _, _, _ in PRIVATE_BLOCKS)
            or block_entry_in(text)
            or self.cookie_header
            or "ookie" in text
            or "OOKIE" in text
        )

    def __call__(self, line: str) -> str:
        if self.cut:
            line = self._joined(line)
        if not line.endswith(("\n", "\r")):
            self.cut = (self.cut + line)[-4096:]
        if self.cookies is not None:
            line = self._cookie_item(line)
        line = self._cookie_header(line)
        if self.block is not None:
            body = line.rstrip("\r\n")
            indent = len(body) - len(body.lstrip(" \t"))
            if not body.strip():
                return line
            if len(body[:indent].expandtabs()) > self.block:
                return body[:indent] + MASK + line[len(body) :]
            self.block = None
        if self.continued or line.rstrip("\r\n").endswith("\\"):
            line = self._continue(line)
        self.block = block_entry_indent(line.rstrip("\r\n"))
        self.cookies = cookie_block_opened(line.rstrip("\r\n")) if self.cookies is None else self.cookies
        if self.inside:
            end = line.find(self.inside)
            if end < 0:
                return MASK + line[len(line.rstrip("\r\n")) :]
            self.inside = ""
            return MASK + line[end:]
        for mark, _, opening, closing in PRIVATE_BLOCKS:
            begin = line.rfind(mark)
            if begin >= 0 and closing not in line[begin:] and re.search(opening, line) is not None:
                self.inside = closing
        return line

    def _joined(self, line: str) -> str:
        """`line`, the rest of a line cut short before it, masked where its reading joined to the part
        before the cut is (that part was written already)."""
        # What was masked before the cut reads as a value again (a stand-in with a letter and a digit),
        # so a header's or a name's value is read on over the cut: `Cookie: ***` + `Ij; theme=V`.
        before, self.cut = self.cut.replace(MASK, "m4sk3d00"), ""
        joined = before + line
        masked = mask_shapes(joined)
        if masked == joined:
            return line
        spans = [(max(a, len(before)), b) for a, b in replaced_spans(joined, masked) if b > len(before)]
        return masked_spans(joined, spans)[len(before) :] if spans else line

    def _cookie_header(self, line: str) -> str:
        """`line`, masked after its indentation where it continues a cookie header above and holds a digit
        (as `_COOKIE` masks the header's first line to its end); whether the next line may continue one."""
        body = line.rstrip("\r\n")
        if self.cookie_header and body[:1] in (" ", "\t") and body.strip():
            indent = len(body) - len(body.lstrip(" \t"))
            if any(c.isdigit() for c in body):
                line = body[:indent] + MASK + line[len(body) :]
            return line
        self.cookie_header = re.search(_COOKIE_HEADER, body) is not None
        return line

    def _cookie_item(self, line: str) -> str:
        """`line` below an open mapping of cookies, its cookies' values masked; the mapping ends at a line
        indented no further than its entry (a block) or at its `}` (a flow mapping)."""
        assert self.cookies is not None
        indent, flow = self.cookies
        body = line.rstrip("\r\n")
        stripped = body.lstrip(" \t")
        if not flow and stripped and len(body[: len(body) - len(stripped)].expandtabs()) <= indent:
            self.cookies = None
            return line
        if flow and "}" in body:
            self.cookies = None
        for start, end in reversed(cookie_item_spans(body, flow)):
            line = line[:start] + MASK + line[end:]
        return line

    def _continue(self, line: str) -> str:
        """`line` with what the command it continues gives away masked; the command kept while the line
        ends with a backslash (its first 4 KB: a program's name and options stand at its start)."""
        before, self.continued = self.continued, ""
        if before:
            joined = before + line
            for start, end in reversed(command_spans(joined)):
                if end > len(before):
                    start = max(start, len(before))
                    joined = joined[:start] + MASK + joined[end:]
            line = joined[len(before) :]
        if line.rstrip("\r\n").endswith("\\") and len(before) + len(line) <= 4096:
            self.continued = before + line
        return line


def _may_hold_token(text: str) -> bool:
    """A token's beginning stands where `_PREFIXED` or `_CUT` could match it: not after a letter, digit,
    `_` or `-`. Every eval record's JSON holds `task_id`, whose `sk_` alone sent ~10 KB through both
    patterns (~0.5 ms a record on the event loop).

    Without an ellipsis in `text`, a token is `_SHORTEST_TOKEN` or more characters of `_TOKEN_RUN` from
    its start on, so it starts in a run of such characters that long: only those runs are read (the
    text's bytes marked by one C translate, the long runs found by `bytes.find`; ~10 an eval record),
    not 36 `str.find` passes over all of it (an eval's 600 episode texts: 248.8 M -> 135.6 M
    instructions, callgrind). The same answer as the plain definition (a property test:
    tests/launch/test_token_runs.py)."""
    if "…" in text or "..." in text:
        return _may_hold_token_scan(text)
    raw = text.encode("utf-8", "surrogatepass")
    marks = raw.translate(_RUN_MARKS)
    at = marks.find(_LONG_RUN)  # a long run's start: the text's, or after a space that marks no run
    while at >= 0:
        end = marks.find(b" ", at + _SHORTEST_TOKEN)
        end = len(marks) if end < 0 else end
        run = raw[at:end]
        if run not in _TOKENLESS_RUNS:
            if _run_holds_token(run):
                return True
            if len(_TOKENLESS_RUNS) >= _MOST_TOKENLESS_RUNS:
                _TOKENLESS_RUNS.clear()
            _TOKENLESS_RUNS.add(run)
        at = marks.find(_LONG_RUN, end)
    return False


# Runs `_run_holds_token` answered False for, in this process (its answer is a function of the run's
# bytes and `ISSUERS` alone): an eval's records name the same files, functions and ids again and again,
# 87 % of the long runs of the 300-record eval's texts were read before (~0.1 M instructions a record).
# A run holding a token is never kept; the set is emptied when it holds `_MOST_TOKENLESS_RUNS`.
_TOKENLESS_RUNS: set[bytes] = set()
_MOST_TOKENLESS_RUNS = 4096


# `_TOKEN_RUN`'s characters; as bytes each marked "a", every other byte (a non-ASCII character's too) " ";
# and those of them a token may start right after (not in `_BEFORE_NO_TOKEN`). Every start is made of them.
_RUN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+/=%-")
_RUN_MARKS = bytes(ord("a") if chr(b) in _RUN_CHARS else ord(" ") for b in range(256))
_LONG_RUN = b"a" * _SHORTEST_TOKEN
_AFTER_IN_RUN = frozenset(ord(c) for c in _RUN_CHARS - _BEFORE_NO_TOKEN)
_STARTS_BYTES = tuple(start.encode() for start in _TOKEN_STARTS)
assert all(set(start) <= _RUN_CHARS for start in _TOKEN_STARTS), "a start outside a token's run"
# The first two bytes of every start (each has 2+): a run beginning with none of them begins with no start,
# told by one set lookup instead of `bytes.startswith` with each of the ~80 starts (an eval record's ~11
# long runs a text: ~40 % of `_may_hold_token`'s instructions).
_START_HEADS = frozenset(start[:2] for start in _STARTS_BYTES)
assert min(map(len, _STARTS_BYTES)) >= 2, "a start shorter than its head"


# A run character that is not a name's followed by a start, as one pattern: a run is read by one search
# in C, not by a Python test at each of its places (a cold plan's paths and arguments: ~9,000 places,
# ~4x the time). Compiled on first use (~0.4 ms), by a text that holds a long run.
_START_IN_RUN = (
    rb"["
    + re.escape(bytes(sorted(_AFTER_IN_RUN)))
    + rb"](?:"
    + b"|".join(re.escape(start) for start in _STARTS_BYTES)
    + rb")"
)


@functools.cache
def _start_in_run() -> re.Pattern[bytes]:
    return re.compile(_START_IN_RUN)


def _run_holds_token(run: bytes) -> bool:
    """A token starts in `run` (a whole run of `_TOKEN_RUN`, no ellipsis after it) and runs on to its end
    for `_SHORTEST_TOKEN` or more: at its start (after no run character) or after a run character that
    is not in `_BEFORE_NO_TOKEN`."""
    if run[:2] in _START_HEADS and run.startswith(_STARTS_BYTES):
        return True
    # The leftmost such start (one character after the match's): no later one is closer to the run's start.
    found = _start_in_run().search(run)
    return found is not None and found.start() + 1 <= len(run) - _SHORTEST_TOKEN


def _may_hold_token_scan(text: str) -> bool:
    """`_may_hold_token` by a `str.find` pass for each start, with `_long_enough`'s ellipsis cases."""
    for needle, starts in _NEEDLES:
        at = text.find(needle)
        while at >= 0:
            if (
                (at == 0 or text[at - 1] not in _BEFORE_NO_TOKEN)
                and text.startswith(starts, at)
                and _long_enough(text, at)
            ):
                return True
            at = text.find(needle, at + 1)
    return False


def _long_enough(text: str, at: int) -> bool:
    """What follows a token's start at `at` is as long as the shortest token, or reaches an ellipsis
    (`hf_id`, `hf_checkpoint`, `sk-learn` are neither: every config has the first two)."""
    end = re.compile(_TOKEN_RUN).match(text, at).end()  # type: ignore[union-attr]  # `*` always matches
    return end - at >= _SHORTEST_TOKEN or text.startswith("…", end) or "..." in text[at:end]


def _has_header(lower: str) -> bool:
    """`lower`, a text lower-cased, holds a header word."""
    return any(word in lower for word in _HEADER_UNDASHED) or (
        "-" in lower and any(word in lower for word in _HEADER_DASHED)
    )


def _named_spans(text: str, lower: str, commands: bool = True) -> list[tuple[int, int]]:
    """Where `text` (`lower`: it lower-cased) holds the value of a credential it names (`HF_TOKEN=V`,
    `--api-key V`) or a token as a URL's user (`https://V@host`), in order, not overlapping; references
    (`env:NAME`) excepted."""
    spans = []
    for word in _NAME_WORDS:
        at = lower.find(word)
        while at >= 0:
            spans += _value_after(text, lower, at, word)
            pair = item_value_span(text, at) if commands else None
            if pair is not None:
                spans.append(pair)
            if word in ("pass", "auth") and commands and (login := protocol_login_span(text, at)) is not None:
                spans.append(login)
            if word == "auth" and commands:
                spans += _auth_call_spans(text, at)
            at = lower.find(word, at + 1)
    if "://" in text:
        spans += [match.span(1) for match in re.finditer(_USER_TOKEN, text)]
    spans += (
        named_spans(text, lower)
        + protocol_login_spans(text, lower, _NAME_WORDS)
        + key_word_spans(text)
        + bare_key_spans(text)
        + prose_spans(text, lower)
        + jwk_private_spans(text)
        if commands
        else []
    )
    kept: list[tuple[int, int]] = []
    for start, end in sorted(spans, key=lambda span: (span[0], -span[1])):  # the longer of two at one place
        if (not kept or start >= kept[-1][1]) and not text.startswith(_NOT_VALUES, start):
            kept.append((start, end))
    return kept


def _auth_call_spans(text: str, at: int) -> list[tuple[int, int]]:
    """An HTTP client's authentication given by its place (`HTTPBasicAuth("alice", V)`, `auth=("alice",
    V)`: t3rl_core.secret_commands.CREDENTIAL_CALLS) where `auth` stands at `at`."""
    end = at + 4
    for call in ("BasicAuth", "DigestAuth"):
        start = end - len(call)
        if start >= 0 and text.startswith(call, start) and text.startswith("(", end):
            return call_credential_spans(text, call, end)
    if text.startswith("auth", at) and (at == 0 or not text[at - 1].isalnum()):
        opening = re.compile(r"\s*=\s*[(\[]").match(text, end)
        if opening is not None:
            return call_credential_spans(text, "auth", opening.end() - 1)
    return []


def _value_after(text: str, lower: str, at: int, word: str) -> list[tuple[int, int]]:
    """The span of the value the credential's name whose word stands at `at` is given: `NAME=V`, or
    `--…-NAME V` when the name is a flag's."""
    start = at
    if word == "key":
        head = re.compile(_KEY_HEAD).search(lower, max(0, at - 13), at)
        if head is None:
            # Any other key (`STRIPE_KEY=V`, `signingKey: V`, `--license-key V`) when its value looks
            # random, as a key does: `sort_key=created_at2024` is a field's name, and a hash under a
            # data key's name (`cache_key=<sha256>`) is a hash.
            spans = _value_after(text, lower, at, "key-like")
            name = at
            while name and (lower[name - 1].isalnum() or lower[name - 1] in "_-"):
                name -= 1
            name_text = text[name : at + 3]
            return [
                (a, b)
                for a, b in spans
                if looks_like_credential(text[a:b]) and not is_hash_under(name_text, text[a:b])
            ]
        start = head.start()
    elif word == "key-like":
        word = "key"
    if (
        start
        and lower[start - 1] in _NOT_BEFORE_WORD
        and not _camel_word(text, start)
        and not (word == "pass" and lower.startswith(_GLUED, at))
        and not (word in ("token", "secret") and _glued_name(text, lower, start, at + len(word)))
    ):
        return []
    quoted = _quoted_value(text, at + len(word))
    if quoted is not None:
        return [quoted]
    value_follows = bool(_NAMED_VALUE) or _value_may_follow(text, at + len(word))
    assigned = _named_value_patterns()[0].match(text, at + len(word)) if value_follows else None
    if assigned is not None:
        spans = [assigned.span(1)]
        item = re.compile(_NEXT_ITEM, re.IGNORECASE).match(text, assigned.end())
        while item is not None:  # the other values of a sweep or a list (`V1,V2`)
            spans.append(item.span(1))
            item = re.compile(_NEXT_ITEM, re.IGNORECASE).match(text, item.end())
        return spans
    name_start = start
    while name_start and (lower[name_start - 1].isalnum() or lower[name_start - 1] in "-_"):
        name_start -= 1
    flag = (
        _named_value_patterns()[1].match(text, at + len(word))
        if value_follows and lower.startswith("--", name_start)
        else None
    )
    return [flag.span(1)] if flag is not None else []


# A value in quotes after a credential's name and its separator: the quotes say where it ends, whatever
# it holds between them (JSON's `\u00e4` or `\"`, a space, `&`: `"password": "Tr0ub4dor&3"`), where
# `_VALUE` stopped at the first character outside its set and kept the rest, or all of it.
_QUOTED_VALUE = (
    rf"(?i){_NAME_END}['\"]?\]?(?:{_ANNOTATION})?\s*{_SIGN}\s*"
    r"""(?:"((?:[^"\\\n]|\\.){1,256})"|'((?:[^'\\\n]|\\.|''){1,256})')"""  # YAML doubles a `'`
)
_PLAIN_VALUE = r"[A-Za-z0-9._~+/=-]+"


def _quoted_value(text: str, end: int) -> tuple[int, int] | None:
    """The span of a quoted value holding a character `_VALUE` stops at, after the name's word ending at
    `end`, when it is one as a name's value is judged (8+ characters, a letter and a digit); not a
    reference (`env:`, `${…}`, `$(…)`) nor a special token (`<|reserved_special_token_0|>`, `[PAD1]`)."""
    found = re.compile(_QUOTED_VALUE).match(text, end)
    if found is None:
        return None
    group = 1 if found.group(1) is not None else 2
    value = found.group(group)
    if (
        re.fullmatch(_PLAIN_VALUE, value) is not None  # `_ASSIGNED` reads it whole
        or len(value) < 8
        or not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value))
        or value.startswith((*_NOT_VALUES, "$"))
        or value[0] + value[-1] in ("<>", "[]")
        # a certificate's or a public key's PEM block (json.dumps writes its lines with `\n`): public
        or (value.startswith("-----BEGIN ") and "PRIVATE" not in value.partition("-----\\n")[0])
    ):
        return None
    return found.span(group)


def _named_value_patterns() -> list[re.Pattern[str]]:
    """`_ASSIGNED` and `_FLAG_VALUE`, compiled when first needed; from then on `_value_after` tries them
    wherever a name's word stands, as fast as `_value_may_follow` could tell (an eval's records)."""
    if not _NAMED_VALUE:
        _NAMED_VALUE.extend((re.compile(_ASSIGNED, re.IGNORECASE), re.compile(_FLAG_VALUE, re.IGNORECASE)))
    return _NAMED_VALUE


def _value_may_follow(text: str, at: int) -> bool:
    """A value `_ASSIGNED` or `_FLAG_VALUE` could match follows the name's word ending at `at`: after
    the rest of a longer word (or none), what either lets stand before a value (spaces, quotes,
    backslashes, `:`, `=`, `,`, `[`, `(`, `choice(`), a run of `_VALUE`'s characters 8 long with a letter
    and a digit. Both patterns (~5 M instructions each to compile) are compiled and tried only then:
    `max_new_tokens: 20000`, `api_key: null`, `--input-key prompt`, in every plan, hold no such value."""
    head = text[at : at + _LONGEST_SUFFIX]
    if head.isascii():  # no letter `_FOLD` reads: the same comparisons, with the head lower-cased once
        head = head.lower()
        suffixed = (at + len(suffix) for suffix in _SUFFIXES_AT.get(head[:1], ()) if head.startswith(suffix))
    else:
        suffixed = (
            at + len(suffix)
            for suffix in _SUFFIXES
            if text[at : at + len(suffix)].translate(_FOLD).lower() == suffix
        )
    for end in (at, *suffixed):
        end = _NUMBER_AFTER.match(text, end).end()  # type: ignore[union-attr]  # `?` always matches
        if text.find("=", end, end + _ANNOTATION_REACH) >= 0 and (
            typed := re.compile(_ANNOTATION).match(text, end)
        ):
            end = typed.end()
        while end < len(text) and (text[end] in _BEFORE_VALUE or text[end].isspace()):
            end += 1
            if text.startswith("(", end + 6) and text[end : end + 6].isalpha():  # `choice(`, in any case
                end += 7
            if text.startswith(("|", ">"), end):  # a YAML block scalar's indicator, its value below
                end = _BLOCK_SCALAR.match(text, end).end()  # type: ignore[union-attr]  # `?` always matches
        while text.startswith("%", end) and (sign := re.compile(_ENCODED_SIGN).match(text, end)):
            end = sign.end()
        signs = end
        while signs > at and text[signs - 1] == "=":  # `=` is also a value's character
            signs -= 1
        run = re.compile(_VALUE_RUN).match(text, end).end()  # type: ignore[union-attr]  # `*` always matches
        value = text[end:run]
        if run - signs >= 8 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return True
    return False


def _glued_name(text: str, lower: str, start: int, end: int) -> bool:
    """The word glued before a token's or a secret's (`identitytoken`, `clientsecret`, as Docker's
    config.json and OAuth clients write them) makes the name a credential's by `is_secret_name`, the one
    judge of names; `maxtokens` and `pagetoken` stay data."""
    while start and (lower[start - 1].isalnum() or lower[start - 1] == "_"):
        start -= 1
    return is_secret_name(text[start : end + (lower[end : end + 1] == "s")])


def _camel_word(text: str, at: int) -> bool:
    """A word of a camelCase name begins at `at` (`accessToken`, `clientSecret`, `dbPassword`): a capital
    after a small letter or a digit, where `monkey` or `design` continue one word."""
    return text[at].isupper() and (text[at - 1].islower() or text[at - 1].isdigit())


def _keep_name(match: re.Match[str]) -> str:
    value = match.group(2)
    return match.group(0) if value.startswith(_NOT_VALUES) else match.group(1) + MASK


def _query_credential(match: re.Match[str]) -> bool:
    """A match of `_QUERY` holds a credential: a code only when it looks like an authorization code."""
    return not match.group(1).lower().endswith("code=") or _OAUTH_CODE.match(match.group(2)) is not None


def _keep_query_name(match: re.Match[str]) -> str:
    return _keep_name(match) if _query_credential(match) else match.group(0)
