"""report.html: written beside the other reports by convert / analyze / port-ext, self-contained (no
network), every piece of user text escaped; in headless Chromium: the cards show report.json's numbers,
diff rows are visible, the filters hide the other rows, and nothing but file:// is requested."""
import json
import re
import shutil
import struct
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import ROOT

import torchport
from torchport.api import analyze
from torchport.api import port_ext as port
from torchport.report import FILES
from torchport.report import html as page

ANALYZE_FIXTURE = ROOT / "tests" / "fixtures" / "analyze_project" / "proj"
EVIL_NAME = "x'\"<script>alert(1)<!--.py"
EVIL_CODE = ("import torch\nimport mylib\nimport pynvml\n"
             "s = \"</td><script>alert('code')</script>\"\n"
             "y = torch.zeros(1, device=\"cuda\")  # <b>bold</b> & \"quotes\"\nmylib.fn(s)\n")
EVIL_RULES = ('[[unsupported]]\nname = "mylib.fn"\ntip = "<script>alert(\\"tip\\")</script> & \'quotes\'"\n\n'
              '[[keep]]\nname = "pynvml"\nmessage = "</td></tr><img src=x onerror=alert(3)>"\n')


class Page(HTMLParser):
    """Tags with their attributes, ids, and the text of <script> and <style> elements."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags, self.ids, self.raw, self._in = [], set(), {"script": [], "style": []}, None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if "id" in attrs:
            assert attrs["id"] not in self.ids, f"duplicate id {attrs['id']}"
            self.ids.add(attrs["id"])
        self._in = tag if tag in self.raw else None

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in:
            self.raw[self._in].append(data)

    def attrs(self, tag=None, **match):
        return [a for t, a in self.tags if (tag is None or t == tag) and all(a.get(k) == v for k, v in match.items())]


def assert_self_contained(text: str) -> Page:
    doc = Page(text)
    assert [t for t, _ in doc.tags if t == "script"] == ["script"], "exactly one script: the inline one"
    assert not any(t in ("iframe", "object", "embed", "img", "video", "audio", "source", "base", "form")
                   for t, _ in doc.tags)
    for tag, attrs in doc.tags:
        assert "src" not in attrs, (tag, attrs)
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)  # no inline handlers
        for key in ("href", "action", "formaction", "poster", "data"):
            value = attrs.get(key)
            assert value is None or value.startswith("#") or value.startswith("data:"), (tag, key, value)
        assert not any(re.search(r"(?i)\b(https?:|//)", v or "") for k, v in attrs.items()
                       if k in ("href", "src", "srcset", "action", "content") and tag != "meta"), (tag, attrs)
    css = "".join(doc.raw["style"])
    assert "url(" not in css and "@import" not in css
    csp = doc.attrs("meta", **{"http-equiv": "Content-Security-Policy"})
    assert csp and "default-src 'none'" in csp[0]["content"] and "http" not in csp[0]["content"]
    assert not re.search(r"""(?i)(src|href)\s*=\s*["']?\s*(https?:)?//""", text)
    return doc


def cards(doc: Page) -> dict:
    """data-count -> the number shown in the card (the text of its .num)."""
    return dict(re.findall(r'<div class="card[^"]*" data-count="([^"]+)"><div class="num">([^<]*)</div>', doc.text))


def load(path: Path) -> Page:
    text = path.read_text(encoding="utf-8")
    doc = assert_self_contained(text)
    doc.text = text
    return doc


def assert_links_resolve(doc: Page):
    hrefs = [a["href"][1:] for a in doc.attrs("a") if a.get("href", "").startswith("#")]
    assert hrefs, "the lists link into the diffs"
    missing = [h for h in hrefs if h not in doc.ids]
    assert not missing, missing


@pytest.fixture
def evil_project(project):
    (project / EVIL_NAME).write_text(EVIL_CODE)
    (project / "weird.py").write_text("import torch\ntorch.cuda.nvtx.range_push('step')\n"
                                      "torch.backends.cudnn.benchmark = True\n")
    (project.parent / "rules.toml").write_text(EVIL_RULES)
    return project


def convert_evil(evil_project, tmp_path, **kw):
    return torchport.convert(evil_project, "mps", tmp_path / "o", rules=[str(evil_project.parent / "rules.toml")], **kw)


# ------------------------------------------------------------------ pure Python
def test_convert_writes_report_html(evil_project, tmp_path):
    result = convert_evil(evil_project, tmp_path)
    folder = tmp_path / "o_report"
    assert "report.html" in FILES and all((folder / name).is_file() for name in FILES)
    data = json.loads((folder / "report.json").read_text())
    doc = load(folder / "report.html")
    shown = cards(doc)
    for key in ("files", "changes", "unsupported", "advice", "errors"):
        assert shown[key] == str(data["summary"][key]), key
    assert data["summary"]["changes"] and data["summary"]["unsupported"] and data["summary"]["advice"]
    rows = doc.attrs("tr", **{"class": "finding"})
    assert len(rows) == len(data["findings"]) == len(result.findings)
    assert sorted(r["data-action"] for r in rows) == sorted(page.GROUP[f["action"]] for f in data["findings"])
    assert {r["data-category"] for r in rows} == {f["category"] for f in data["findings"]}
    shown_files = {f["path"] for f in data["files"] if f["status"] == "converted"} | {f["file"] for f in data["findings"]}
    assert len(doc.attrs("section", **{"class": "file"})) == len(shown_files) > 2
    assert doc.attrs("table", **{"class": "listing"}), "unchanged files with findings: excerpts"
    assert doc.attrs("tr", **{"class": "diff-row chg"})
    assert_links_resolve(doc)
    # the unsupported line of weird.py: linked from the list, marked in the diff
    i = doc.text.index('data-action="unsupported"')
    href = re.search(r'href="#([^"]+)"', doc.text[i:]).group(1)
    assert re.search(rf'<td class="ln m-unsupported" id="{href}"', doc.text)


def test_user_text_is_escaped(evil_project, tmp_path):
    convert_evil(evil_project, tmp_path)
    text = (tmp_path / "o_report" / "report.html").read_text()
    assert text.count("<script") == 1
    for raw in ("<script>alert", "</td><script>", "<img src=x", "<b>bold", "<!--.py"):
        assert raw not in text, raw
    assert "x&#x27;&quot;&lt;script&gt;alert(1)&lt;!--.py" in text                   # the file name
    assert "&lt;/td&gt;&lt;script&gt;alert(&#x27;code&#x27;)&lt;/script&gt;" in text  # the code
    assert "&lt;script&gt;alert(&quot;tip&quot;)&lt;/script&gt; &amp; &#x27;quotes&#x27;" in text  # messages
    assert "&lt;/td&gt;&lt;/tr&gt;&lt;img src=x onerror=alert(3)&gt;" in text
    assert_self_contained(text)


def test_analyze_writes_report_html(tmp_path):
    result = analyze(ANALYZE_FIXTURE, output=tmp_path / "a")
    data = json.loads((tmp_path / "a" / "analysis.json").read_text())
    doc = load(tmp_path / "a" / "report.html")
    shown = cards(doc)
    for key in ("files", "python_files", "lines", "touchpoints", "cuda_kernels", "exported_ops", "errors"):
        assert shown[key] == str(data["summary"][key]), key
    for t in result.targets:
        grade = data["per_target"][t]["readiness"]["grade"]
        assert doc.attrs("div", **{"data-target": t})[0]["data-grade"] == grade
        assert re.search(rf'<tr data-target="{t}">.*?<td data-col="grade" class="grade grade-{grade}">{grade}</td>',
                         doc.text)
    rows = doc.attrs("tr", **{"class": "finding"})
    unsupported = [r for r in rows if r.get("data-target")]
    assert len(unsupported) == sum(len(result.unsupported(t)) for t in result.targets)
    assert len([r for r in rows if not r.get("data-target")]) >= len(result.touchpoints())
    assert doc.attrs("tr", **{"class": "code-row"}), "code excerpts around the touchpoints"
    assert_links_resolve(doc)


def test_port_ext_writes_report_html(tmp_path):
    src = ROOT / "examples" / "cuda_extension"
    result = port(src, "musa", tmp_path / "ext_musa")
    folder = tmp_path / "ext_musa_port_report"
    data = json.loads((folder / "port_report.json").read_text())
    doc = load(folder / "report.html")
    shown = cards(doc)
    for key in ("files", "converted_refs", "left_refs", "unsupported", "needs_review", "lines_changed",
                "renamed_files", "includes_broken"):
        assert shown[key] == str(data["totals"][key]), key
    ported = [r for r in result.files if r.status == "ported"]
    assert len(doc.attrs("section", **{"class": "file"})) == len(ported)
    assert "row_sum.cu &rarr; csrc/row_sum.mu" in doc.text
    assert "musaStream_t" in doc.text and doc.attrs("tr", **{"class": "diff-row chg"})
    assert len(doc.attrs("tr", **{"class": "finding"})) == len(data["findings"])
    assert_links_resolve(doc)
    # npu: an inventory, no diffs
    port(src, "npu", tmp_path / "inv")
    doc = load(tmp_path / "inv" / "report.html")
    assert cards(doc)["kernels"] == "2" and not doc.attrs("tr", **{"class": "diff-row chg"})


@pytest.mark.parametrize("mode", ["in_place", "dry_run", "diff", "single_file"])
def test_every_mode_that_writes_reports_shows_the_diffs(project, tmp_path, mode):
    kw = {"in_place": {"in_place": True}, "dry_run": {"dry_run": True, "report_dir": tmp_path / "r"},
          "diff": {"diff": True, "report_dir": tmp_path / "r"}, "single_file": {"output": tmp_path / "t.py"}}[mode]
    src = project / "train.py" if mode == "single_file" else project
    result = torchport.convert(src, "npu", **kw)
    doc = load(Path(result.report_dir) / "report.html")
    assert "could not be read back" not in doc.text
    assert "torch.npu.device_count" in doc.text and doc.attrs("tr", **{"class": "diff-row chg"})
    assert cards(doc)["changes"] == str(result.summary()["changes"])


def test_no_html_where_no_report_folder_is_written(project, tmp_path):
    for kw in ({"diff": True}, {"dry_run": True}):
        result = torchport.convert(project, "npu", **kw)
        assert result.report_dir is None
    assert not list(tmp_path.rglob("report.html"))
    port(ROOT / "examples" / "cuda_extension", "musa", diff=True)
    assert not list(tmp_path.rglob("report.html"))


def test_big_files_are_collapsed_and_capped(tmp_path, monkeypatch):
    src = tmp_path / "big"
    src.mkdir()
    body = "".join(f"x{i} = {i}\n" for i in range(400))
    (src / "long.py").write_text("import torch\n" + body + "y = torch.ones(1).cuda()\n" + body)
    (src / "many.py").write_text("import torch\n" + "t = torch.ones(1).cuda()\n" * 300)
    (src / "huge.py").write_text("import torch\nz = torch.ones(1).cuda()\n" + body * 6)
    from torchport.report.html import files as sections

    monkeypatch.setattr(sections, "MAX_FILE_ROWS", 100)
    monkeypatch.setattr(sections, "MAX_TEXT_CHARS", 2 * len((src / "long.py").read_text()) + 200)
    torchport.convert(src, "npu", tmp_path / "o")
    doc = load(tmp_path / "o_report" / "report.html")
    sections = re.split(r'<section class="file"', doc.text)[1:]
    by_name = {re.search(r'<span class="path">([^<]*)</span>', s).group(1): s for s in sections}
    assert "Too large to show here" in by_name["huge.py"]
    long = by_name["long.py"]
    assert long.count('class="diff-row') < 20 and "unchanged lines" in long   # 800 unchanged lines folded
    many = by_name["many.py"]
    assert many.count('class="diff-row') == 100 and "this report shows at most 100 lines" in many


def test_inline_highlight_and_folding():
    left, right = page.inline_diff('x = torch.cuda.ones(1, device="cuda")', 'x = torch.npu.ones(1, device="npu")')
    assert re.findall(r'<span class="hl">([^<]*)</span>', left) == ["cuda", "cuda"]
    assert re.findall(r'<span class="hl">([^<]*)</span>', right) == ["npu", "npu"]
    a = [f"l{i}" for i in range(100)]
    b = a[:50] + ["changed"] + a[51:]
    rows = page.collapse(page.align(a, b), {90: 1}, {})
    kinds = [r[0] for r in rows]
    assert kinds.count("chg") == 1 and kinds.count("gap") == 3
    assert sum(1 for r in rows if r[0] == "eq") == 2 * page.CONTEXT + 2 * page.CONTEXT + 1
    assert page.lines_of("a\r\nb\r\n") == ["a", "b"] and page.lines_of("") == []


# ------------------------------------------------------------------ in the browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (CI installs it)")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                                               "--disable-dev-shm-usage"])
        yield b
        b.close()


def open_page(browser, path: Path):
    """A page with every request that is not file:// blocked and recorded; console errors and dialogs too."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(15000)
    seen = {"blocked": [], "errors": [], "dialogs": []}

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            seen["blocked"].append(r.request.url)
            r.abort()

    context.route("**/*", route)
    pg.on("console", lambda m: m.type == "error" and seen["errors"].append(m.text))
    pg.on("pageerror", lambda e: seen["errors"].append(str(e)))
    pg.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    pg.goto(path.resolve().as_uri())
    pg.wait_for_load_state("load")
    return pg, seen


def png_size(data: bytes) -> tuple:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.mark.browser
@needs_chromium
def test_convert_report_in_chromium(browser, evil_project, tmp_path):
    convert_evil(evil_project, tmp_path)
    folder = tmp_path / "o_report"
    summary = json.loads((folder / "report.json").read_text())["summary"]
    pg, seen = open_page(browser, folder / "report.html")
    shot = pg.screenshot(full_page=True)
    width, height = png_size(shot)
    assert len(shot) > 20_000 and width >= 1000 and height >= 900
    (tmp_path / "convert.png").write_bytes(shot)
    for key in ("files", "changes", "unsupported", "advice", "errors"):
        assert pg.locator(f'[data-count="{key}"] .num').inner_text() == str(summary[key]), key
    assert pg.locator("tr.diff-row").first.is_visible()
    assert pg.locator("td.code .hl").first.is_visible()
    assert EVIL_NAME in pg.locator("section.file .path").all_inner_texts()   # shown as text, never run

    findings = pg.locator("tr.finding")
    changes, unsupported = pg.locator('tr.finding[data-action="change"]'), pg.locator('tr.finding[data-action="unsupported"]')
    assert changes.count() == summary["changes"] and unsupported.count() == summary["unsupported"]
    assert changes.first.is_visible() and unsupported.first.is_visible()
    pg.click('[data-filter-action="unsupported"]')
    assert pg.get_attribute('[data-filter-action="unsupported"]', "aria-pressed") == "true"
    assert all(not changes.nth(i).is_visible() for i in range(changes.count()))
    assert all(unsupported.nth(i).is_visible() for i in range(unsupported.count()))
    assert not pg.locator("#list-change").is_visible() and pg.locator("#list-unsupported").is_visible()
    # a file with no unsupported finding is hidden with its diff
    hidden_files = pg.locator("section.file:not([data-keys*='unsupported'])")
    assert hidden_files.count() and not hidden_files.first.is_visible()

    pg.click('[data-filter-action="change"]')
    assert changes.first.is_visible() and not unsupported.first.is_visible()
    pg.click('[data-filter-action=""]')
    pg.select_option("#filter-category", "nvtx")
    visible = [findings.nth(i).get_attribute("data-category") for i in range(findings.count())
               if findings.nth(i).is_visible()]
    assert visible == ["nvtx"]
    pg.select_option("#filter-category", "")
    assert all(findings.nth(i).is_visible() for i in range(findings.count()))

    # the unsupported list links to the marked line of the diff
    link = pg.locator("#list-unsupported a").first
    target = link.get_attribute("href")[1:]
    link.click()
    assert pg.evaluate("location.hash") == f"#{target}"
    assert pg.locator(f"[id='{target}']").is_visible()
    assert "m-unsupported" in pg.get_attribute(f"[id='{target}']", "class")

    assert seen["blocked"] == [], seen["blocked"]
    assert seen["errors"] == [], seen["errors"]   # a CSP violation (wrong hash) would show here
    assert seen["dialogs"] == []
    pg.context.close()


@pytest.mark.browser
@needs_chromium
def test_analyze_report_in_chromium(browser, tmp_path):
    analyze(ANALYZE_FIXTURE, output=tmp_path / "a")
    data = json.loads((tmp_path / "a" / "analysis.json").read_text())
    pg, seen = open_page(browser, tmp_path / "a" / "report.html")
    assert len(pg.screenshot()) > 10_000
    for t, per in data["per_target"].items():
        grade = per["readiness"]["grade"]
        assert pg.locator(f'#grades [data-target="{t}"] .num').inner_text() == grade
        assert pg.locator(f'#readiness tr[data-target="{t}"] td[data-col="grade"]').inner_text() == grade
        assert pg.locator(f'#grades [data-target="{t}"] .effort').inner_text() == f"{per['readiness']['effort']:g}"
    assert pg.locator('[data-count="touchpoints"] .num').inner_text() == str(data["summary"]["touchpoints"])
    assert pg.locator("tr.code-row").first.is_visible()
    pg.click('[data-filter-action="unsupported"]')
    advice = pg.locator('tr.finding[data-action="advice"]')
    assert advice.count() and not advice.first.is_visible()
    assert pg.locator('#list-unsupported tr.finding').first.is_visible()
    assert seen["blocked"] == [] and seen["errors"] == [] and seen["dialogs"] == []
    pg.context.close()


@pytest.mark.browser
@needs_chromium
def test_migrate_report_in_chromium(browser, tmp_path):
    """migrate.html: its cards are migrate.json's counts, the risk filter shows one risk's rows, and a row's line
    link opens the marked line of the migrated file."""
    from torchport.api import migrate

    src = tmp_path / "proj"
    src.mkdir()
    (src / "train.py").write_text("import torch\n\n\ndef cap():\n    return torch.cuda.get_device_capability()\n\n\n"
                                  "model = torch.nn.Linear(2, 2).cuda()\ntorch.backends.cudnn.benchmark = True\n"
                                  "torch.backends.cudnn.deterministic = True\n")
    migrate(src, "npu", tmp_path / "out")
    folder = tmp_path / "out" / "torchport-report"
    data = json.loads((folder / "migrate.json").read_text())
    n = data["counts"]["by_risk"]
    assert n["fail"] == 1 and n["review"] == 2, data["whats_left"]
    pg, seen = open_page(browser, folder / "migrate.html")
    assert png_size(pg.screenshot(full_page=True))[0] >= 1000
    assert pg.locator('[data-count="items"] .num').inner_text() == str(data["counts"]["items"])
    for risk in ("fail", "review"):
        assert pg.locator(f'[data-count="{risk}"] .num').inner_text() == str(n[risk])
    fail, review = pg.locator('#risk-fail tr.finding'), pg.locator('#risk-review tr.finding')
    assert fail.count() == 1 and review.count() == 1     # the two cudnn flags: one rule, one wording, one row
    assert review.first.get_attribute("data-items") == "2"
    pg.click('[data-filter-action="unsupported"]')       # "would fail on a normal path"
    assert fail.first.is_visible() and not review.first.is_visible() and not pg.locator("#risk-review").is_visible()
    pg.click('[data-filter-action=""]')
    link = fail.first.locator("a").first
    target = link.get_attribute("href")[1:]
    link.click()
    assert pg.locator(f"[id='{target}']").is_visible()
    assert "m-unsupported" in pg.get_attribute(f"[id='{target}']", "class")
    assert pg.locator(f"[id='{target}']").inner_text() == str(data["whats_left"][0]["line"])
    assert "would fail" in pg.get_attribute(f"[id='{target}']", "title")
    assert seen["blocked"] == [] and seen["errors"] == [] and seen["dialogs"] == []
    pg.context.close()


def test_excerpts_keep_what_collapse_keeps():
    from torchport.report.html import collapse, excerpts

    cases = [(1, {1}), (10, {1}), (10, {10}), (30, {5, 6, 20}), (30, {4, 12}), (8, {2, 7}), (50, {25}), (9, {99, 3})]
    for n, hot in cases:
        rows = [("eq", i, i) for i in range(1, n + 1)]
        assert excerpts(n, hot) == collapse(rows, {h for h in hot if h <= n}, {}), (n, hot)


def sha256_source(text: str) -> str:
    """A CSP hash-source, computed here without torchport."""
    import base64
    import hashlib

    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def test_csp_hash_of_a_text():
    from torchport.report.html import csp_hash

    for text in ("", "body{color:red}", "\n(function () {})();\n", "ünïcode ✓"):
        assert csp_hash(text) == sha256_source(text)
    assert csp_hash("body{color:red}") != csp_hash("body{color:red} ")   # one character more: another hash


def test_the_csp_follows_the_assets(tmp_path, monkeypatch):
    """The policy is computed from the asset files when a page is written: an edited stylesheet is allowed by its
    new hash, and its old hash is gone."""
    from torchport.report.html import layout

    style, script, csp = layout.assets()
    assert style == "\n" + (layout.ASSETS / "report.css").read_text(encoding="utf-8")
    assert sha256_source(style) in csp and sha256_source(script) in csp
    edited = tmp_path / "assets"
    shutil.copytree(layout.ASSETS, edited)
    (edited / "report.css").write_text((layout.ASSETS / "report.css").read_text() + "p{margin:0}\n")
    monkeypatch.setattr(layout, "ASSETS", edited)
    layout.assets.cache_clear()
    try:
        doc = Page(layout.document("t", "t", [], []))
        new_style = "".join(doc.raw["style"])
        policy = doc.attrs("meta", **{"http-equiv": "Content-Security-Policy"})[0]["content"]
        assert new_style.endswith("p{margin:0}\n") and sha256_source(new_style) in policy
        assert sha256_source(style) not in policy and sha256_source(script) in policy
    finally:
        monkeypatch.undo()
        layout.assets.cache_clear()


def test_every_inline_script_and_style_of_a_written_report_is_in_its_csp(evil_project, tmp_path):
    from torchport.api import migrate

    convert_evil(evil_project, tmp_path)
    analyze(ANALYZE_FIXTURE, output=tmp_path / "a")
    port(ROOT / "examples" / "cuda_extension", "musa", tmp_path / "ext")
    port(ROOT / "examples" / "cuda_extension", "npu", tmp_path / "inv")
    migrate(evil_project, "npu", tmp_path / "m")
    pages = sorted(tmp_path.rglob("*.html"))
    assert len(pages) == 6, pages   # convert, analyze, port-ext twice, migrate.html and its convert/report.html
    for path in pages:
        doc = Page(path.read_text(encoding="utf-8"))
        policy = doc.attrs("meta", **{"http-equiv": "Content-Security-Policy"})[0]["content"]
        allowed = dict(part.strip().split(" ", 1) for part in policy.split(";"))
        assert [tag for tag, _ in doc.tags if tag in ("script", "style")] == ["style", "script"], path
        assert allowed["style-src"] == sha256_source("".join(doc.raw["style"])), path
        assert allowed["script-src"] == sha256_source("".join(doc.raw["script"])), path
        assert allowed["default-src"] == "'none'", path


def test_the_assets_are_package_data():
    """report/assets/ is no package: its files reach a wheel through pyproject.toml's package-data, and are found
    through importlib.resources where the package is installed."""
    import fnmatch
    import importlib.resources

    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib

    from torchport.report.html import layout

    names = sorted(p.name for p in layout.ASSETS.iterdir() if p.is_file())
    assert {"report.css", "report.js"} <= set(names)
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["torchport"]
    for name in names:
        assert any(fnmatch.fnmatch(f"report/assets/{name}", pat) for pat in patterns), name
        found = importlib.resources.files("torchport.report").joinpath("assets").joinpath(name)
        assert found.read_text(encoding="utf-8") == (layout.ASSETS / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("text", ["", "a < b && c > d", "\"quoted\" 'single'", "&amp; already", "<script>alert('x')</script>",
                                  "ünïcode ✓ \u2028", "x=\"1\"&y='2'<>"])
def test_escape_is_html_escape(text):
    import html

    from torchport.report.html import escape
    assert escape(text) == html.escape(text) and escape(text, quote=False) == html.escape(text, quote=False)


def test_side_by_side_rows_come_from_the_edits_and_match_a_diff():
    """convert passes the changed lines (core.edits.line_hunks); on converted fixtures the rows are valid and,
    where several lines were rewritten together, the ones a diff of the texts gives; hunks that do not fit the
    texts fall back to the diff."""
    from torchport.converter.run import Converter, decode
    from torchport.report.html import _from_hunks, align, lines_of

    conv, compared, same = Converter("npu"), 0, 0
    for path in sorted((Path(__file__).parent / "fixtures").rglob("*.py")):
        data = path.read_bytes()
        try:
            new, _findings, _lines, hunks = conv.convert_file(path.name, data, "python")
        except (SyntaxError, UnicodeError):
            continue
        if new is None:
            continue
        a, b = lines_of(decode(data).text), lines_of(decode(new).text)
        rows = _from_hunks(a, b, hunks)
        assert rows is not None and [o for _k, o, _n in rows if o] == list(range(1, len(a) + 1))
        assert [n for _k, _o, n in rows if n] == list(range(1, len(b) + 1))
        assert all(a[o - 1] == b[n - 1] for k, o, n in rows if k == "eq")
        compared += 1
        same += rows == align(a, b)
        assert _from_hunks(a, b, [(1, 1, 1, 3)] + hunks) is None or len(b) < 3  # hunks of other texts
    assert compared >= 10 and same >= compared - 2  # where a statement became two lines, pairings may differ
