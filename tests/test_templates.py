"""EJS templates (ST-Prompt-Template) compiled here and run in the QuickJS sandbox.

Each construct on a small template of our own: the tags and their whitespace rules, the
variable helpers over MVU paths, lore helpers, lodash helpers, determinism, and every way a
template can fail (which must leave its text out with a warning naming it).
"""

from __future__ import annotations

import re
from importlib.resources import files

import pytest

from narrative_cli.context.ejs import TemplateSyntaxError, compile_template
from narrative_cli.context.macro_scan import (
    LODASH_FUNCTIONS,
    TEMPLATE_FUNCTIONS,
    UNAVAILABLE_FUNCTIONS,
    template_finding,
)
from narrative_cli.tools.templates import (
    LoreData,
    TemplateContext,
    TemplateJob,
    render_templates,
)

STAT = {"理": {"好感度": [60, "0-100"], "情绪": "平静"}, "User": {"与理的关系": ["", ""]}}


def render(text: str, **context: object) -> tuple[str | None, list[str]]:
    ctx = TemplateContext(**{"message": {"stat_data": STAT}, **context})  # type: ignore[arg-type]
    batch = render_templates([TemplateJob("test entry", text)], ctx)
    return batch.outputs[0], batch.warnings


def one(text: str, **context: object) -> str | None:
    output, warnings = render(text, **context)
    assert not warnings, warnings
    return output


# ---------------------------------------------------------------- tags and whitespace


def test_output_tags_print_values_and_skip_null() -> None:
    assert one("a<%= 1 + 1 %>b<%- '<b>' %>c<%= null %><%- undefined %>d") == "a2b<b>cd"


def test_escaped_output_is_raw_in_a_prompt_as_the_extension_does() -> None:
    # ST-Prompt-Template's escape function returns its input: <%= does not turn < into &lt;
    assert one("<%= '<tag> & \"q\"' %>") == '<tag> & "q"'


def test_comment_and_literal_delimiters() -> None:
    assert one("x<%# not run: throw 1 %>y <%% z %%>") == "xy <% z %>"


def test_scriptlet_with_trailing_line_comment_does_not_swallow_the_rest() -> None:
    assert one("<% const a = 3 // three %>[<%= a %>]") == "[3]"


def test_dash_close_drops_the_one_line_break_after_it() -> None:
    assert one("<% if (true) { -%>\nline\n<% } -%>\nend") == "line\nend"


def test_underscore_tags_slurp_spaces_and_the_line_break() -> None:
    text = "head\n   <%_ if (true) { _%>   \n  body\n\t<%_ } _%>\nend"
    assert one(text) == "head\n  body\nend"


def test_plain_close_keeps_the_line_break() -> None:
    assert one("<% if (true) { %>\nx\n<% } %>\n") == "\nx\n\n"


def test_print_writes_from_code() -> None:
    assert one("<% print('a', 1); print('b') %>") == "a1b"


def test_unclosed_tag_is_a_compile_error_naming_the_line() -> None:
    with pytest.raises(TemplateSyntaxError, match="line 2"):
        compile_template("ok\n<% if (x) {\n")


# ---------------------------------------------------------------- variables


def test_getvar_reads_mvu_paths_as_lodash_does() -> None:
    assert one("<%= getvar('stat_data.理.好感度[0]') %>") == "60"
    assert one("<%= getvar('stat_data.理.好感度.[0]') %>") == "60"
    assert one("<%= getvar('stat_data')['理'].情绪 %>") == "平静"
    assert one("<%= _.has(getvar('stat_data'), '理.好感度.[0]') %>") == "true"
    assert one("<%= _.has(getvar('stat_data'), '理.好感度.[5]') %>") == "false"


def test_getvar_defaults_when_absent() -> None:
    text = "<%= getvar('stat_data.系统.当前阶段', { defaults: '磨合期' }) %>"
    assert one(text) == "磨合期"
    assert one("<%= getvar('nothing') === undefined %>") == "true"


def test_gate_fires_exactly_at_its_threshold() -> None:
    text = "<% if (getvar('stat_data.理.好感度[0]') >= 60) { %>告白<% } %>"
    at = {"理": {"好感度": [60, ""]}}
    below = {"理": {"好感度": [59, ""]}}
    assert one(text, message={"stat_data": at}) == "告白"
    assert one(text, message={"stat_data": below}) == ""


def test_setvar_keeps_chat_variables_and_later_templates_see_them() -> None:
    jobs = [TemplateJob("a", "<% setvar('visits', 2); incvar('visits') %>"),
            TemplateJob("b", "<%= getvar('visits') %>|<%= getvar('seen', {defaults: 0}) %>")]
    batch = render_templates(jobs, TemplateContext(local={"seen": 1}))
    assert batch.outputs == ["", "3|1"]
    assert batch.local == {"seen": 1, "visits": 3}


def test_setvar_flags_and_global_scope() -> None:
    jobs = [TemplateJob("a", "<% setvar('a', 1); setvar('a', 2, 'nx'); setvar('b', 1, 'xx');"
                             " setGlobalVar('g', 'x'); decvar('c', 2) %>")]
    batch = render_templates(jobs, TemplateContext())
    assert batch.local == {"a": 1, "c": -2}
    assert batch.global_ == {"g": "x"}


def test_setvar_on_mvu_tree_lasts_for_the_prompt_only_and_says_so() -> None:
    text = "<% setvar('stat_data.理.情绪', '喜悦') %><%= getvar('stat_data.理.情绪') %>"
    jobs = [TemplateJob("a", text)]
    batch = render_templates(jobs, TemplateContext(message={"stat_data": STAT}))
    assert batch.outputs == ["喜悦"]
    assert batch.local == {}
    assert any("<UpdateVariable>" in w for w in batch.warnings)


def test_variables_object_and_names() -> None:
    text = "<%= variables.stat_data.理.情绪 %> <%= userName %>/<%= charName %>"
    assert one(text, user="阿明", char="理") == "平静 阿明/理"


# ---------------------------------------------------------------- lore and lodash


def test_getwi_returns_an_entry_rendered_with_its_data() -> None:
    lore = [LoreData(uid=4, comment="称呼", content="叫<%= who %>哥哥"),
            LoreData(uid=5, comment="plain", content="plain text")]
    text = ("<%= await getwi('称呼', { who: '阿明' }) %>;<%- await getwi(5) %>;"
            "[<%= await getwi('x') %>]")
    assert one(text, lore=lore) == "叫阿明哥哥;plain text;[]"


def test_lodash_helpers_cards_use() -> None:
    text = ("<%= _.get(getvar('stat_data'), '理.好感度[0]', 0) + _.sum([1, 2]) %>,"
            "<%= _.clamp(150, 0, 100) %>,<%= _.isEmpty({}) %>,<%= _.keys({a: 1, b: 2}).join('') %>,"
            "<%= _.sortBy([{n: 2}, {n: 1}], 'n').map(x => x.n).join('') %>,"
            "<%= _.cloneDeep(getvar('stat_data')).理.情绪 %>")
    assert one(text) == "63,100,true,ab,12,平静"


def test_lodash_subset_matches_what_inspect_reports() -> None:
    output = one("<%= Object.keys(_).sort().join(' ') %>")
    assert output is not None
    assert set(output.split()) == LODASH_FUNCTIONS


def test_runtime_and_inspect_agree_on_functions() -> None:
    runtime = files("narrative_cli.tools").joinpath("template_runtime.js").read_text("utf-8")
    defined = set(re.findall(r"^\s+(\w+): unavailable\('", runtime, re.MULTILINE))
    assert defined == UNAVAILABLE_FUNCTIONS
    names = "|".join(sorted(TEMPLATE_FUNCTIONS - {"print"}))
    output = one(f"<%= [{','.join(sorted(TEMPLATE_FUNCTIONS - {'print'}))}]"
                 ".every(f => typeof f === 'function') %>")
    assert output == "true", names


# ---------------------------------------------------------------- determinism


def test_random_and_date_are_seeded_and_fixed() -> None:
    text = ("<%= Math.random() %> <%= _.random(1, 6) %> <%= Date.now() %> "
            "<%= new Date().getTime() %>")
    first = one(text, seed=5, now_ms=1_700_000_000_000)
    assert first == one(text, seed=5, now_ms=1_700_000_000_000)
    assert first != one(text, seed=6, now_ms=1_700_000_000_000)
    assert first is not None and first.endswith("1700000000000 1700000000000")


# ---------------------------------------------------------------- failures


def test_runaway_template_stops_at_the_limit_and_only_its_text_is_lost() -> None:
    jobs = [TemplateJob("entry A", "<% setvar('a', 1) %>A"),
            TemplateJob('lore entry "loop" (uid 9)', "<% while(true){} %>never"),
            TemplateJob("entry C", "C<%= getvar('a') %>")]
    batch = render_templates(jobs, TemplateContext(), time_limit=0.3)
    assert batch.outputs == ["A", None, "C1"]
    assert len(batch.warnings) == 1
    assert 'lore entry "loop" (uid 9)' in batch.warnings[0]
    assert "0.3 s" in batch.warnings[0]


def test_exception_and_syntax_errors_name_the_template() -> None:
    jobs = [TemplateJob("entry X", "<% nothing.here %>"), TemplateJob("entry Y", "<% if ( %>"),
            TemplateJob("entry Z", "<% if (a"), TemplateJob("fine", "ok")]
    batch = render_templates(jobs, TemplateContext())
    assert batch.outputs == [None, None, None, "ok"]
    assert [w.split(" failed")[0] for w in batch.warnings] == [
        "template in entry Z", "template in entry X", "template in entry Y"]
    assert "not defined" in batch.warnings[1]
    assert "syntax error" in batch.warnings[2]


def test_unavailable_function_fails_with_its_reason_in_chinese() -> None:
    output, warnings = render("<% await execute('/echo hi') %>x", lang="zh")
    assert output is None
    assert warnings and "execute() is not available" in warnings[0]
    assert warnings[0].startswith("test entry 中的模板运行失败")


def test_memory_blowup_is_a_warning() -> None:
    output, warnings = render("<% let a = []; while (true) a.push('x'.repeat(1e6)) %>")
    assert output is None
    assert warnings and ("memory" in warnings[0] or "longer" in warnings[0])


def test_inspect_finding_lists_calls_and_what_will_not_run() -> None:
    found = template_finding("e", "<% if (_.has(getvar('a'), 'b')) { await getchar(); _.zip() } %>")
    assert found.calls == ("getvar", "getchar", "_.has", "_.zip")
    assert found.unavailable == ("getchar", "_.zip")
    assert template_finding("e", "<% if").error.startswith("could not find")
    assert template_finding("e", "<%= faker.person.firstName() %>").unavailable == ("faker",)


def test_engine_crash_is_pinned_on_the_template_that_caused_it() -> None:
    # JSON.stringify of a very deep value overflows QuickJS's C stack: the helper dies and
    # leaves no progress mark, so the templates are run again one at a time
    deep = "<% let a = []; for (let i = 0; i < 100000; i++) a = [a]; JSON.stringify(a) %>x"
    jobs = [TemplateJob("entry A", "A<% setvar('n', 1) %>"), TemplateJob("entry deep", deep),
            TemplateJob("entry C", "C<%= getvar('n') %>")]
    batch = render_templates(jobs, TemplateContext(), time_limit=0.5)
    assert batch.outputs == ["A", None, "C1"]
    assert len(batch.warnings) == 1 and "entry deep" in batch.warnings[0]


def test_chat_messages_from_the_greeting_to_this_turns_input() -> None:
    chat = [("assistant", "欢迎"), ("user", "你好"), ("assistant", "你好呀"), ("user", "再见")]
    text = ("<%= getChatMessage(0) %>|<%= getChatMessage(-1) %>"
            "|<%= getChatMessage(-1, 'assistant') %>|<%= getChatMessages(2).join(',') %>"
            "|<%= getChatMessages(0, 2, 'user').join(',') %>|<%= matchChatMessages(/你好/) %>"
            "|<%= matchChatMessages(['欢迎', '不在'], {and: true}) %>")
    assert one(text, chat=chat) == "欢迎|再见|你好呀|你好呀,再见|你好,再见|true|false"
