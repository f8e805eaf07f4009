"""The documentation stays true: a generated config reference, live links, cited files exist.

Three checks, each able to fail: ``docs/config.md`` equals what
:func:`distrl_tasks.config.reference.render_markdown` writes today; every relative Markdown link
in the README, ``docs/`` and the benchmark results points at a file (and, when it names an
anchor, at a heading of that file); every repository path cited in backticks in the README and
``docs/``, and every ``*.md`` file cited in a docstring or comment of the package, exists.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from distrl_tasks.config.reference import render_markdown

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "distrl_tasks"

# Links: [text](target) and ![alt](target); the target ends at whitespace or ")".
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
# Suffixes that mark a backticked token as a file name rather than a command or a key.
_FILE_SUFFIXES = (".py", ".md", ".yaml", ".yml", ".toml", ".json", ".png", ".ipynb", ".txt")
_MD_CITE = re.compile(r"(?<![\w./-])([\w./-]*\w\.md)\b")


def _markdown_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "benchmarks" / "RESULTS.md"]
    files += sorted((ROOT / "docs").glob("*.md"))
    files += sorted((ROOT / "benchmarks" / "results").glob("*.md"))
    return files


def _cited_in_docs() -> list[Path]:
    """The pages whose backticked paths are checked: the README and docs/ (records are history)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _without_fences(text: str) -> str:
    """``text`` with fenced code blocks blanked (their lines kept, so line numbers stay)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else line)
    return "\n".join(out)


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of the headings in ``path``."""
    anchors = set()
    for line in _without_fences(path.read_text(encoding="utf-8")).split("\n"):
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            title = re.sub(r"[^\w\- ]", "", title)
            anchors.add(title.replace(" ", "-"))
    return anchors


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """Relative links in Markdown file ``path`` whose file (or heading anchor) does not exist."""
    problems = []
    text = _without_fences(path.read_text(encoding="utf-8"))
    for lineno, line in enumerate(text.split("\n"), 1):
        for target in _LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(root)}:{lineno}: {target}"
            if not dest.exists():
                problems.append(f"{where} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                problems.append(f"{where} (no heading #{anchor})")
    return problems


def _is_repo_path(token: str, root: Path) -> bool:
    """Whether a backticked ``token`` names a file or folder of the repository at ``root``."""
    if " " in token or "/" not in token or re.search(r"[<>{}=:$]", token):
        return False
    first = token.split("/", 1)[0]
    tracked_tops = {p.name for p in root.iterdir() if not p.name.startswith(".")} | {".ci"}
    package = root / "distrl_tasks"
    subpackages = {p.name for p in package.iterdir() if p.is_dir() and not p.name.startswith("_")}
    if first in tracked_tops - {"runs", "data"}:
        return True
    # package-relative forms (`agents/autoui.py`) count only when they name a file
    return first in subpackages and token.endswith(_FILE_SUFFIXES)


def _exists(token: str, root: Path) -> bool:
    token = token.rstrip("/")
    for base in (root, root / "distrl_tasks"):
        if "*" in token:
            if any(base.glob(token)):
                return True
        elif (base / token).exists():
            return True
    return False


def missing_cited_paths(path: Path, root: Path = ROOT) -> list[str]:
    """Backticked repository paths in ``path`` that do not exist."""
    problems = []
    text = _without_fences(path.read_text(encoding="utf-8"))
    for lineno, line in enumerate(text.split("\n"), 1):
        for token in _CODE_SPAN.findall(line):
            token = token.strip()
            if _is_repo_path(token, root) and not _exists(token, root):
                problems.append(f"{path.relative_to(root)}:{lineno}: `{token}`")
    return problems


def _docs_and_comments(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring in Python ``source``."""
    found = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None and node.body:
                found.append((node.body[0].lineno, doc))
    return found


def missing_md_citations(path: Path, root: Path = ROOT) -> list[str]:
    """``*.md`` files cited in the docstrings and comments of ``path`` that do not exist."""
    by_name: dict[str, bool] = {}
    problems = []
    for start, text in _docs_and_comments(path.read_text(encoding="utf-8")):
        for match in _MD_CITE.finditer(text):
            cited, lineno = match.group(1), start + text[: match.start()].count("\n")
            if "/" in cited:
                ok = (root / cited).exists() or (path.parent / cited).exists()
            else:  # a bare name: this folder, the root, or a file of that name in the repository
                if cited not in by_name:
                    by_name[cited] = any(
                        p.name == cited
                        for p in root.rglob(cited)
                        if ".venv" not in p.parts and "runs" not in p.parts
                    )
                ok = (path.parent / cited).exists() or by_name[cited]
            if not ok:
                problems.append(f"{path.relative_to(root)}:{lineno}: {cited}")
    return problems


def test_config_reference_is_current() -> None:
    page = ROOT / "docs" / "config.md"
    assert page.exists(), "docs/config.md is missing: run `make docs`"
    assert page.read_text(encoding="utf-8") == render_markdown(), (
        "docs/config.md differs from the config's field comments: run `make docs`"
    )


def test_config_reference_documents_every_key() -> None:
    from distrl_tasks.config import Config

    page = render_markdown()
    for key in Config().to_flat_dict():
        assert f"| `{key}` |" in page, f"{key} is missing from the generated reference"
    undocumented = re.findall(r"^\| `([\w.]+)` \|[^\n]*\|\s*\|$", page, re.M)
    assert not undocumented, f"fields without a comment in the config modules: {undocumented}"


def test_architecture_states_the_current_shard_schema() -> None:
    """The data contract in docs/architecture.md is the table ``schema_markdown`` renders."""
    schema = pytest.importorskip("distrl_tasks.data.schema")
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").replace("\\|", "|")
    rows = [line for line in schema.schema_markdown(1408).split("\n") if line.startswith("| `")]
    missing = [row for row in rows if row not in page.split("\n")]
    assert rows and not missing, "docs/architecture.md: shard columns out of date:\n" + "\n".join(
        missing
    )


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    problems = broken_links(path)
    assert not problems, "broken links:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", _cited_in_docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_cited_paths_exist(path: Path) -> None:
    problems = missing_cited_paths(path)
    assert not problems, "cited paths that do not exist:\n" + "\n".join(problems)


# Citations of a file the repository never had, in modules this change may not edit (issue 54,
# part 4 fixed the others). Each entry must still be there: fixing one fails the test until it
# is removed from this set, so the set only shrinks.
_PENDING: set[tuple[str, str]] = set()


def test_markdown_files_cited_in_the_package_exist() -> None:
    problems = [p for f in sorted(PACKAGE.rglob("*.py")) for p in missing_md_citations(f)]
    found = {(p.split(":", 1)[0], p.rsplit(": ", 1)[1]) for p in problems}
    new = [p for p in problems if (p.split(":", 1)[0], p.rsplit(": ", 1)[1]) not in _PENDING]
    assert not new, "docstrings/comments cite missing files:\n" + "\n".join(new)
    fixed = _PENDING - found
    assert not fixed, f"fixed, remove from _PENDING in tests/unit/test_docs.py: {sorted(fixed)}"


def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    """Each checker flags a planted fault in a small copy of the layout: a pass means something."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "distrl_tasks" / "stages").mkdir(parents=True)
    (tmp_path / "distrl_tasks" / "stages" / "collect.py").write_text("")
    (tmp_path / "docs" / "architecture.md").write_text("# Architecture\n\n## The layers\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "# Planted\n\n## A heading\n\n"
        "[ok](architecture.md#the-layers) [bad](no-such-page.md) [bad anchor](#no-such-heading) "
        "[good anchor](#a-heading) [gone heading](architecture.md#gone)\n\n"
        "`distrl_tasks/stages/collect.py` `stages/collect.py` `distrl_tasks/stages/no_stage.py`\n"
        "```\n[in a fence](ignored.md) `distrl_tasks/ignored.py`\n```\n"
    )
    module = tmp_path / "distrl_tasks" / "stages" / "mod.py"
    module.write_text(
        '"""See docs/architecture.md and ARCHITECTURE.md."""\n\n'
        "X = 1  # the old record, docs/gone.md\n"
    )
    links = broken_links(page, tmp_path)
    assert [link.split(": ", 1)[1] for link in links] == [
        "no-such-page.md (no such file)",
        "#no-such-heading (no heading #no-such-heading)",
        "architecture.md#gone (no heading #gone)",
    ]
    cited = missing_cited_paths(page, tmp_path)
    assert len(cited) == 1 and "no_stage.py" in cited[0]
    md = sorted(missing_md_citations(module, tmp_path))
    assert len(md) == 2 and "ARCHITECTURE.md" in md[0] and "docs/gone.md" in md[1]
