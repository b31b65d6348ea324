"""``--help`` in Chinese: each English help paragraph (whitespace folded to single spaces)
mapped to its translation. ``cli/help.py`` looks paragraphs up here when the help language is
``zh``; ``tests/test_i18n.py`` checks that every command's and option's help has an entry, so
a new option without a translation fails the suite rather than showing English."""

HELP: dict[str, str] = {
    # root
    "Play and author SillyTavern-style stories in a terminal.":
        "在终端里游玩和创作酒馆（SillyTavern）风格的故事。",
    "Show the version.": "显示版本。",
    "More logs (-vv: debug).": "输出更多日志（-vv：调试）。",
    "Show tracebacks on errors.": "出错时显示完整的调用栈。",
    "Install completion for the current shell.": "为当前 shell 安装命令补全。",
    "Show completion for the current shell, to copy it or customize the installation.":
        "显示当前 shell 的补全脚本，以便复制或自定义安装。",
    "Show this message and exit.": "显示本帮助并退出。",
    # run
    "Play a character card turn by turn (REPL on a terminal, line mode otherwise).":
        "一轮一轮地游玩角色卡（终端上是交互界面，否则是逐行模式）。",
    "The character card (PNG, JSON, CHARX, YAML).": "角色卡（PNG、JSON、CHARX、YAML）。",
    "The character card (PNG, JSON, CHARX, YAML); several cards play as a group.":
        "角色卡（PNG、JSON、CHARX、YAML）；给出多张卡即作为群组游玩。",
    "A SillyTavern group file to play (or a group's name, with --st-data).":
        "要游玩的酒馆群组文件（或配合 --st-data 给出群组名）。",
    "A world file (repeatable).": "世界书文件（可重复）。",
    "A Chat Completion preset.": "Chat Completion 预设。",
    "Your persona: text or a file.": "你的人设：文字或文件。",
    "Your name ({{user}}).": "你的名字（{{user}}）。",
    "A backend profile.": "后端配置档。",
    "openai, anthropic or local.": "openai、anthropic 或 local。",
    "The provider's base URL.": "服务商的基础 URL。",
    "The model name.": "模型名称。",
    "The environment variable holding the key.": "存放密钥的环境变量。",
    "Write every model call to DIR.": "把每次模型调用写入 DIR。",
    "Seed for dice and lore rolls.": "掷骰和世界书概率的随机种子。",
    "auto, serial, merged or parallel.": "auto、serial、merged 或 parallel。",
    "auto, zh or en.": "auto、zh 或 en（界面与提示词语言）。",
    "Name the session (resumes it if it exists).": "会话名称（已存在则继续该会话）。",
    "An imported chat: summarise its old turns first, or skip (default: ask).":
        "导入的聊天：先总结其旧回合，或跳过（默认：询问）。",
    "Resume session ID (or name).": "继续编号为 ID（或该名称）的会话。",
    "Continue the last played session (of CARD, if given).":
        "继续最近玩过的会话（给出 CARD 时为该卡的）。",
    "Start with greeting N.": "从第 N 条开场白开始。",
    "SillyTavern's user data folder: CARD may be a character's name.":
        "酒馆的用户数据文件夹：CARD 可以是角色名。",
    "Plain output without colour.": "无颜色的纯文本输出。",
    # cards
    "List the characters of a SillyTavern data folder: name, file and linked world.":
        "列出酒馆数据文件夹中的角色：名称、文件和关联的世界书。",
    "Play one with ``narrative run NAME --st-data DIR``.":
        "用 ``narrative run NAME --st-data DIR`` 游玩其中一个。",
    "SillyTavern's user data folder (e.g. data/default-user).":
        "酒馆的用户数据文件夹（例如 data/default-user）。",
    "Print the list as JSON.": "以 JSON 输出列表。",
    # replay
    "Replay the user turns of chat logs through the pipeline, or compare two reports.":
        "让聊天记录中的用户轮次重新走一遍流水线，或比较两份报告。",
    "SillyTavern chats (.jsonl) or narrative-cli exports to replay.":
        "要重放的酒馆聊天（.jsonl）或 narrative-cli 导出文件。",
    "The character card the logs use.": "这些记录所用的角色卡。",
    "The character card the logs use (repeat it for a group chat's members).":
        "这些记录所用的角色卡（群聊的每位成员各给一次）。",
    "Your name ({{user}}); default: the log's.": "你的名字（{{user}}）；默认取记录中的。",
    "Write every model call to DIR (one sub-folder per log).":
        "把每次模型调用写入 DIR（每份记录一个子文件夹）。",
    "Seed for dice and lore rolls; default: from the log.":
        "掷骰和世界书概率的随机种子；默认取自记录。",
    "Answer every call from this recorded trace (no model needed).":
        "用这份录制的追踪回答每次调用（不需要模型）。",
    "Logs replayed at once.": "同时重放的记录数。",
    "At most this many model calls a minute, all logs together.":
        "所有记录合计每分钟最多调用模型的次数。",
    "Write per-log, per-turn figures to FILE.json.": "把每份记录、每一轮的数据写入 FILE.json。",
    "Let --report overwrite an existing file.": "允许 --report 覆盖已有文件。",
    "Compare two reports (A.json B.json) instead of replaying.":
        "比较两份报告（A.json B.json），不重放。",
    "Prices per million tokens (YAML/JSON) for costs.":
        "用于计算费用的每百万令牌价格（YAML/JSON）。",
    # inspect
    "Show a card: fields, greetings, token estimates, lorebook routes, tools, MVU, regex.":
        "查看角色卡：字段、开场白、令牌估算、世界书去向、工具、MVU、正则。",
    "Character card: PNG, JSON or CHARX.": "角色卡：PNG、JSON 或 CHARX。",
    "World file to list too (repeatable).": "一并列出的世界书文件（可重复）。",
    "Chat Completion preset to summarise.": "要概述的 Chat Completion 预设。",
    "Print the report as JSON.": "以 JSON 输出报告。",
    # roll
    "Roll dice with the story engine: the dice notation, DC checks, D&D 5e, CoC 7e, pools.":
        "用故事引擎掷骰：骰子表达式、DC 检定、D&D 5e、克苏鲁 7版、骰池。",
    "Dice expression: 1d20+5, 4d6kh3, 3d6*5, (2d6+6)*5, d%, 2d6!, 1d6r1, 4dF, 6d10>=8. "
    "Optional with --system coc7 (1d100).":
        "骰子表达式：1d20+5、4d6kh3、3d6*5、(2d6+6)*5、d%、2d6!、1d6r1、4dF、6d10>=8。"
        "使用 --system coc7 时可省略（1d100）。",
    "normal, advantage, disadvantage or exploding.":
        "normal（普通）、advantage（优势）、disadvantage（劣势）或 exploding（爆炸）。",
    "Difficulty (AC for a dnd5e attack): success when total ≥ DC.":
        "难度（dnd5e 攻击时为护甲等级）：总计 ≥ DC 即成功。",
    "none, dnd5e, coc7 or pool.": "none、dnd5e、coc7 或 pool。",
    "dnd5e: check, save, attack or damage.":
        "dnd5e：check（检定）、save（豁免）、attack（攻击）或 damage（伤害）。",
    "dnd5e: added to the d20.": "dnd5e：加到 d20 上的值。",
    "dnd5e damage: a critical hit, dice doubled.": "dnd5e 伤害：重击，骰子数翻倍。",
    "coc7: the skill value.": "coc7：技能值。",
    "coc7: regular, hard or extreme.": "coc7：regular（常规）、hard（困难）或 extreme（极难）。",
    "coc7: bonus dice (0-2).": "coc7：奖励骰（0-2）。",
    "coc7: penalty dice (0-2).": "coc7：惩罚骰（0-2）。",
    "coc7: a pushed roll.": "coc7：孤注一掷。",
    "pool: successes needed.": "骰池：需要的成功数。",
    "pool: a die succeeds at this or more.": "骰池：单骰达到此值或以上算成功。",
    "Seed for a repeatable roll.": "可重复掷骰的随机种子。",
    "Print the roll as JSON.": "以 JSON 输出掷骰结果。",
    # lore
    "Author tools for lorebooks.": "世界书的创作工具。",
    "Show which entries TEXT activates, why, where each is routed, and what was rejected.":
        "显示 TEXT 激活了哪些条目、原因、各自去向，以及哪些未激活。",
    "With --chat the whole chat is scanned turn by turn (sticky, cooldown and delay carried "
    "across its turns) and TEXT, if given, is the newest message.":
        "使用 --chat 时逐轮扫描整个聊天（粘滞、冷却和延迟跨轮延续），"
        "给出的 TEXT 作为最新一条消息。",
    "The user's input to scan, as typed this turn.": "要扫描的用户输入，即本轮输入的原文。",
    "World file to use (repeatable).": "使用的世界书文件（可重复）。",
    "Print the result as JSON.": "以 JSON 输出结果。",
    "Seed for probability and group rolls.": "概率与分组抽取的随机种子。",
    "Name for {{user}}.": "{{user}} 的名字。",
    "A SillyTavern chat (.jsonl) to scan first, as ST would.":
        "先扫描的酒馆聊天（.jsonl），与酒馆的做法一致。",
    "Run a world-book test suite: exit 1 if any case fails, 2 if the suite is malformed.":
        "运行世界书测试集：有用例失败时退出码 1，测试集格式错误时 2。",
    "A lore test suite (YAML): card, cases.": "世界书测试集（YAML）：角色卡与用例。",
    "Find entries that can never fire, duplicates, budget and whole-word problems, and show "
    "each entry's token cost. Exit 1 when an entry has an error, 2 on bad input.":
        "找出永远不会触发的条目、重复条目、预算与整词匹配问题，并显示每个条目的令牌开销。"
        "有条目出错时退出码 1，输入有误时 2。",
    "World file to lint too (repeatable).": "一并检查的世界书文件（可重复）。",
    # trace
    "Read traces written with --trace DIR.": "阅读用 --trace DIR 写下的追踪。",
    "Per turn and agent: the prompt block by block, the cached prefix, and the usage.":
        "按轮次和代理：逐块的提示词、缓存的前缀和用量。",
    "A --trace directory.": "一个 --trace 目录。",
    "Only this turn.": "只看这一轮。",
    "Plain output.": "纯文本输出。",
    # sessions
    "List, show, export, import and delete saved sessions.":
        "列出、查看、导出、导入和删除已保存的会话。",
    "List saved sessions, most recently played first.": "列出已保存的会话，最近玩过的在前。",
    "Print JSON instead of a table.": "输出 JSON 而不是表格。",
    "Show a session and its turns.": "查看一个会话及其各轮。",
    "Session id (or its name, when unique).": "会话编号（或唯一的会话名）。",
    "Print whole texts, not previews.": "输出全文，而不是预览。",
    "Export a session as a SillyTavern chat (.jsonl) or a full JSON dump.":
        "把会话导出为酒馆聊天（.jsonl）或完整的 JSON 转储。",
    "FILE is never the session database (nor a link to it); an existing FILE needs --force.":
        "FILE 不能是会话数据库（或指向它的链接）；覆盖已有 FILE 需要 --force。",
    "Where to write the export.": "导出写到哪里。",
    "jsonl: a SillyTavern chat; json: everything. Default: from FILE's suffix, else jsonl.":
        "jsonl：酒馆聊天；json：全部数据。默认按 FILE 的后缀，否则 jsonl。",
    "Overwrite FILE if it exists.": "FILE 已存在时覆盖它。",
    "Import a SillyTavern chat as a new session (continue it with `narrative run --resume`).":
        "把酒馆聊天导入为新会话（用 `narrative run --resume` 继续）。",
    "A SillyTavern chat (.jsonl).": "酒馆聊天（.jsonl）。",
    "Import a SillyTavern chat, or a group's chat, as a new session.":
        "把酒馆聊天或群聊导入为新会话。",
    "Continue it with `narrative run --resume`.": "用 `narrative run --resume` 继续。",
    "A SillyTavern chat (.jsonl); with --group, default: its open chat.":
        "酒馆聊天（.jsonl）；使用 --group 时默认为群组当前打开的聊天。",
    "A SillyTavern group file (or a group's name, with --st-data): FILE is its chat.":
        "酒馆群组文件（配合 --st-data 时也可以是群组名）：FILE 是它的聊天。",
    "SillyTavern's user data folder, for --group.": "酒馆的用户数据文件夹，供 --group 使用。",
    "The card the chat was played with.": "该聊天所用的角色卡。",
    "Name (default: FILE).": "名称（默认：FILE）。",
    "Seed for dice and rolls.": "掷骰的随机种子。",
    "Give a session another name.": "给会话改名。",
    "The new name.": "新名称。",
    "Delete a session and all its turns (branches made from it stay).":
        "删除一个会话及其所有轮次（由它分出的分支保留）。",
    "Do not ask for confirmation.": "不再确认。",
    # config
    "Create, show or locate config.yaml.": "创建、查看或定位 config.yaml。",
    "Write a commented config.yaml to start from.": "写一份带注释的 config.yaml 作为起点。",
    "Overwrite an existing file.": "覆盖已有文件。",
    "Print the settings in effect (flags, environment, file, defaults); keys are never shown.":
        "输出生效的设置（参数、环境变量、文件、默认值）；密钥从不显示。",
    "Use this profile.": "使用这个配置档。",
    "openai|anthropic|local": "openai|anthropic|local",
    "Ad hoc base URL.": "临时指定的基础 URL。",
    "Ad hoc model name.": "临时指定的模型名。",
    "Variable that holds the key.": "存放密钥的变量。",
    "Print JSON instead of YAML.": "输出 JSON 而不是 YAML。",
    "Add a common provider's profile (base URL, model, key variable) to config.yaml.":
        "把常见服务商的配置档（基础 URL、模型、密钥变量）加入 config.yaml。",
    "deepseek, openrouter, ollama, gemini, llamacpp, koboldcpp, openai or anthropic.":
        "deepseek、openrouter、ollama、gemini、llamacpp、koboldcpp、openai 或 anthropic。",
    "Another model.": "换一个模型。",
    "Another base URL.": "换一个基础 URL。",
    "Another key variable.": "换一个密钥变量。",
    "Make it the default profile.": "设为默认配置档。",
    "Print where config.yaml lives (NARRATIVE_HOME moves it).":
        "输出 config.yaml 的位置（NARRATIVE_HOME 可改变它）。",
}
