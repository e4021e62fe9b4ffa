"""Errors raised by the dataset layer, worded so a student can fix the input."""
from __future__ import annotations

import re
from pathlib import Path


class DatasetFormatError(ValueError):
    """A data file does not have the layout its reader expects."""

    def __init__(self, path: str | Path, line_no: int | None, expected: str, got: str, detail: str = ""):
        self.path = str(path)
        self.line_no = line_no
        self.expected = expected
        self.got = got
        self.detail = detail
        where = f"{self.path} line {line_no}" if line_no is not None else self.path
        shown = got if line_no is None else repr(_clip(got))
        message = f"{where}: expected {expected}, got {shown}"
        if detail:
            message += f" ({detail})"
        super().__init__(message)


class DatasetNotFoundError(FileNotFoundError):
    """The files of a dataset are neither on disk nor downloadable."""

    def __init__(self, message: str):
        super().__init__(message)

    def __str__(self) -> str:  # FileNotFoundError would otherwise print the errno tuple
        return self.args[0]

    def markdown(self) -> tuple[str, str]:
        """(markdown for a page, raw details): see `readable`."""
        return readable(self.args[0])


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


# --- the same message for a page ------------------------------------------------------------------------------
# The messages above are plain text with line breaks, for the terminal. A page renders markdown, where single
# line breaks vanish, `$` starts a formula and a download's raw exception (urllib3's connection-pool text)
# buries the fix; `readable` turns such a message into short markdown and keeps the raw text apart.
_NETWORK_CAUSES = (
    (("NameResolution", "Failed to resolve", "getaddrinfo", "Name or service not known"),
     "the server's name could not be resolved (no network connection?)"),
    (("timed out", "Timeout"), "the connection timed out"),
    (("ProxyError", "Tunnel connection failed"), "the proxy refused the connection"),
    (("hash", "SHA256", "sha256"), "the downloaded file's checksum did not match"),
    (("Connection refused", "ConnectionError", "Max retries exceeded", "URLError"), "the server could not be reached"),
)


def download_cause(raw: str) -> str:
    """A short, human reason for a failed download from its raw exception text."""
    for needles, why in _NETWORK_CAUSES:
        if any(n in raw for n in needles):
            return why
    return raw.split(":", 1)[0].strip() or "unknown error"


def _md_text(text: str) -> str:
    """Plain text safe in Streamlit markdown: `$` would start a formula."""
    return text.replace("$", "\\$")


def _host(url: str) -> str:
    from urllib.parse import urlparse

    return urlparse(url).netloc or url


def readable(message: str) -> tuple[str, str]:
    """(markdown, details) of an error message: a missing-data message as a heading line, the folders
    searched as a list, why a download failed in a few words and the fix; `details` holds the raw download
    error ('' if none) for an expander. Other messages keep their line breaks."""
    text = message.strip()
    for prefix in ("DatasetNotFoundError: ", "FileNotFoundError: "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    details: list[str] = []
    out: list[str] = []
    in_list = False
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        bullet = stripped.startswith("- ")
        if bullet and not in_list:
            out.append("")
        if not bullet and in_list:
            out.append("")
        in_list = bullet
        if bullet:
            path, _, why = stripped[2:].partition("  (")
            out.append(f"- `{path.strip()}`" + (f" ({_md_text(why.rstrip(')'))})" if why else ""))
            continue
        if stripped.startswith("Download of ") and " failed: " in stripped:
            url, _, raw = stripped[len("Download of "):].partition(" failed: ")
            details.append(raw)
            out.append(f"Downloading from {_host(url)} failed: {download_cause(raw)}.")
        elif "; download failed: " in stripped:
            head, _, rest = stripped.partition("; download failed: ")
            raw, _, tail = rest.partition(". Fix: ")
            details.append(raw)
            out.append(_md_text(f"{head}; the download failed: {download_cause(raw)}."))
            if tail:
                out += ["", "**How to get it:** " + _md_text(tail)]
        elif stripped.startswith("Fix: "):
            out.append("**How to get it:** " + _md_text(stripped[len("Fix: "):]))
        elif stripped.startswith("(") and stripped.endswith(")"):
            out.append(_md_text(stripped[1:-1]) + ".")
        else:
            out.append(_md_text(stripped))
        out.append("")
    md = re.sub(r"\n{3,}", "\n\n", "\n".join(out).strip())
    md = md.replace(" found. Looked for ", " found.\n\nLooked for ", 1)
    first, sep, rest = md.partition("\n")
    if ": " in first and not first.startswith("- "):  # the dataset's name and what is missing, in bold
        name, _, what = first.partition(": ")
        first = f"**{name}**: {what}"
    return first + sep + rest, "\n".join(details)
