"""``fit_prompt``: every agent's prompt, shrunk to its model's context window when one is known.

Its own module so that every stage module (``stages``, ``post``, ``mvu_step``) uses it without
importing another stage module.
"""

from __future__ import annotations

from collections.abc import Callable

from narrative_cli.context.blocks import Prompt
from narrative_cli.context.budget import fit_to_budget
from narrative_cli.context.inputs import PromptInputs
from narrative_cli.pipeline.records import BudgetCut
from narrative_cli.pipeline.samplers import reply_tokens
from narrative_cli.pipeline.turn import TurnState

__all__ = ["Builder", "fit_prompt"]

Builder = Callable[[PromptInputs], Prompt]


def fit_prompt(
    state: TurnState, build: Builder, agent: str, inputs: PromptInputs | None = None
) -> Prompt:
    """``build``'s prompt for ``agent``, shrunk to the model's context when one is known
    (``inputs``: the turn's by default; a group scene's writer passes its speaker's)."""
    inputs = state.prompt_inputs() if inputs is None else inputs
    limit = state.calls.backends.context_limit(agent)
    if limit is None:
        return build(inputs)
    _, agent_settings = state.calls.backends.get(agent)
    # The writer's reply room includes the preset's reply length (issue #15).
    reply = reply_tokens(agent, state.calls.samplers, state.calls.backends.configured(agent),
                         agent_settings.max_tokens)
    fitted = fit_to_budget(build, inputs, context_tokens=limit, max_tokens=reply)
    if fitted.cuts:
        state.budget_cuts.append(BudgetCut(agent, fitted.limit, tuple(fitted.cuts)))
    if not fitted.fits:
        state.warn(
            agent,
            f"{agent}: the prompt (~{fitted.prompt.tokens} tokens) is still larger than the "
            f"{fitted.limit} tokens the model has room for; sending it anyway",
        )
    return fitted.prompt
