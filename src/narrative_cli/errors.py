"""The one exception tree of narrative-cli.

Messages are written for the user: they name the file, setting or provider and what is
wrong, in one or two lines. ``cli/app.py`` is the only place that turns them into stderr
output and an exit code.

::

    NarrativeError                      exit 1: something failed at run time
    ├── BadInput                        exit 2: the user gave us something we cannot use
    │   ├── CardError                   a character card (PNG, JSON, CHARX) is unreadable
    │   ├── LorebookError               a world file or embedded book is malformed
    │   ├── PresetError                 a Chat Completion preset is malformed
    │   ├── ChatFileError               a SillyTavern .jsonl chat is unreadable
    │   ├── GroupError                  a SillyTavern group file is unreadable or incomplete
    │   ├── ConfigError                 config.yaml, a profile or a flag is wrong
    │   └── ToolDefinitionError         a [TOOL:…] entry is not a valid tool
    ├── BackendError                    a model call failed
    │   ├── BackendUnavailable          connection refused / DNS / dropped, after retries
    │   ├── BackendTimeout              no reply within the timeout, after retries
    │   ├── AuthenticationError         401/403: the key is missing or refused
    │   ├── QuotaError                  402 / insufficient_quota: no retry helps
    │   ├── RequestRejected             400/404/422: the provider refused the request
    │   │   └── ContentFiltered         a moderation / safety rejection
    │   ├── RateLimited                 429 after every retry
    │   ├── ProviderError               5xx / 529 / an error event inside a stream
    │   ├── StreamInterrupted           a stream broke after text was shown
    │   └── LocalModelMissing           xllamacpp or the GGUF is not installed
    ├── StoreError                      the session database
    │   ├── SnapshotMissing             a turn has no snapshot to restore from
    │   ├── StoreUnavailable            disk full, read-only or locked: may pass (``cause``)
    │   ├── SessionBusy                 another process has the session open
    │   └── TurnNotSaved                a finished turn could not be stored (kept in memory)
    ├── ReplayMismatch                  a replayed prompt differs from the recorded one
    └── ToolError                       a tool failed (its result text says why)

    PipelineInterrupt                   control flow, not failure (BaseException)
    └── TurnCancelled                   Ctrl-C during a turn: nothing is committed
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def _scrubbed(text: str) -> str:
    """``credentials.scrub_text``, loaded when the first error is made (a command that meets
    none never loads the secret rules)."""
    from narrative_cli.credentials import scrub_text

    return scrub_text(text)


class NarrativeError(Exception):
    """A failure the user should read about. ``str(error)`` is the message."""

    exit_code = EXIT_FAILURE

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        message = _scrubbed(message)  # no key reaches a screen, trace or log through an error
        super().__init__(message)
        self.message = message
        self.hint = _scrubbed(hint) if hint else hint
        # catalog keys and values (``worded``): the same message in the reader's language
        self.words: tuple[str, dict[str, object]] | None = None
        self.hint_words: tuple[str, dict[str, object]] | None = None
        # the language of the story the error belongs to, once one is known (``spoken_in``):
        # the CLI's ``error:`` line follows it (--lang, then the card, then the locale)
        self.lang: str | None = None

    def text(self, lang: str | None) -> str:
        """The message in ``lang`` when it came from the catalogs, else as written."""
        if self.words is None:
            return self.message
        return _scrubbed(Phrase(*self.words).text(lang))

    def hint_text(self, lang: str | None) -> str | None:
        """The hint in ``lang`` when it came from the catalogs, else as written."""
        if self.hint_words is None:
            return self.hint
        return _scrubbed(Phrase(*self.hint_words).text(lang))


class Phrase:
    """A catalog message with its values, said in a language only when shown: a part of an
    error's message that is itself worded (`` at <url>``, "no reason given")."""

    def __init__(self, key: str, values: Mapping[str, object] | None = None) -> None:
        self.key = key
        self.values = dict(values or {})

    def text(self, lang: str | None) -> str:
        from narrative_cli.i18n import t

        said = {name: value.text(lang) if isinstance(value, Phrase) else value
                for name, value in self.values.items()}  # fmt: skip
        return t(self.key, lang, **said)

    def __str__(self) -> str:
        return self.text("en")

    def __repr__(self) -> str:
        return f"Phrase({self.key!r}, {self.values!r})"


E = TypeVar("E", bound=NarrativeError)


def worded(cls: type[E], key: str, hint: tuple[str, dict[str, object]] | None = None, *,
           init: Mapping[str, Any] | None = None, **values: object) -> E:
    """A ``cls`` error whose message (and hint) are the catalog messages ``key`` (and
    ``hint``): ``message`` is the English text (logs, traces), ``text(lang)`` any language.
    ``init``: the class's own keyword arguments (a backend error's ``status``, ``partial``)."""
    english = Phrase(key, values).text("en")
    error = cls(english, hint=Phrase(*hint).text("en") if hint else None,
                **dict(init or {}))
    error.words = (key, dict(values))
    error.hint_words = hint
    return error


def same_words(error: E, source: NarrativeError) -> E:
    """``error`` with ``source``'s catalog words, for an error re-raised as another class
    (a dropped stream after text: ``StreamInterrupted`` with the same message)."""
    error.words, error.hint_words = source.words, source.hint_words
    return error


@contextmanager
def spoken_in(lang: str | None) -> Iterator[None]:
    """Mark a NarrativeError raised inside as belonging to a story in ``lang`` (the story's
    language: --lang, else the card's), so the CLI reports it in that language rather than
    the locale's. An error already marked keeps its language."""
    try:
        yield
    except NarrativeError as error:
        if error.lang is None:
            error.lang = lang
        raise


class BadInput(NarrativeError):
    exit_code = EXIT_USAGE


class CardError(BadInput):
    pass


class LorebookError(BadInput):
    pass


class PresetError(BadInput):
    pass


class ChatFileError(BadInput):
    pass


class GroupError(BadInput):
    pass


class ConfigError(BadInput):
    pass


class ToolDefinitionError(BadInput):
    pass


class BackendError(NarrativeError):
    """A model call failed. ``retryable`` says whether the retry loop may try again."""

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.retry_after = retry_after
        self.attempts = 1  # how many requests were made before giving up (for the trace)


class BackendUnavailable(BackendError):
    retryable = True


class BackendTimeout(BackendError):
    retryable = True


class AuthenticationError(BackendError):
    pass


class QuotaError(BackendError):
    pass


class RequestRejected(BackendError):
    pass


class ContentFiltered(RequestRejected):
    pass


class RateLimited(BackendError):
    retryable = True


class ProviderError(BackendError):
    retryable = True


class StreamInterrupted(BackendError):
    """The stream broke after some text arrived; ``partial`` holds that text."""

    retryable = True

    def __init__(self, message: str, *, partial: str = "", **kwargs: object) -> None:
        super().__init__(message, **kwargs)  # type: ignore[arg-type]
        self.partial = partial


class LocalModelMissing(BackendError):
    pass


class StoreError(NarrativeError):
    pass


class SnapshotMissing(StoreError):
    pass


class StoreUnavailable(StoreError):
    """A write failed for a reason that can pass: ``cause`` says which in words ("the disk is
    full", "the database is read-only", "the database is locked by another process")."""

    def __init__(self, message: str, *, cause: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.cause = cause


class SessionBusy(StoreError):
    """The session is open in another narrative process (its lock is held)."""


class TurnNotSaved(StoreError):
    """A turn ran and was shown but could not be stored; ``result`` holds it (in memory, for
    ``/retry`` to store once the cause is gone)."""

    def __init__(self, message: str, *, result: object, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.result = result


class ReplayMismatch(NarrativeError):
    pass


class ToolError(NarrativeError):
    pass


class PipelineInterrupt(BaseException):
    """Control flow that unwinds a turn without being a failure."""


class TurnCancelled(PipelineInterrupt):
    """The user pressed Ctrl-C during a turn; nothing of the turn is committed.

    ``partial``: the turn as far as it was shown (a ``TurnResult`` with its analysis pending)
    once story text had streamed, for the player to keep, regenerate or drop; else None."""

    partial: object = None
