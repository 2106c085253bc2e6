"""The HTML report is one valid, self-contained file; hostile strings render inert in HTML and in Markdown."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

from html5_check import html5_valid
from report_data import write_run

from kernelevo.report.build import build, read_records
from kernelevo.report.html import render_html
from kernelevo.report.markdown import Target, render_markdown

VOID = {"meta", "img", "br", "hr", "link", "input", "col", "area", "base", "source", "wbr"}
HOSTILE = 'ops/x"""<img src=x onerror=alert(1)>@org/team](javascript:alert(1))`|<!--.py::f<script>alert(1)</script>'


class StrictTree(HTMLParser):
    """Fails on an unbalanced or misnested tag; records every tag and every URL attribute."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.urls += [value or "" for name, value in attrs if name in ("src", "href")]
        assert not any(name.startswith("on") for name, _ in attrs), attrs
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()


def parse(html: str) -> StrictTree:
    tree = StrictTree()
    tree.feed(html)
    tree.close()
    assert tree.stack == [], tree.stack
    return tree


def test_the_html_report_is_valid_and_self_contained(gpu_run):
    html = render_html(build(read_records(gpu_run)))
    assert html.startswith("<!DOCTYPE html>")
    tree = parse(html)
    assert tree.tags.count("html") == tree.tags.count("body") == 1 and "script" not in tree.tags
    assert tree.tags.count("img") == 4  # speedup, fitness, rejections, lineage
    assert tree.urls and all(url.startswith("data:image/svg+xml;base64,") for url in tree.urls)  # nothing fetched
    assert "<style>" in html and "Speed per case" in html and "NVIDIA H200" in html
    html5_valid(html)


def test_hostile_and_failed_html_reports_are_valid_html5(tmp_path, failed_run):
    html5_valid(render_html(build(read_records(hostile_run(tmp_path)))))
    html5_valid(render_html(build(read_records(failed_run))))


def test_the_html_report_renders_without_matplotlib(gpu_run):
    """A fresh interpreter where matplotlib cannot be imported: the report says what to install."""
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from pathlib import Path\nfrom kernelevo.report.build import build, read_records\n"
            "from kernelevo.report.html import render_html\n"
            f"print(render_html(build(read_records(Path({str(gpu_run)!r})))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True).stdout
    parse(out)
    assert "plots need the `plots` extra" in out and "<img" not in out and "Speed per case" in out


def hostile_run(tmp_path: Path) -> Path:
    run = write_run(tmp_path / "hostile", op_id=HOSTILE, strategy=HOSTILE)
    summary = json.loads((run / "summary.json").read_text())
    verdict = summary["best"]["verdict"]
    verdict["detail"] = HOSTILE
    verdict["environment"]["gpu"] = HOSTILE
    verdict["timing"]["baseline_notes"] = {HOSTILE: HOSTILE}
    summary["stop_reason"] = HOSTILE
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def test_hostile_strings_are_inert_in_markdown(tmp_path):
    report = build(read_records(hostile_run(tmp_path)))
    for target in (Target.FILE, Target.PR_BODY):
        text = render_markdown(report, target)
        prose = re.sub(r"```.*?```", "", text, flags=re.S)  # fenced: shown literally (the op id cannot close it)
        assert text.count("```") == 2
        outside = re.sub(r"`[^`\n]*`", "", prose)  # code spans: shown literally
        outside = outside.replace("<!-- kernelevo:follow-up", "")
        for markup in ("<img", "<script", "<!--", "](javascript:"):  # only escaped ("\\<img"): shown as text
            assert not re.search(r"(?<!\\)" + re.escape(markup), outside), markup
        assert "@org" not in outside
        for row in text.splitlines():
            if row.startswith("| op |") or row.startswith("| verifier |"):
                cells = re.split(r"(?<!\\)\|", row)
                assert len(cells) == 4, row  # no cell break-out
        marker = text.splitlines()[0] if target is Target.PR_BODY else ""
        assert marker.count("-->") <= 1


def test_hostile_strings_are_escaped_in_html(tmp_path):
    html = render_html(build(read_records(hostile_run(tmp_path))))
    tree = parse(html)
    assert "script" not in tree.tags and all(url.startswith("data:") for url in tree.urls)
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_urls_in_user_strings_do_not_become_links(tmp_path):
    """GitHub links a bare ``https://...`` or ``www.`` in text (and an e-mail address): not in a verifier detail
    or a stop reason, which a candidate or a proposer can steer."""
    run = write_run(tmp_path / "urls")
    summary = json.loads((run / "summary.json").read_text())
    lure = "see https://evil.example/fix or WWW.evil.example, ask admin@evil.example"
    summary["best"]["verdict"]["detail"] = lure
    summary["stop_reason"] = lure
    (run / "summary.json").write_text(json.dumps(summary))
    text = render_markdown(build(read_records(run)), Target.PR_BODY)
    prose = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))
    assert text.count("evil.example/fix") == 2  # both shown, as text
    assert "://" not in prose and not re.search(r"(?i)\bwww\.", prose) and "@evil" not in prose
