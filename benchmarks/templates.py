"""Template benchmark: what a turn's EJS templates cost on the real MVU card (青空 理).

The turn's template texts are the card's own (the affection-stage entry, the confession event)
plus the 爱 card's phase guide, with 青空 理's variables after its greeting. Measured in one run,
with the sandbox's helper process already started:

1. batched: every template of the turn in one sandbox call (what a turn does);
2. baseline: the same templates, one sandbox call each;
3. compile: our EJS-to-JavaScript compiler alone (Python, no sandbox);
4. macros: the macro expansion of the same texts, for scale;
5. a whole turn of 青空 理 on the scripted loopback server (``tests/servers.py``, replies at
   once): the turn's wall time and its templates stage (from the stage events).

Medians in milliseconds, the ratio batched / baseline and the templates stage's share of a turn.

    python benchmarks/templates.py [--runs 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.pipeline_support import Script, backends_for, settings_for  # noqa: E402
from tests.servers import ScriptedServer  # noqa: E402

from narrative_cli.context.ejs import compile_template, has_template  # noqa: E402
from narrative_cli.context.macros import env_for, expand  # noqa: E402
from narrative_cli.load import load_card  # noqa: E402
from narrative_cli.pipeline.events import StageFinished  # noqa: E402
from narrative_cli.pipeline.orchestrator import run_turn  # noqa: E402
from narrative_cli.pipeline.story import open_story  # noqa: E402
from narrative_cli.tools.templates import TemplateContext, TemplateJob, render_templates  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
RIRI = FIXTURES / "mvu" / "magvar-riri-mvu-update.png"
AI = FIXTURES / "zh" / "ai-v3.json"


def median_ms(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def turn_costs(runs: int) -> tuple[float, float]:
    """Median wall time of a turn of 青空 理 and of its templates stage, in ms."""
    walls, stages = [], []
    with ScriptedServer() as server:
        Script().install(server)
        settings = settings_for(server)
        settings.lore.update(budget_percent=100, max_context=131072)  # the stage entry fits
        backends = backends_for(server, settings)
        for _ in range(runs):
            story = open_story(RIRI, settings=settings, seed=1, greeting_index=1)
            events: list[object] = []
            started = time.perf_counter()
            run_turn(story, "我来看你了。", backends, listener=events.append)
            walls.append((time.perf_counter() - started) * 1000)
            stages += [e.elapsed_ms for e in events
                       if isinstance(e, StageFinished) and e.stage == "templates"]
    return statistics.median(walls), statistics.median(stages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    runs = parser.parse_args().runs
    if not RIRI.exists() or not AI.exists():
        print("../shared/fixtures is not available; nothing to measure")
        return
    story = open_story(RIRI, seed=1, greeting_index=1, user_name="User")
    env = env_for(story.card, story.persona)
    texts = [e.content for e in story.entries if not e.disabled and has_template(e.content)]
    texts += [e.content for e in load_card(AI).character_book.entries  # type: ignore[union-attr]
              if not e.disabled and has_template(e.content)]
    expanded = [expand(t, env) for t in texts]
    jobs = [TemplateJob(f"entry {i}", t) for i, t in enumerate(expanded)]
    context = TemplateContext(message={"stat_data": story.snapshot.mvu or {}}, user="User",
                              char=story.card.name, seed=1, now_ms=0, lang="zh")
    first = render_templates(jobs, context)  # starts the helper process
    assert not first.warnings, first.warnings
    size = sum(len(t) for t in expanded)
    output = sum(len(o or "") for o in first.outputs)

    batched = median_ms(lambda: render_templates(jobs, context), runs)
    baseline = median_ms(lambda: [render_templates([job], context) for job in jobs], runs)
    compiled = median_ms(lambda: [compile_template(t) for t in expanded], runs)
    macros = median_ms(lambda: [expand(t, env) for t in texts], runs)
    print(f"{len(jobs)} templates, {size} characters of template text -> {output} characters out")
    print(f"batched (one sandbox call per turn):   {batched:8.2f} ms")
    print(f"baseline (one sandbox call each):      {baseline:8.2f} ms")
    print(f"compile only (Python):                 {compiled:8.2f} ms")
    print(f"macro expansion of the same texts:     {macros:8.2f} ms")
    print(f"ratio batched / baseline:              {batched / baseline:8.2f}")
    wall, stage = turn_costs(max(5, runs // 3))
    print(f"a whole turn (scripted server):        {wall:8.2f} ms")
    print(f"  of which the templates stage:        {stage:8.2f} ms ({stage / wall:.0%})")


if __name__ == "__main__":
    main()
