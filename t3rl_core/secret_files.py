"""The files credentials are conventionally kept in, one list for every place code or data is shared.

Ray uploads a job's working dir and a plugin's package to the cluster's object store, where every job
of the cluster reads them (`launch.plan.secret_uploads` adds these as Ray's `excludes`); a sandbox cell
runs code the model writes, and reads what `sandbox.readable_paths` shows it (`t3rl_core.sandbox.local`
covers these below each). A `.env`, a key file, a checkout's `.git/config` with a token in its remote's
URL lying next to the code or the data would otherwise go with it.
"""

from __future__ import annotations

import fnmatch
import os

# Gitignore patterns, matched at any depth: a name (`*.pem`), a directory (`.git/`), or a path's end
# (`huggingface/token`).
SECRET_FILES = (
    ".env", ".env.*", "*.env", ".envrc", ".netrc", ".git-credentials", ".git/", ".pypirc", ".npmrc",
    ".aws/", ".ssh/", ".gnupg/", ".docker/config.json", ".kube/", "huggingface/token",
    "credentials", "credentials.json", "*credentials*.json", "service-account*.json", "secrets.*",
    "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_ed25519*", "id_ecdsa*",
    # Wave ten: the files the tools of an ML job's machine keep a credential in, found in a home a user
    # made readable (`readable_paths: ['~']`): Kaggle's API key, Databricks', the PostgreSQL and MySQL
    # clients' passwords, s3cmd's and boto's keys, the Azure and GitHub CLIs' tokens, Vault's, gcloud's
    # credential stores, rclone's remotes, Modal's token, ngrok's, Docker's old auth file, Yarn's and
    # Maven's registry credentials.
    ".kaggle/", ".databrickscfg", ".pgpass", ".my.cnf", ".mylogin.cnf", ".s3cfg", ".boto", ".azure/",
    "gh/hosts.yml", ".vault-token", "gcloud/credentials.db", "gcloud/access_tokens.db",
    "gcloud/legacy_credentials", "rclone.conf", ".modal.toml", "ngrok.yml", ".dockercfg", ".yarnrc.yml",
    ".m2/settings.xml",
)  # fmt: skip
# Names a public file shares with a key (a CA bundle's `ca.pem`, a certificate's `.pem`):
# a sandbox's search reads such a file and hides it only when it holds a private key (Ray's uploads leave
# every one out: uploading less harms nothing, hiding a CA bundle from cells would).
_BY_CONTENT = ("*.pem", "*.key")
_PRIVATE_KEY = b"PRIVATE KEY-----"
# Entries a search below one directory reads at most: a data set of millions of files is not walked
# whole each time a sandbox starts; what lies past them is said (`SecretFileSearch.stopped`).
SEARCHED_ENTRIES = 20_000


def is_secret_file(relative: str, is_dir: bool) -> bool:
    """The path `relative` (to the directory searched, `/`-separated) is one of `SECRET_FILES`."""
    name = relative.rsplit("/", 1)[-1]
    for pattern in SECRET_FILES:
        if pattern.endswith("/"):
            if is_dir and fnmatch.fnmatchcase(name, pattern[:-1]):
                return True
        elif "/" in pattern:
            if relative == pattern or relative.endswith("/" + pattern):
                return True
        elif fnmatch.fnmatchcase(name, pattern):
            return True
    return False


class SecretFileSearch:
    """The credential files and directories below `root` (itself one, if it is), found without following
    symbolic links, in at most `SEARCHED_ENTRIES` entries; a directory found is not searched further."""

    def __init__(self, root: str) -> None:
        self.found: list[str] = []
        self.stopped = False
        if not os.path.isdir(root) or os.path.islink(root):
            top, name = os.path.split(root)
            if is_secret_file(name, os.path.isdir(root)) and _holds_one(top, name):
                self.found.append(root)
            return
        seen = 0
        for top, dirs, files in os.walk(root):
            base = os.path.relpath(top, root).replace(os.sep, "/")
            base = "" if base == "." else base + "/"
            for name in list(dirs):
                if is_secret_file(base + name, not os.path.islink(os.path.join(top, name))):
                    self.found.append(os.path.join(top, name))
                    dirs.remove(name)
            self.found += [
                os.path.join(top, n) for n in files if is_secret_file(base + n, False) and _holds_one(top, n)
            ]
            seen += len(dirs) + len(files)
            if seen >= SEARCHED_ENTRIES:
                self.stopped = True
                return


def _holds_one(directory: str, name: str) -> bool:
    """The file `name` (one of `SECRET_FILES`) holds a credential: a private key, for a name public files
    share; unreadable, it is taken for one."""
    if not any(fnmatch.fnmatchcase(name, pattern) for pattern in _BY_CONTENT):
        return True
    try:
        with open(os.path.join(directory, name), "rb") as f:
            return _PRIVATE_KEY in f.read(1 << 16)
    except OSError:
        return True
