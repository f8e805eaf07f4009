"""Drift: the same page looks different from episode to episode.

Transforms of a screen's scrollable body (page coordinates), applied by the phone before it
scrolls and clips, so pixels, hit-tests and XML agree. Content below an inserted block moves
down; nothing is removed that a success predicate reads (those read the phone's state, not the
view tree).
"""

from __future__ import annotations

import dataclasses

from distrl_tasks.sim.app import make_action, parse_action
from distrl_tasks.sim.ui import SCREEN_W, Node, Style
from distrl_tasks.sim.web import PRODUCT_ID, RESULT_ID, SITE_SEARCH_ID
from distrl_tasks.sim.web.shops import product_action, product_at

AD_URL = "https://www.googleadservices.com/pagead/aclk"
SPONSORED = "Sponsored"


def shifted(node: Node, dy: int) -> Node:
    """A deep copy of ``node`` moved down by ``dy``."""
    x1, y1, x2, y2 = node.bounds
    clone = dataclasses.replace(node, bounds=(x1, y1 + dy, x2, y2 + dy), children=[])
    clone.children = [shifted(c, dy) for c in node.children]
    return clone


def insert_at(body: list[Node], y: int, block: list[Node]) -> list[Node]:
    """``body`` with ``block`` (laid out from ``y``) inserted; nodes at or below ``y`` move down
    by the block's height."""
    if not block:
        return body
    height = max(n.bounds[3] for n in block) - y
    at = next((i for i, n in enumerate(body) if n.bounds[1] >= y), len(body))
    moved = [shifted(n, height) for n in body[at:]]
    # in document order too: the hierarchy lists the block where the page shows it
    return [*(n if n.bounds[1] < y else shifted(n, height) for n in body[:at]), *block, *moved]


def ad_action(title: str, slug: str) -> str:
    return "open:" + make_action("web", url=f"{AD_URL}?ad={slug}", title=title)


def _label(y: int, text: str, x: int = 40) -> Node:
    return Node(
        cls="android.widget.TextView",
        bounds=(x, y, x + 40 + 22 * len(text), y + 50),
        text=text,
        style=Style(size=30, bold=True, fg="#202124"),
    )


def sponsored_block(y: int, title: str, action: str, rid: str, ad_text: str) -> list[Node]:
    """A "Sponsored" (or "Ad") label and a clickable title, as an ad above organic results."""
    link = Node(
        cls="android.widget.TextView",
        bounds=(40, y + 60, SCREEN_W - 40, y + 140),
        text=title,
        resource_id=rid,
        content_desc=title,
        clickable=True,
        action=action,
        style=Style(size=42, fg="#1a0dab"),
    )
    return [_label(y, ad_text), link]


# ----- Google results ---------------------------------------------------------------------------
def serp_sponsored(body: list[Node], query: str, *, misleading: bool) -> list[Node]:
    """Sponsored results above the first organic one. Misleading: the ad's title is the first
    organic result's, word for word, but it opens an ad page."""
    first = next((i for i, n in enumerate(body) if n.resource_id == RESULT_ID), None)
    if first is None or first == 0:
        return body
    y = body[first - 1].bounds[1]  # the result's host line sits above its title
    if misleading:
        title = body[first].text
        block = sponsored_block(y, title, ad_action(title, "m"), RESULT_ID, "Ad")
    else:
        title = f"{SPONSORED}: {query.title()} - Top Deals Near You"
        block = sponsored_block(y, title, ad_action(title, "s"), "", SPONSORED)
    return insert_at(body, y, [*block, _spacer(y + 140, 40)])


def rewritten_query(query: str) -> str:
    """The near-miss a site's spelling correction turns ``query`` into (its last word's plural
    toggled: "laptop" -> "laptops", "shoes" -> "shoe")."""
    words = query.split()
    if not words:
        return query
    last = words[-1]
    words[-1] = last[:-1] if last.endswith("s") and len(last) > 3 else last + "s"
    return " ".join(words)


def showing_results_for(body: list[Node], rewrite: str, original_action: str) -> list[Node]:
    """The lines a site puts above the results it shows for a rewritten query: "Showing results
    for <rewrite>" and a "Search instead for <original>" link (``original_action`` opens the
    original query with the rewrite turned off, as Google's ``nfpr=1``)."""
    y = _results_top(body)
    if y is None:
        return body
    original = _query_of(original_action)
    shown = Node(
        cls="android.widget.TextView",
        bounds=(40, y, SCREEN_W - 40, y + 60),
        text=f"Showing results for {rewrite}",
        style=Style(size=34, fg="#202124"),
    )
    link = Node(
        cls="android.widget.TextView",
        bounds=(40, y + 60, SCREEN_W - 40, y + 130),
        text=f"Search instead for {original}",
        content_desc=f"Search instead for {original}",
        resource_id=SEARCH_INSTEAD_ID,
        clickable=True,
        action=original_action,
        style=Style(size=34, fg="#1a0dab"),
    )
    return insert_at(body, y, [shown, link, _spacer(y + 130, 20)])


SEARCH_INSTEAD_ID = "com.android.chrome:id/search_instead"


def _results_top(body: list[Node]) -> int | None:
    """Where results start: under Google's tabs, or above a shop's first product."""
    tab = next((n for n in body if (n.action or "").startswith("serp:tab:")), None)
    if tab is not None:
        return tab.bounds[3] + 10
    first = next((n for n in body if n.resource_id == PRODUCT_ID), None)
    return None if first is None else first.bounds[1]


def _query_of(action: str) -> str:
    return parse_action(action.removeprefix("open:"))[1].get("query", "")


def reorder_results(body: list[Node]) -> list[Node]:
    """Organic results in another order (the first one moves to the end of the list)."""
    starts = [i - 1 for i, n in enumerate(body) if n.resource_id == RESULT_ID and i > 0]
    if len(starts) < 2:
        return body
    end = len(body) - 1  # the page's last line ("From your IP address") stays last
    blocks = [body[a:b] for a, b in zip(starts, [*starts[1:], end], strict=True)]
    tops = [blk[0].bounds[1] for blk in blocks]
    heights = [b - a for a, b in zip(tops, [*tops[1:], body[end].bounds[1]], strict=True)]
    order = [*range(1, len(blocks)), 0]
    out, y = list(body[: starts[0]]), tops[0]
    for k in order:
        out += [shifted(n, y - tops[k]) for n in blocks[k]]
        y += heights[k]
    return out + body[end:]


# ----- shops ------------------------------------------------------------------------------------
def shop_sponsored(body: list[Node], site: str, query: str, *, misleading: bool) -> list[Node]:
    """A sponsored product row above the first result. Misleading: it shows the first result's
    title but opens another product; both are marked "Ad"/"Sponsored" only by a small label."""

    first = next((n for n in body if n.resource_id == PRODUCT_ID), None)
    if first is None:
        return body
    y = first.bounds[1]
    other = f"{query} accessories" if query else "deals"
    if misleading:
        title, label = product_at(site, query, 0).title, "Ad"
    else:
        title, label = f"{SPONSORED}: {product_at(site, other, 0).title}", SPONSORED
    row = Node(
        cls="android.view.ViewGroup",
        bounds=(0, y, SCREEN_W, y + 200),
        resource_id=PRODUCT_ID,
        content_desc=title,
        clickable=True,
        action=product_action(site, other, 0),
        style=Style(border="#e8eaed", bg="#fef7e0"),
    )
    row.add(
        _label(y + 20, label),
        Node(
            cls="android.widget.TextView",
            bounds=(40, y + 80, SCREEN_W - 40, y + 180),
            text=title,
            style=Style(size=38, bold=True),
        ),
    )
    return insert_at(body, y, [row, _spacer(y + 200, 10)])


def promo_banner(body: list[Node], shop: str) -> list[Node]:
    """Layout variant: a promo strip at the top of a shop page (the search box moves down)."""
    if not body:
        return body
    y = min(n.bounds[1] for n in body)
    node = Node(
        cls="android.widget.TextView",
        bounds=(0, y, SCREEN_W, y + 160),
        text=f"{shop} Black Friday: up to 40% off",
        content_desc="Promotion",
        style=Style(size=40, bold=True, bg="#fce8e6", fg="#c5221f", align="center"),
    )
    return insert_at(body, y, [node])


def compact_cards(body: list[Node]) -> list[Node]:
    """Layout variant: product cards without pictures (text moves left)."""
    out = []
    for n in body:
        if n.resource_id != PRODUCT_ID or not n.children:
            out.append(n)
            continue
        kids = [c for c in n.children if c.cls != "android.widget.ImageView"]
        dx = min((c.bounds[0] for c in kids), default=40) - 40
        moved = [
            dataclasses.replace(c, bounds=(c.bounds[0] - dx, c.bounds[1], c.bounds[2], c.bounds[3]))
            for c in kids
        ]
        out.append(dataclasses.replace(n, children=moved))
    return out


def search_box_on_top(body: list[Node]) -> list[Node]:
    """Layout variant: the shop bar has its search box above the logo line, not under it."""
    bar = next((n for n in body if any(c.resource_id == SITE_SEARCH_ID for c in n.children)), None)
    if bar is None:
        return body
    box_top = min(c.bounds[1] for c in bar.children if c.resource_id == SITE_SEARCH_ID)
    logo_top = min(c.bounds[1] for c in bar.children)
    up = box_top - logo_top
    down = max(c.bounds[3] for c in bar.children if c.bounds[1] >= box_top) - box_top + 25
    kids = [shifted(c, -up if c.bounds[1] >= box_top else down) for c in bar.children]
    moved = dataclasses.replace(bar, children=kids)
    return [moved if n is bar else n for n in body]


GRID_H = 520  # height of a product card in the grid layout


def grid_cards(body: list[Node]) -> list[Node]:
    """Layout variant: the result list as a two-column grid (picture on top of the text);
    what follows the results moves up by the height saved."""
    idx = [i for i, n in enumerate(body) if n.resource_id == PRODUCT_ID]
    if len(idx) < 2:
        return body
    a, b = idx[0], idx[-1]
    rows = [n for n in body[a : b + 1] if n.resource_id == PRODUCT_ID]
    top, half = rows[0].bounds[1], SCREEN_W // 2
    cards = [
        _grid_card(row, (k % 2) * half, top + (k // 2) * (GRID_H + 10), half)
        for k, row in enumerate(rows)
    ]
    dy = cards[-1].bounds[3] - body[b].bounds[3]
    return [*body[:a], *cards, *(shifted(n, dy) for n in body[b + 1 :])]


def _grid_card(row: Node, x0: int, y0: int, w: int) -> Node:
    images = [c for c in row.children if c.cls == "android.widget.ImageView"]
    texts = [c for c in row.children if c.cls != "android.widget.ImageView"]
    kids: list[Node] = []
    y = y0 + 20
    for img in images[:1]:
        kids.append(dataclasses.replace(img, bounds=(x0 + 20, y, x0 + w - 20, y + 200)))
        y += 215
    for line, (h, size) in zip(texts, ((60, 32), (50, 28), (70, 44), (50, 28)), strict=False):
        style = dataclasses.replace(line.style, size=size)
        kids.append(dataclasses.replace(line, bounds=(x0 + 20, y, x0 + w - 20, y + h), style=style))
        y += h + 5
    return dataclasses.replace(row, bounds=(x0, y0, x0 + w, y0 + GRID_H), children=kids)


def _spacer(y: int, h: int) -> Node:
    return Node(cls="android.view.View", bounds=(0, y, SCREEN_W, y + h))


def loading_body(top: int) -> list[Node]:
    """What a slow page shows before it paints: a spinner near the top, nothing to tap."""
    mid = top + 500
    return [
        Node(
            cls="android.widget.ProgressBar",
            bounds=(SCREEN_W // 2 - 70, mid - 70, SCREEN_W // 2 + 70, mid + 70),
            content_desc="Loading",
            resource_id="android:id/progress",
            style=Style(bg="#e8f0fe", radius=70, border="#1a73e8"),
        )
    ]
