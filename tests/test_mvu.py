"""MVU variables: [initvar] parsing, the patch op table, value/description pairs, summary, diff."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from narrative_cli.errors import LorebookError
from narrative_cli.state.mvu import (
    apply_patches,
    has_descriptions,
    mvu_diff,
    mvu_summary,
    parse_initvar,
    read_initvar,
)

from .conftest import fixture_file

BASE: dict[str, Any] = {
    "主角": {
        "生命值": 100,
        "信用点数": 500,
        "改装仓库": ["基础扫描器", "维修工具包"],
        "a/b": 1,
        "m~n": 2,
        "精度": 0.1,
    },
    "世界": {"当前地点": "起点", "天气": "晴朗"},
    "近期事件": ["开场"],
}


def get(tree: Any, *path: str | int) -> Any:
    for key in path:
        tree = tree[key]
    return tree


VALID: list[tuple[dict[str, Any], tuple[str | int, ...], Any, str]] = [
    # patch, where to look, expected value there, expected note fragment
    (
        {"op": "replace", "path": "/世界/当前地点", "value": "矿洞"},
        ("世界", "当前地点"),
        "矿洞",
        "",
    ),
    (
        {"op": "replace", "path": "/主角/改装仓库/1", "value": "x"},
        ("主角", "改装仓库"),
        ["基础扫描器", "x"],
        "",
    ),
    (
        {"op": "replace", "path": "/世界/时辰", "value": "辰"},
        ("世界", "时辰"),
        "辰",
        "新建了 /世界/时辰",
    ),
    ({"op": "replace", "path": "世界/天气", "value": "雨"}, ("世界", "天气"), "雨", ""),
    ({"op": "replace", "path": "/stat_data/世界/天气", "value": "雪"}, ("世界", "天气"), "雪", ""),
    ({"op": "replace", "path": "/主角/a~1b", "value": 9}, ("主角", "a/b"), 9, ""),
    ({"op": "replace", "path": "/主角/m~0n", "value": 8}, ("主角", "m~n"), 8, ""),
    ({"op": "REPLACE", "path": "/世界/天气", "value": None}, ("世界", "天气"), None, ""),
    ({"op": "delta", "path": "/主角/生命值", "value": -30}, ("主角", "生命值"), 70, ""),
    ({"op": "delta", "path": "/主角/生命值", "value": 0.5}, ("主角", "生命值"), 100.5, ""),
    ({"op": "delta", "path": "/主角/精度", "value": 0.2}, ("主角", "精度"), 0.3, ""),
    (
        {"op": "insert", "path": "/主角/改装仓库/-", "value": "涡轮增压器V2"},
        ("主角", "改装仓库"),
        ["基础扫描器", "维修工具包", "涡轮增压器V2"],
        "",
    ),
    (
        {"op": "insert", "path": "/主角/改装仓库/0", "value": "前"},
        ("主角", "改装仓库"),
        ["前", "基础扫描器", "维修工具包"],
        "",
    ),
    (
        {"op": "insert", "path": "/主角/改装仓库/2", "value": "尾"},
        ("主角", "改装仓库"),
        ["基础扫描器", "维修工具包", "尾"],
        "",
    ),
    ({"op": "insert", "path": "/主角/背包", "value": {"绳": 1}}, ("主角", "背包"), {"绳": 1}, ""),
    ({"op": "add", "path": "/近期事件/-", "value": "进洞"}, ("近期事件",), ["开场", "进洞"], ""),
    ({"op": "insert", "path": "/世界/天气", "value": "雾"}, ("世界", "天气"), "雾", "覆盖了已有的"),
    ({"op": "remove", "path": "/主角/改装仓库/0"}, ("主角", "改装仓库"), ["维修工具包"], ""),
    ({"op": "remove", "path": "/近期事件/0"}, ("近期事件",), [], ""),
    ({"op": "remove", "path": "/世界/天气"}, ("世界",), {"当前地点": "起点"}, ""),
    ({"op": "move", "from": "/世界/天气", "path": "/主角/天气"}, ("主角", "天气"), "晴朗", ""),
    (
        {"op": "move", "from": "/主角/改装仓库/0", "path": "/近期事件/-"},
        ("近期事件",),
        ["开场", "基础扫描器"],
        "",
    ),
    ({"op": "move", "from": "/世界/天气", "path": "/世界/天气"}, ("世界", "天气"), "晴朗", ""),
]


@pytest.mark.parametrize(("patch", "where", "expected", "note"), VALID)
def test_valid_op_is_applied(
    patch: dict[str, Any], where: tuple[Any, ...], expected: Any, note: str
) -> None:
    original = copy.deepcopy(BASE)
    result = apply_patches(BASE, [patch])
    assert result.rejected == []
    assert get(result.variables, *where) == expected
    assert note in result.applied[0].note and bool(result.applied[0].note) == bool(note)
    assert BASE == original  # the input is never changed


def test_move_takes_the_value_away_from_its_source() -> None:
    result = apply_patches(
        BASE, [{"op": "move", "from": "/主角/改装仓库/0", "path": "/近期事件/0"}]
    )
    assert result.variables["主角"]["改装仓库"] == ["维修工具包"]
    assert result.variables["近期事件"] == ["基础扫描器", "开场"]


INVALID: list[tuple[Any, str]] = [
    ("replace", "补丁必须是 JSON 对象"),
    ({"path": "/世界/天气", "value": 1}, "不支持的操作 null"),
    ({"op": "copy", "from": "/世界/天气", "path": "/世界/x"}, '不支持的操作 "copy"'),
    ({"op": "test", "path": "/世界/天气", "value": "晴朗"}, '不支持的操作 "test"'),
    ({"op": "replace", "value": 1}, "path 必须是 /a/b 形式的路径，收到 null"),
    ({"op": "replace", "path": 5, "value": 1}, "path 必须是 /a/b 形式的路径，收到 5"),
    ({"op": "replace", "path": "/", "value": {}}, "不能替换整个变量树"),
    ({"op": "replace", "path": "/主角//生命值", "value": 1}, "path 必须是 /a/b 形式的路径"),
    ({"op": "replace", "path": "/主角/~2", "value": 1}, "~ 只能写作 ~0 或 ~1"),
    ({"op": "replace", "path": "/新分类", "value": 1}, '顶层分类 "新分类" 不存在'),
    ({"op": "insert", "path": "/新分类/x", "value": 1}, '顶层分类 "新分类" 不存在'),
    ({"op": "move", "from": "/世界/天气", "path": "/新分类"}, '顶层分类 "新分类" 不存在'),
    ({"op": "remove", "path": "/主角"}, '不能删除顶层分类 "主角"'),
    ({"op": "move", "from": "/世界", "path": "/主角/世界"}, '不能删除顶层分类 "世界"'),
    ({"op": "replace", "path": "/主角/装备/武器", "value": 1}, "路径 /主角/装备 不存在"),
    (
        {"op": "replace", "path": "/主角/改装仓库/5", "value": 1},
        '"5" 不是 /主角/改装仓库 的有效下标（长度 2）',
    ),
    (
        {"op": "replace", "path": "/主角/改装仓库/-", "value": 1},
        '"-" 不是 /主角/改装仓库 的有效下标',
    ),
    (
        {"op": "replace", "path": "/主角/改装仓库/01", "value": 1},
        '"01" 不是 /主角/改装仓库 的有效下标',
    ),
    (
        {"op": "insert", "path": "/主角/改装仓库/3", "value": 1},
        '"3" 不是 /主角/改装仓库 的有效下标',
    ),
    ({"op": "replace", "path": "/主角/生命值/上限", "value": 1}, "/主角/生命值 不是对象或数组"),
    ({"op": "replace", "path": "/世界/天气"}, "缺少 value"),
    ({"op": "insert", "path": "/世界/x", "value": float("nan")}, "value 不是 JSON 值"),
    ({"op": "delta", "path": "/世界/天气", "value": 1}, '/世界/天气 的值 "晴朗" 不是数字'),
    ({"op": "delta", "path": "/主角/生命值", "value": "5"}, 'delta 的 value 必须是数字，收到 "5"'),
    (
        {"op": "delta", "path": "/主角/生命值", "value": True},
        "delta 的 value 必须是数字，收到 true",
    ),
    ({"op": "delta", "path": "/主角/护甲", "value": 1}, "路径 /主角/护甲 不存在"),
    ({"op": "remove", "path": "/主角/护甲"}, "路径 /主角/护甲 不存在"),
    ({"op": "remove", "path": "/主角/改装仓库/-"}, '"-" 不是 /主角/改装仓库 的有效下标'),
    (
        {"op": "move", "from": "/主角/改装仓库", "path": "/主角/改装仓库/0"},
        "不能把 /主角/改装仓库 移动到它自己里面",
    ),
    ({"op": "move", "from": "/世界/风", "path": "/主角/风"}, "路径 /世界/风 不存在"),
    ({"op": "move", "from": "/世界/天气", "path": "/主角/无/天气"}, "路径 /主角/无 不存在"),
    ({"op": "move", "path": "/主角/天气"}, "from 必须是 /a/b 形式的路径"),
]


@pytest.mark.parametrize(("patch", "reason"), INVALID)
def test_invalid_op_is_rejected_with_its_reason(patch: Any, reason: str) -> None:
    result = apply_patches(BASE, [patch])
    assert result.applied == []
    (record,) = result.rejected
    assert not record.accepted and reason in record.reason
    assert record.to_dict()["reason"] == record.reason
    assert result.variables == BASE


def test_ops_apply_in_order_and_rejections_leave_the_rest_alone() -> None:
    patches = [
        {"op": "delta", "path": "/主角/生命值", "value": -20},
        {"op": "insert", "path": "/新分类", "value": 1},
        {"op": "delta", "path": "/主角/生命值", "value": -20},
        {"op": "remove", "path": "/近期事件/0"},
        {"op": "remove", "path": "/近期事件/0"},
    ]
    result = apply_patches(BASE, patches, lang="en")
    assert result.variables["主角"]["生命值"] == 60 and result.variables["近期事件"] == []
    assert [r.patch for r in result.applied] == [patches[0], patches[2], patches[3]]
    assert [r.reason for r in result.rejected] == [
        'there is no top-level category "新分类" (new categories are not allowed)',
        '"0" is not a valid index of /近期事件 (length 0)',
    ]


def test_no_variables_reject_every_path() -> None:
    result = apply_patches(None, [{"op": "replace", "path": "/a", "value": 1}])
    assert result.variables == {} and len(result.rejected) == 1


# Value/description pairs (MagVarUpdate).

PAIRS: dict[str, Any] = {
    "角色": {
        "好感度": [10, "[-30,100]，互动后变化"],
        "位置": ["教堂", "移动后改变"],
        "物品": [["头纱"], "获得或失去时更新"],
        "情绪": {"愉悦": [0.1, "[-1,1]"]},
    },
    "事件": [],
}


@pytest.mark.parametrize(
    ("patch", "where", "expected"),
    [
        (
            {"op": "delta", "path": "/角色/好感度", "value": 5},
            ("角色", "好感度"),
            [15, "[-30,100]，互动后变化"],
        ),
        (
            {"op": "replace", "path": "/角色/位置", "value": "市场"},
            ("角色", "位置"),
            ["市场", "移动后改变"],
        ),
        (
            {"op": "replace", "path": "/角色/位置", "value": ["集市", "新说明"]},
            ("角色", "位置"),
            ["集市", "新说明"],
        ),
        (
            {"op": "replace", "path": "/角色/好感度/0", "value": 50},
            ("角色", "好感度"),
            [50, "[-30,100]，互动后变化"],
        ),
        (
            {"op": "delta", "path": "/角色/情绪/愉悦", "value": 0.2},
            ("角色", "情绪", "愉悦"),
            [0.3, "[-1,1]"],
        ),
        (
            {"op": "insert", "path": "/角色/物品/-", "value": "十字架"},
            ("角色", "物品"),
            [["头纱", "十字架"], "获得或失去时更新"],
        ),
        ({"op": "remove", "path": "/角色/物品/0"}, ("角色", "物品"), [[], "获得或失去时更新"]),
        (
            {"op": "replace", "path": "/角色/物品", "value": ["a", "b"]},
            ("角色", "物品"),
            [["a", "b"], "获得或失去时更新"],
        ),
    ],
)
def test_pairs_change_the_value_and_keep_the_description(
    patch: dict[str, Any], where: tuple[str, ...], expected: Any
) -> None:
    assert has_descriptions(PAIRS)
    result = apply_patches(PAIRS, [patch])
    assert result.rejected == []
    assert get(result.variables, *where) == expected


def test_a_tree_without_pairs_keeps_two_string_lists_as_lists() -> None:
    assert not has_descriptions(BASE)
    result = apply_patches(BASE, [{"op": "replace", "path": "/主角/改装仓库", "value": "全部卖掉"}])
    assert result.variables["主角"]["改装仓库"] == "全部卖掉"
    assert "  改装仓库: [基础扫描器, 维修工具包]" in mvu_summary(BASE).splitlines()


def test_summary_shows_descriptions_beside_values() -> None:
    assert mvu_summary(PAIRS) == (
        "角色:\n"
        "  好感度: 10（[-30,100]，互动后变化）\n"
        "  位置: 教堂（移动后改变）\n"
        "  物品: [头纱]（获得或失去时更新）\n"
        "  情绪:\n"
        "    愉悦: 0.1（[-1,1]）\n"
        "事件: []"
    )
    assert "  位置: 教堂 (移动后改变)" in mvu_summary(PAIRS, "en").splitlines()
    grown = apply_patches(PAIRS, [{"op": "insert", "path": "/角色/物品/-", "value": "十字架"}])
    assert "  物品: [头纱, 十字架]（获得或失去时更新）" in mvu_summary(grown.variables).splitlines()


def test_summary_of_plain_values_hidden_keys_and_deep_trees() -> None:
    tree = {
        "a": {"b": {"c": {"d": {"e": 1}}, "flag": True}, "_hidden": 1, "空": "", "n": 2.0},
        "$meta": {"x": 1},
        "列表": [1, "二", {"三": 3}],
    }
    assert mvu_summary(tree) == (
        "a:\n"
        "  b:\n"
        "    c:\n"
        '      d: {"e":1}\n'
        "    flag: true\n"
        '  空: ""\n'
        "  n: 2\n"
        '列表: [1, 二, {"三":3}]'
    )


def test_summary_sentinels_for_no_data_and_an_empty_tree() -> None:
    assert mvu_summary(None) == "（无 MVU 数据）"
    assert mvu_summary({}) == "（空状态）"
    assert mvu_summary(None, "en") == "(no MVU data)"
    assert mvu_summary({"_only_hidden": 1}, "en") == "(empty state)"


def test_diff_lists_each_change() -> None:
    patches = [
        {"op": "delta", "path": "/角色/好感度", "value": 5},
        {"op": "insert", "path": "/角色/物品/-", "value": "十字架"},
        {"op": "insert", "path": "/角色/心情", "value": "好"},
        {"op": "remove", "path": "/角色/位置"},
        {"op": "add", "path": "/事件/-", "value": "礼拜"},
    ]
    after = apply_patches(PAIRS, patches).variables
    assert mvu_diff(PAIRS, after) == [
        "/角色/好感度: 10 → 15",
        "- /角色/位置: 教堂",
        "+ /角色/物品: 十字架",
        "+ /角色/心情: 好",
        "+ /事件: 礼拜",
    ]
    assert mvu_diff(after, after) == []
    assert mvu_diff(None, {"a": {"b": 1}}) == ['+ /a: {"b":1}']


# [initvar] parsing.


def test_initvar_json_the_design_documents_example() -> None:
    text = (
        '{"主角": {"生命值": 100, "改装仓库": ["基础扫描器", "维修工具包"]},'
        ' "世界": {"天气": "晴朗"}}'
    )
    parsed = read_initvar(text)
    assert parsed.format == "json"
    assert parsed.variables == {
        "主角": {"生命值": 100, "改装仓库": ["基础扫描器", "维修工具包"]},
        "世界": {"天气": "晴朗"},
    }


def test_initvar_json_with_bom_fence_and_trailing_comma() -> None:
    assert parse_initvar('\ufeff```json\n{"a": {"b": 1}}\n```') == {"a": {"b": 1}}
    lenient = read_initvar('{"a": [1, 2,], "b": {"c": true},}')
    assert lenient.variables == {"a": [1, 2], "b": {"c": True}} and lenient.format == "yaml"


def test_initvar_yaml_keeps_json_like_scalars() -> None:
    text = (
        "主角:\n  生命值: 100\n  速度: 1.5\n  存活: true\n  装备:\n    - 剑\n    - 盾\n"
        "  时间: 8:30\n  回答: yes\n  生日: 2024-01-01\n  空: ~\n"
    )
    parsed = read_initvar(text)
    assert parsed.format == "yaml"
    assert parsed.variables == {
        "主角": {
            "生命值": 100,
            "速度": 1.5,
            "存活": True,
            "装备": ["剑", "盾"],
            "时间": "8:30",
            "回答": "yes",
            "生日": "2024-01-01",
            "空": None,
        }
    }


def test_initvar_indented_text_with_tabs_and_full_width_colons() -> None:
    text = (
        "# 初始变量\n"
        "主角:\n"
        "\t生命值: 100\n"
        '\t名字："亚瑟"\n'
        "\t暴击率: 0.25\n"
        "\t装备:\n"
        "\t\t- 剑\n"
        "\t\t- 盾\n"
        "世界：\n"
        "\t天气: 晴\n"
        "\t下雨: false\n"
        "\t这一行没有冒号\n"
        "\t坐标: [1, 2]\n"
    )
    parsed = read_initvar(text)
    assert parsed.format == "text"
    assert parsed.variables == {
        "主角": {"生命值": 100, "名字": "亚瑟", "暴击率": 0.25, "装备": ["剑", "盾"]},
        "世界": {"天气": "晴", "下雨": False, "坐标": [1, 2]},
    }
    assert parsed.skipped == [(12, "这一行没有冒号")]


def test_initvar_space_indented_text_with_full_width_colons_nests() -> None:
    text = "主角：\n  生命值：100\n  信用点数：500\n世界：\n  天气：晴朗"
    assert parse_initvar(text) == {
        "主角": {"生命值": 100, "信用点数": 500},
        "世界": {"天气": "晴朗"},
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('["a", "b"]', r"\[initvar\] JSON must be an object of categories, got list"),
        (
            '{"a": 1 "b": 2}',
            r"\[initvar\] is not valid JSON: Expecting ',' delimiter \(line 1, column 9\)",
        ),
        (
            "只是一段说明文字",
            r"\[initvar\] has no 'key: value' lines \(line 1: '只是一段说明文字'\)",
        ),
        ('{"a": NaN}', r"\[initvar\] value at a is not a JSON value: nan"),
    ],
)
def test_initvar_errors_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(LorebookError, match=message):
        parse_initvar(text)


def test_blank_initvar_is_empty() -> None:
    assert read_initvar("  \n").format == "empty"
    assert parse_initvar("# 只有注释") == {}


@pytest.mark.fixtures
def test_magvar_riri_initvar_fixture() -> None:
    text = fixture_file("mvu/magvar-riri-initvar1.yaml").read_text(encoding="utf-8")
    parsed = read_initvar(text)
    tree = parsed.variables
    assert parsed.format == "json" and list(tree) == ["<user>", "地点", "理"]
    assert has_descriptions(tree)
    assert tree["<user>"]["名字"] == "<user>"
    assert tree["理"]["好感度"][0] == 0
    assert tree["理"]["好感度"][1].startswith("[-30,100]之间")
    assert tree["理"]["情绪状态"]["pleasure"][0] == 0.1
    assert list(tree["地点"]) == ["教堂", "小镇街道", "面包房", "市场", "诊所", "池边"]

    result = apply_patches(
        tree,
        [
            {"op": "delta", "path": "/理/好感度", "value": 8},
            {"op": "replace", "path": "/<user>/当前位置", "value": "市场"},
            {"op": "replace", "path": "/理/情绪状态/arousal", "value": 0.4},
            {"op": "insert", "path": "/地点/钟楼", "value": {"desc1": "新地点"}},
            {"op": "insert", "path": "/关系", "value": {}},
        ],
    )
    assert [r.accepted for r in result.applied] == [True] * 4 and len(result.rejected) == 1
    new = result.variables
    assert new["理"]["好感度"] == [8, tree["理"]["好感度"][1]]
    assert new["<user>"]["当前位置"] == ["市场", "user所在位置，移动后改变"]
    assert new["理"]["情绪状态"]["arousal"][0] == 0.4
    summary = mvu_summary(new).splitlines()
    assert "  当前位置: 市场（user所在位置，移动后改变）" in summary
    assert "    arousal: 0.4（" in "\n".join(summary)
    assert mvu_diff(tree, new)[:2] == [
        "/<user>/当前位置: 教堂 → 市场",
        '+ /地点/钟楼: {"desc1":"新地点"}',
    ]


@pytest.mark.fixtures
def test_nun_ninja_world_initvar_entry() -> None:
    world = json.loads(fixture_file("zh/nun-ninja-world.json").read_text(encoding="utf-8"))
    (entry,) = [
        e for e in world["entries"].values() if e["comment"].lower().startswith("[initvar]")
    ]
    parsed = read_initvar(entry["content"])
    tree = parsed.variables
    assert parsed.format == "json"
    assert list(tree) == ["环境", "教堂", "莉莉安", "任务", "村民", "近期事件"]
    assert tree["环境"]["经过天数"] == 1 and tree["环境"]["时段"] == "清晨"
    assert tree["教堂"]["持有资金"] == 30 and tree["莉莉安"]["体力"] == 100
    assert tree["任务"] == {} and tree["近期事件"] == []
    assert not has_descriptions(tree)

    # Ops as the entry's own [mvu_update] rules ask for them.
    task = {"委托方": "铁匠", "目标": "找回锤子", "状态": "进行中", "败北值": 0, "报酬": 20}
    result = apply_patches(
        tree,
        [
            {"op": "replace", "path": "/环境/时段", "value": "下午"},
            {"op": "add", "path": "/任务/找回锤子", "value": task},
            {"op": "delta", "path": "/任务/找回锤子/败北值", "value": 25},
            {"op": "add", "path": "/近期事件/-", "value": "接取委托"},
            {"op": "add", "path": "/近期事件/-", "value": "潜入铁匠铺"},
            {"op": "remove", "path": "/近期事件/0"},
            {"op": "delta", "path": "/教堂/持有资金", "value": 20},
            {"op": "replace", "path": "/月影阁/声望", "value": 1},
        ],
    )
    new = result.variables
    assert new["环境"]["时段"] == "下午" and new["教堂"]["持有资金"] == 50
    assert new["任务"]["找回锤子"]["败北值"] == 25
    assert new["近期事件"] == ["潜入铁匠铺"]
    assert [r.reason for r in result.rejected] == ['顶层分类 "月影阁" 不存在，不能新建一级分类']
    assert "  时段: 下午" in mvu_summary(new).splitlines()


def test_the_state_summary_follows_variables_changed_in_place() -> None:
    """Summaries are remembered by the variables' content (a turn shows them to every agent,
    issue #17): a tree changed in place, or a value of another type, shows as it is now."""
    tree: dict[str, Any] = {"hp": 1, "tags": ["a"], "pos": (1, 2)}
    assert mvu_summary(tree, "en").splitlines() == ["hp: 1", "tags: [a]", "pos: [1,2]"]
    tree["tags"].append("b")
    tree["hp"] = True
    assert mvu_summary(tree, "en").splitlines() == ["hp: true", "tags: [a, b]", "pos: [1,2]"]
    tree["pos"] = [1, 2]
    assert mvu_summary(tree, "en").splitlines()[2] == "pos: [1, 2]"
    assert mvu_summary(tree, "zh") == mvu_summary(dict(tree), "zh")
