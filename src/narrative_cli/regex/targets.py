"""Which of the two targets a regex script rewrites: the text shown, the text sent, or both.

Apart from ``regex.scripts`` (which runs the scripts, in QuickJS), so that ``inspect`` can say
where each script runs without loading the template sandbox.
"""

from __future__ import annotations

from narrative_cli.domain import RegexScript

__all__ = ["prompts", "shows"]


def shows(script: RegexScript) -> bool:
    """True when the script changes displayed text: markdownOnly, or neither only-flag."""
    return script.markdown_only or not script.prompt_only


def prompts(script: RegexScript) -> bool:
    """True when the script changes what a prompt is sent: promptOnly, or neither only-flag."""
    return script.prompt_only or not script.markdown_only
