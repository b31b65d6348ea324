"""``narrative config`` 与加载器、后端报错的中文文本（``errors.worded``；并入 ``i18n/zh.py``）。
文件名、字段路径、URL、HTTP 状态码和服务商给出的原因作为值原样显示。"""

ERRORS: dict[str, str] = {
    # -- narrative config ------------------------------------------------------------------------
    "config.no_file": "（无：内置默认值）",
    "config.bundled_model": "（内置 SmolLM2-135M-Instruct）",
    "config.key_none": "无需密钥",
    "config.key_env_set": "已设置（${variable}）",
    "config.key_env_unset": "未设置（${variable}）",
    "config.key_file_set": "已设置（文件 {path}）",
    "config.key_unusable": "不可用（{why}）",
    "config.wrote": "已写入 {path}",
    "config.added": "已添加到 {path}：{line}",
    "config.exists": "{path} 已存在",
    "config.exists_hint": "加上 --force 覆盖它",
    "config.unknown_provider": "config add：未知的服务商 {name}（可选：{known}）",
    "config.unknown_provider_hint": "其他服务器请手动写进 config.yaml 的 profiles: 下",
    "config.profile_exists": "{path}：已有名为 {name} 的配置",
}
