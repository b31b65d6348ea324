"""The analysis and mvu_extract system prompts, made once per language (and rules): the same
text as filling the templates anew, for every language and for rules with and without text."""

from __future__ import annotations

from narrative_cli.agents import templates
from narrative_cli.agents.templates import analysis_system, fill, mvu_extract_system, template


def test_the_remembered_system_prompts_are_the_templates_filled_anew() -> None:
    for lang in ("zh", "en", "fr"):
        prefix = template(lang, "analysis_prefix")
        assert analysis_system(lang) == prefix + "\n\n" + template(lang, "analysis_system")
        for rules in ([], ["  "], ["lamp_oil: lower it by one a night. "], ["a", "", "b\n"]):
            kept = [r.strip() for r in rules if r.strip()]
            text = fill(lang, "mvu_rules", rules="\n\n".join(kept)) if kept else ""
            expected = prefix + "\n\n" + fill(lang, "mvu_extract_system", rules=text)
            assert mvu_extract_system(lang, rules) == expected
            assert mvu_extract_system(lang, list(rules)) == expected  # asked again
    assert templates._mvu_extract_system.cache_info().hits > 0
