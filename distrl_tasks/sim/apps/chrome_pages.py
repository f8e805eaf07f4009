"""Chrome's own pages: the new tab page, the tab switcher, history and settings."""

from __future__ import annotations

from distrl_tasks.sim.apps.packages import CHROME
from distrl_tasks.sim.ui import SCREEN_W, Node, Style
from distrl_tasks.sim.web import Ctx
from distrl_tasks.sim.web.sites import display_url
from distrl_tasks.sim.web.widgets import Column, google_search

NTP_SEARCH_ID = f"{CHROME}:id/search_box_text"
SHORTCUTS = (
    ("YouTube", "youtube.com", "#ff0000"),
    ("eBay", "ebay.com", "#e53238"),
    ("Walmart", "walmart.com", "#0071dc"),
    ("Best Buy", "bestbuy.com", "#0046be"),
    ("Newegg", "newegg.com", "#f7a42c"),
    ("Costco", "costco.com", "#e31837"),
    ("Reddit", "reddit.com", "#ff4500"),
    ("Wikipedia", "wikipedia.org", "#5f6368"),
)


def new_tab_page(ctx: Ctx) -> list[Node]:
    """The new tab page: Google search box and site shortcuts (or the incognito notice)."""
    if ctx.incognito:
        col = Column(ctx.top)
        col.add(Node(bounds=(0, ctx.top, SCREEN_W, ctx.top + 2200), style=Style(bg="#202124")))
        col.y = ctx.top + 260
        col.text("You've gone Incognito", size=60, fg="#e8eaed", bold=True, height=120)
        col.gap(30)
        col.paragraph(
            "Others who use this device won't see your activity, so you can browse more "
            "privately. Chrome won't save your browsing history, cookies and site data, or "
            "information entered in forms.",
            size=38,
            fg="#bdc1c6",
            lines=6,
        )
        return col.nodes
    col = Column(ctx.top + 200)
    hint = "Search or type web address"
    google_search(
        col,
        ctx,
        NTP_SEARCH_ID,
        hint,
        logo=150,
        gap=70,
        margin=50,
        height=140,
        bg="#f1f3f4",
        border=None,
    )
    col.gap(80)
    for i, (name, domain, color) in enumerate(SHORTCUTS):
        row, c = divmod(i, 4)
        x, y = 40 + c * 250, col.y + row * 280
        col.nodes.append(
            Node(
                cls="android.widget.FrameLayout",
                bounds=(x, y, x + 250, y + 260),
                content_desc=name,
                clickable=True,
                action=f"nav:{domain}",
            ).add(
                Node(
                    bounds=(x + 65, y + 10, x + 185, y + 130),
                    style=Style(icon=name, icon_bg=color, size=70),
                ),
                Node(
                    cls="android.widget.TextView",
                    bounds=(x, y + 150, x + 250, y + 230),
                    text=name,
                    style=Style(size=34, align="center"),
                ),
            )
        )
    return col.nodes


def tab_switcher(ctx: Ctx, count: int, title_now: str) -> list[Node]:
    """The tab switcher: ``count`` tabs of the current mode, the last one titled ``title_now``."""
    col = Column(ctx.top + 20)
    col.text(f"{count} open tab{'s' if count != 1 else ''}", size=44, bold=True, height=100)
    col.add(
        Node(
            cls="android.widget.Button",
            bounds=(SCREEN_W - 300, ctx.top + 20, SCREEN_W - 40, ctx.top + 120),
            text="+ New tab",
            content_desc="New tab",
            clickable=True,
            action="chrome:new_tab",
            style=Style(size=38, fg="#1a73e8", bold=True, align="center"),
        )
    )
    col.gap(20)
    for i in range(count):
        current = i == count - 1
        title = title_now if current else (f"Tab {i + 1}")
        row, c = divmod(i, 2)
        x, y = 40 + c * 510, col.y + row * 560
        col.nodes.append(
            Node(
                cls="android.widget.FrameLayout",
                bounds=(x, y, x + 490, y + 540),
                text=title,
                content_desc=title,
                clickable=True,
                action="chrome:tab_back",
                style=Style(
                    bg="#f1f3f4", border="#1a73e8" if current else "#dadce0", radius=24, size=34
                ),
            )
        )
    return col.nodes


def chrome_page(ctx: Ctx, name: str, history: list[tuple[str, str]]) -> list[Node]:
    """``chrome://history`` (newest first) or ``chrome://settings``."""
    col = Column(ctx.top + 20)
    col.text(name.title(), size=56, bold=True, height=130)
    if name == "history":
        if not history:
            col.text("Pages you visit appear here", fg="#5f6368")
        for title, url in reversed(history[-30:]):
            col.text(
                title,
                size=40,
                action=f"nav:{url}",
                desc=title,
                height=80,
                icon=display_url(url) or "W",
            )
            col.text(display_url(url), size=32, fg="#5f6368", indent=90)
            col.gap(20)
        return col.nodes
    for label, value in (
        ("Search engine", "Google"),
        ("Passwords", "Saved passwords"),
        ("Privacy and security", "Clear browsing data, safe browsing"),
        ("Homepage", "On"),
        ("Languages", "English (United States)"),
    ):
        col.text(label, size=42, height=80)
        col.text(value, size=34, fg="#5f6368")
        col.gap(30)
    return col.nodes
