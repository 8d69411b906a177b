"""README.zh-CN.md is the whole README in 简体中文, not a summary: every section of README.md has its Chinese
counterpart, every command of the command table and every document README links is there too, its images exist,
and the PAI terms are the console's."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EN = (ROOT / "README.md").read_text(encoding="utf-8")
ZH = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")

#: README.md's headings and their Chinese counterparts (a new English section fails until it is translated).
SECTIONS = {
    "## Set-up (two commands)": "## 安装（两条命令）",
    "## Quick start": "## 快速上手",
    "### Plan from your data": "### 按你的数据规划",
    "### Spot-safe runs and run diagnosis": "### 竞价实例：安全中断与运行诊断",
    "## Commands": "## 命令",
    "### Exit status": "### 退出码",
    "## Web page": "## 网页",
    "## Accuracy": "## 准确度",
    "## Development": "## 开发",
}
CHINESE_ONLY = {"## 中文快速上手", "### 竞价实例：安全中断与运行诊断"}  # README.md's own Chinese quick start


def _headings(text: str) -> list[str]:
    body = re.sub(r"```.*?```", "", text, flags=re.S)
    return [ln.strip() for ln in body.splitlines() if re.match(r"#{2,3} ", ln)]


def test_every_section_is_translated_in_order():
    en = [h for h in _headings(EN) if h not in CHINESE_ONLY]
    assert en == list(SECTIONS), "README.md's sections changed: add them to README.zh-CN.md and SECTIONS"
    zh = _headings(ZH)
    assert [h for h in zh if h in SECTIONS.values()] == list(SECTIONS.values())


def test_links_both_ways():
    assert "(README.zh-CN.md)" in EN.split("\n## ")[0]  # at the top of README.md
    assert "(README.zh-CN.md)" in EN.split("## 中文快速上手")[1]
    assert "[English](README.md)" in ZH.split("\n## ")[0]


def test_every_command_document_and_image_is_there():
    commands = set(re.findall(r"^\| `trainfit (\w+)", EN, flags=re.M))
    assert len(commands) >= 12
    assert commands == set(re.findall(r"^\| `trainfit (\w+)", ZH, flags=re.M))
    docs = set(re.findall(r"\]\((docs/[\w./-]+\.md)", EN))
    assert docs <= set(re.findall(r"\]\((docs/[\w./-]+\.md)", ZH)), docs - set(re.findall(r"\]\((docs/[\w./-]+\.md)", ZH))
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", ZH)
    assert any(i.endswith("-zh.png") for i in images) and all((ROOT / i).is_file() for i in images), images
    # every option of the shared training options is named in the Chinese list too
    flags_en = set(re.findall(r"`(--[a-z][a-z0-9-]+)", EN.split("Training options shared by")[1].split("### Exit")[0]))
    assert flags_en and not flags_en - set(re.findall(r"(--[a-z][a-z0-9-]+)", ZH)), flags_en - set(
        re.findall(r"(--[a-z][a-z0-9-]+)", ZH))


def test_pai_terms_as_the_console_uses_them():
    for term in ("公共资源组", "灵骏智算", "竞价实例", "按量付费", "包年包月"):
        assert term in ZH, term
