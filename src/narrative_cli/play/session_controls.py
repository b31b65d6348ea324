"""The settings-and-output half of ``PlaySession``: trace, mode, Author's Note, export,
and what the toolbar asks (session header, model). A mixin, as ``play.recovery`` is: it
holds no state of its own and reads the session's fields."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from narrative_cli import paths
from narrative_cli.domain_chat import AuthorsNote
from narrative_cli.errors import NarrativeError
from narrative_cli.pipeline.accounting import SessionAccount
from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.pipeline.story import Story
from narrative_cli.pipeline.trace import TraceWriter
from narrative_cli.store.models import SessionInfo
from narrative_cli.store.sessions import SessionStore


class SessionControls:
    """Settings and output of a played session (see the module doc)."""

    store: SessionStore
    story: Story
    session_id: int
    backends: BackendSet
    trace: TraceWriter | None
    account: SessionAccount

    def set_trace(self, directory: str | Path | None) -> TraceWriter | None:
        """Write a trace to ``directory`` from the next call on (None: stop tracing)."""
        self.trace = TraceWriter(directory, str(self.session_id)) if directory else None
        return self.trace

    def default_trace_dir(self) -> Path:
        """Where ``/trace on`` writes when no directory is given."""
        return paths.logs_dir() / f"trace-session-{self.session_id}"

    def set_mode(self, mode: str) -> str:
        """Switch the pipeline mode for the next turns (auto | merged | serial | parallel)."""
        from narrative_cli.errors import BadInput, worded
        from narrative_cli.pipeline.orchestrator import MODES

        if mode not in MODES:
            raise worded(BadInput, "usage.unknown_mode", mode=repr(mode), known=", ".join(MODES))
        self.story.settings.pipeline.mode = mode
        return mode

    @property
    def mode(self) -> str:
        return str(self.story.settings.pipeline.mode)

    def set_note(self, text: str) -> AuthorsNote:
        """Set the chat's Author's Note text ("" for none), keeping its interval, position,
        depth and role; it is stored with the session (``chat_metadata.note_*``), so it
        survives resume and goes out with the export."""
        note = replace(self.story.authors_note or AuthorsNote(), text=text)
        metadata = {**self.store.session(self.session_id).chat_metadata, **note.to_metadata()}
        self.store.set_chat_metadata(self.session_id, metadata)
        self.story.authors_note = note
        return note

    def export(
        self, path: str | Path, fmt: str | None = None, *, force: bool = False
    ) -> tuple[int, str]:
        """Export the session (``play.exports``: the format from ``fmt`` or the suffix)."""
        from narrative_cli.play.costs import usage_metadata
        from narrative_cli.play.exports import export_session

        usage = usage_metadata(self.story.settings, self.backends.model_of, self.account)
        return export_session(self.store, self.session_id, path, fmt, force=force, usage=usage)

    def default_export_path(self, fmt: str) -> Path:
        """Where ``/export FORMAT`` writes without a file name: the session's id and name."""
        from narrative_cli.play.exports import default_export_path

        return default_export_path(self.session_id, self.info().name, fmt)

    def info(self) -> SessionInfo:
        """The stored session header (name, card, turns)."""
        return self.store.session(self.session_id)

    def model_name(self) -> str:
        """The writer's model, for the toolbar."""
        try:
            return self.backends.model_of("writing") or "?"
        except (KeyError, NarrativeError):
            return "?"
