"""Chrome: the toolbar, the new tab page, the menu, tabs, and web pages from ``sim.web``.

Pages (the ``page`` of :class:`~distrl_tasks.sim.state.SimState`): ``home`` (new tab page,
dark "You've gone Incognito" page in incognito), ``serp`` (query, kind), ``site_home`` (site),
``site_results`` (site, query), ``site_product`` (site, query, item, title), ``web`` (url,
title), ``tabs`` (tab switcher), ``history``, ``settings``. Pages opened in an incognito tab
carry ``incognito="1"``, so BACK restores the mode with the page; ``state_params`` always adds
``incognito`` ("0"/"1") and ``url``.

Toolbar on every page: address bar ``com.android.chrome:id/url_bar`` (shows the host, or the
query on a results page; tapping it gives an empty field, as Chrome selects all on focus), the
tab switcher (content-desc "Switch or close tabs", shows the tab count) and the menu button
(content-desc "More options"). The menu is an overlay (the page underneath stays the current
page); its items are ``com.android.chrome:id/menu_item`` nodes: New tab, New incognito tab,
New window, History, Settings. New tab / window counters only grow (``tabs``,
``incognito_tabs``, ``windows``; 1, 0, 1 at boot).
"""

from __future__ import annotations

from distrl_tasks.sim.app import App, Page, Screen, parse_action
from distrl_tasks.sim.apps.chrome_pages import (
    NTP_SEARCH_ID,
    chrome_page,
    new_tab_page,
    tab_switcher,
)
from distrl_tasks.sim.apps.packages import CHROME
from distrl_tasks.sim.ui import CONTENT_TOP, SCREEN_W, Node, Style
from distrl_tasks.sim.web import SERP_SEARCH_ID, SITE_SEARCH_ID, Ctx
from distrl_tasks.sim.web.intent import intent_for
from distrl_tasks.sim.web.serp import serp_body
from distrl_tasks.sim.web.shops import home_body, product_body, results_body
from distrl_tasks.sim.web.sites import (
    REDDIT,
    display_url,
    looks_like_url,
    page_url,
    reddit_body,
    resolve,
    site_name,
    site_results_target,
    web_body,
)
from distrl_tasks.sim.widgets import VIEWPORT_H

URL_BAR_ID = f"{CHROME}:id/url_bar"
TAB_SWITCHER_ID = f"{CHROME}:id/tab_switcher_button"
MENU_BUTTON_ID = f"{CHROME}:id/menu_button"
MENU_ITEM_ID = f"{CHROME}:id/menu_item"
TOOLBAR_H = 170
MENU_ITEMS = (
    ("New tab", "chrome:new_tab"),
    ("New incognito tab", "chrome:new_incognito"),
    ("New window", "chrome:new_window"),
    ("History", "chrome:history"),
    ("Settings", "chrome:settings"),
)
_CHROME_URLS = {
    "home": "chrome://newtab/",
    "tabs": "chrome://tabs/",
    "history": "chrome://history/",
    "settings": "chrome://settings/",
}


class Chrome(App):
    """The simulated Chrome browser."""

    package = CHROME
    label = "Chrome"
    color = "#4285f4"

    def reset(self) -> None:
        super().reset()
        self.tabs = 1
        self.incognito_tabs = 0
        self.windows = 1
        self.menu_open = False
        self.history: list[tuple[str, str]] = []  # (title, url), newest last
        self.cart: set[str] = set()

    # ----- navigation -----------------------------------------------------------------------
    @property
    def incognito(self) -> bool:
        return self.page.get("incognito") == "1"

    def go(self, name: str, **params: str) -> None:
        """Open a page in the current tab (keeps the tab's incognito mode). Opening the page
        already shown reloads it: the address bar or search box loses focus, as in Chrome."""
        if self.incognito and name not in ("history", "settings", "tabs"):
            params["incognito"] = "1"
        self.menu_open = False
        before = len(self.stack)
        self.push(name, **params)
        if len(self.stack) == before:
            self.phone.on_navigate(self)  # a reload; else a focused, emptied bar would stay
        self._sync_fields()
        url = page_url(name, params)
        if url and not self.incognito:
            title = params.get("title") or params.get("query") or site_name(display_url(url))
            self.history.append((title, url))

    def back(self) -> bool:
        if self.menu_open:
            self.menu_open = False
            self.phone.on_navigate(self)
            return True
        if super().back():
            self._sync_fields()
            return True
        # At the first page of a tab Chrome goes to the background and keeps its tabs and
        # windows; returning False would let the phone finish the app and reset the counters.
        self.phone.go_home()
        return True

    def _sync_fields(self) -> None:
        """Web search boxes show the current page's query; the address bar starts empty."""
        query = self.page.get("query")
        self.fields[URL_BAR_ID] = ""
        self.fields[NTP_SEARCH_ID] = ""
        self.fields[SERP_SEARCH_ID] = query if self.page.name == "serp" else ""
        self.fields[SITE_SEARCH_ID] = query if self.page.name.startswith("site_") else ""

    def navigate(self, text: str) -> None:
        """What ENTER in the address bar does: open a URL, or search Google for the text."""
        text = text.strip()
        if not text:
            return
        if looks_like_url(text):
            name, params = resolve(text)
            if name == "serp":
                params["kind"] = intent_for(params["query"]).kind
            self.go(name, **params)
        else:
            self.open_search(text)

    def open_search(self, query: str) -> None:
        """Show Google results for ``query`` (also called by the launcher's search bar)."""
        query = query.strip()
        if not query:
            raise ValueError("open_search() needs a non-empty query")
        self.go("serp", query=query, kind=intent_for(query).kind)

    def new_tab(self, incognito: bool = False, window: bool = False) -> None:
        if window:
            self.windows += 1
        elif incognito:
            self.incognito_tabs += 1
        else:
            self.tabs += 1
        self.menu_open = False
        params = {"incognito": "1"} if incognito else {}
        self.stack.append(Page("home", params))
        self.phone.on_navigate(self)
        self._sync_fields()

    # ----- events ---------------------------------------------------------------------------
    def on_open(self) -> None:
        self.menu_open = False

    def on_swipe(self, dx: float, dy: float) -> bool:
        if self.menu_open:  # a drag outside the menu dismisses it, as a popup does
            self.menu_open = False
            return True
        return False

    def on_submit(self, rid: str, text: str) -> None:
        if rid in (URL_BAR_ID, NTP_SEARCH_ID, SERP_SEARCH_ID):
            self.navigate(text)
        elif rid == SITE_SEARCH_ID and text.strip():
            site = self.page.get("site")
            if site:
                name, params = site_results_target(site, text)
                self.go(name, **params)

    def on_tap(self, action: str) -> None:
        if action.startswith("open:"):
            name, params = parse_action(action[len("open:") :])
            self.go(name, **params)
        elif action.startswith("nav:"):
            self.navigate(action[len("nav:") :])
        elif action.startswith("clear:"):
            rid = action[len("clear:") :]
            self.fields[rid] = ""
            self.phone.focus = rid  # the cleared box keeps the cursor, ready for typing
        elif action.startswith("serp:tab:"):
            tab = action[len("serp:tab:") :]
            query = self.page.get("query")
            params = {k: v for k, v in self.page.params.items() if k != "tab"}
            if tab == "all":
                self.replace("serp", **{**params, "kind": intent_for(query).kind})
            else:
                self.replace("serp", **{**params, "kind": tab, "tab": tab})
        elif action.startswith("cart:add:"):
            self.cart.add(action[len("cart:add:") :])
        elif action == "chrome:menu":
            self.menu_open = not self.menu_open
        elif action == "chrome:menu_close":
            self.menu_open = False
        elif action == "chrome:new_tab":
            self.new_tab()
        elif action == "chrome:new_incognito":
            self.new_tab(incognito=True)
        elif action == "chrome:new_window":
            self.new_tab(window=True)
        elif action in ("chrome:history", "chrome:settings", "chrome:tabs"):
            self.go(action.split(":")[1])
        elif action == "chrome:tab_back":
            self.back()
        else:
            raise ValueError(f"Chrome got an unknown tap action {action!r}")

    def state_params(self) -> dict[str, str]:
        return {"incognito": "1" if self.incognito else "0", "url": self.url}

    @property
    def url(self) -> str:
        page = self.page
        return _CHROME_URLS.get(page.name) or page_url(page.name, dict(page.params))

    # ----- screens --------------------------------------------------------------------------
    def build(self, page: Page) -> Screen:
        header = [self._toolbar(page)]
        top = CONTENT_TOP + TOOLBAR_H
        ctx = Ctx(top=top, fields=self.fields, focus=self.phone.focus, incognito=self.incognito)
        body = self._body(page, ctx)
        if self.menu_open:
            offset = self.phone.scroll.get((self.package, page), 0)
            body += self._menu(top + offset)
        return Screen(header=header, body=body, loads=page.name not in ("home", "tabs"))

    def _body(self, page: Page, ctx: Ctx) -> list[Node]:
        site = page.get("site")
        if page.name == "serp":
            return serp_body(ctx, page.get("query"), page.get("kind"), page.get("tab", "all"))
        if site == REDDIT:
            return reddit_body(ctx, page.get("query") if page.name == "site_results" else "")
        if page.name == "site_home":
            return home_body(ctx, site)
        if page.name == "site_results":
            return results_body(ctx, site, page.get("query"))
        if page.name == "site_product":
            item = int(page.get("item", "0") or 0)
            sku_key = f"{site}:"
            in_cart = any(k.startswith(sku_key) for k in self.cart)
            return product_body(ctx, site, page.get("query"), item, in_cart)
        if page.name == "web":
            return web_body(ctx, page.get("url"), page.get("title"))
        if page.name == "tabs":
            under = self.stack[-2] if len(self.stack) > 1 else Page("home")
            count = self.incognito_tabs if under.get("incognito") == "1" else self.tabs
            current = under.get("title") or under.get("query") or "New tab"
            return tab_switcher(ctx, count, current)
        if page.name in ("history", "settings"):
            return chrome_page(ctx, page.name, self.history)
        return new_tab_page(ctx)

    def _toolbar(self, page: Page) -> Node:
        dark = self.incognito
        y = CONTENT_TOP
        bar = Node(
            cls="android.view.ViewGroup",
            bounds=(0, y, SCREEN_W, y + TOOLBAR_H),
            resource_id=f"{CHROME}:id/toolbar",
            style=Style(bg="#3c4043" if dark else "#ffffff", border="#dadce0"),
        )
        focused = self.phone.focus == URL_BAR_ID and self.phone.front is self
        typed = self.field_text(URL_BAR_ID)
        if focused or typed:
            shown = typed
        elif page.name == "serp":
            shown = page.get("query")
        else:
            shown = display_url(self.url) if page.name not in _CHROME_URLS else ""
        count = self.incognito_tabs if dark else self.tabs
        bar.add(
            Node(
                cls="android.widget.EditText",
                bounds=(30, y + 25, SCREEN_W - 250, y + TOOLBAR_H - 25),
                text=shown,
                resource_id=URL_BAR_ID,
                hint="Search or type web address",
                editable=True,
                focused=focused,
                style=Style(
                    bg="#202124" if dark else "#f1f3f4",
                    fg="#ffffff" if dark else "#202124",
                    size=40,
                    radius=60,
                    icon="@search" if page.name in _CHROME_URLS or focused else "G",
                    icon_bg="#9aa0a6" if dark else "#5f6368",
                ),
            ),
            Node(
                cls="android.widget.ImageButton",
                bounds=(SCREEN_W - 230, y + 40, SCREEN_W - 130, y + TOOLBAR_H - 40),
                text=str(min(count, 99)),
                resource_id=TAB_SWITCHER_ID,
                content_desc="Switch or close tabs",
                clickable=True,
                action="chrome:tabs",
                style=Style(
                    fg="#ffffff" if dark else "#202124",
                    border="#ffffff" if dark else "#202124",
                    size=38,
                    bold=True,
                    align="center",
                    radius=14,
                ),
            ),
            Node(
                cls="android.widget.ImageButton",
                bounds=(SCREEN_W - 110, y + 25, SCREEN_W - 10, y + TOOLBAR_H - 25),
                resource_id=MENU_BUTTON_ID,
                content_desc="More options",
                clickable=True,
                action="chrome:menu",
                style=Style(icon="@menu", icon_bg="#ffffff" if dark else "#5f6368", size=60),
            ),
        )
        return bar

    def _menu(self, y: int) -> list[Node]:
        """The overflow menu at the top right, over a scrim that closes it."""
        scrim = Node(
            cls="android.view.View",
            bounds=(0, y, SCREEN_W, y + VIEWPORT_H),
            content_desc="Close menu",
            clickable=True,
            action="chrome:menu_close",
        )
        panel = Node(
            cls="android.widget.ListView",
            bounds=(SCREEN_W - 620, y, SCREEN_W - 20, y + 40 + 150 * len(MENU_ITEMS)),
            resource_id=f"{CHROME}:id/app_menu_list",
            style=Style(bg="#ffffff", border="#bdc1c6", radius=16),
        )
        for i, (label, action) in enumerate(MENU_ITEMS):
            top = y + 20 + i * 150
            panel.add(
                Node(
                    cls="android.widget.TextView",
                    bounds=(SCREEN_W - 620, top, SCREEN_W - 20, top + 150),
                    text=label,
                    resource_id=MENU_ITEM_ID,
                    content_desc=label,
                    clickable=True,
                    action=action,
                    style=Style(size=42, fg="#202124"),
                )
            )
        return [scrim, panel]
