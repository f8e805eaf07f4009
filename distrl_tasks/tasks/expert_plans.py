"""Per-family policies of the scripted expert: ``plan(screen, task, memo) -> Act | None``.

Each reads the parsed screen, decides the next action and returns ``None`` when the screen shows
the goal done. They find things the way an agent would: by visible text, content-desc and
resource-id, never by reading simulator state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from distrl_tasks.protocol.ui_dump import Screen, UINode
from distrl_tasks.sim.apps import (
    CALENDAR,
    CHROME,
    CLOCK,
    FILES,
    GMAIL,
    LAUNCHER,
    MAPS,
    PLAY_STORE,
    SETTINGS,
    YOUTUBE,
)
from distrl_tasks.tasks.expert_live import is_sponsored
from distrl_tasks.tasks.expert_skills import (
    KEY_BACK,
    KEY_HOME,
    Act,
    Memo,
    field_by_rid,
    fill,
    in_app,
    open_app,
    same_text,
)
from distrl_tasks.tasks.families.names import SYSTEM_LABELS
from distrl_tasks.tasks.families.text import stems
from distrl_tasks.tasks.task import Task

Plan = Callable[[Screen, Mapping[str, str], Memo], Act | None]


def _back(why: str) -> Act:
    return Act.key(KEY_BACK, why)


# ----- Chrome ------------------------------------------------------------------------------------
def _url_bar(screen: Screen) -> UINode | None:
    return screen.first(lambda n: n.rid.endswith(":id/url_bar"))


def chrome_go(screen: Screen, text: str, memo: Memo, done: Callable[[Screen], bool]) -> Act | None:
    """Type ``text`` (a URL or a search) into Chrome's address bar until ``done(screen)``."""
    if screen.package == CHROME and done(screen):
        return None
    if screen.package == LAUNCHER and memo.get("omnibox") != text and not _is_url(text):
        box = field_by_rid(screen, f"{LAUNCHER}:id/search_box")
        if box is not None:  # the home screen's Google bar opens Chrome on the results
            act = fill(screen, box, text, memo)
            if act is not None and act.kind == "key":
                memo["omnibox"] = text
            return act
    if screen.package != CHROME:
        return open_app(screen, "Chrome", CHROME, memo)
    bar = _url_bar(screen)
    if bar is None:
        return _back("find the address bar")
    if not bar.editable or not bar.focused:
        return Act.tap(bar, "edit the address bar")
    act = fill(screen, bar, text, memo)
    return act if act is not None else _back("unexpected page")


def _is_url(text: str) -> bool:
    return "." in text and " " not in text


def _bar_text(screen: Screen) -> str:
    """What the address bar shows for the loaded page ("" while it is being edited)."""
    bar = _url_bar(screen)
    return bar.text if bar is not None and not bar.focused else ""


def _on_site(screen: Screen, site: str) -> bool:
    return site in _bar_text(screen).lower()


def _serp_for(query: str) -> Callable[[Screen], bool]:
    def done(screen: Screen) -> bool:
        box = screen.first(lambda n: n.rid.endswith(":id/serp_search"))
        shown = box.text if box is not None else _bar_text(screen)
        return same_text(shown, query)

    return done


def plan_web_search(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    return chrome_go(screen, p["query"], memo, _serp_for(p["query"]))


def plan_website(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    return chrome_go(screen, p["site"], memo, lambda s: _on_site(s, p["site"]))


def _site_search(screen: Screen, site: str, query: str, memo: Memo) -> Act | None:
    """On a site: search it with its own search box. None when its results show ``query``."""
    box = field_by_rid(screen, ":id/site_search")
    results = screen.first(lambda n: n.rid.endswith(":id/product_item"))
    if box is not None and results is not None and not box.focused and same_text(box.text, query):
        return None  # submitted: the results page shows the query in its box
    if box is None:
        return chrome_go(
            screen, site, memo, lambda s: field_by_rid(s, ":id/site_search") is not None
        )
    return fill(screen, box, query, memo)


def plan_webshop(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    site, query, step = p["site"], p["query"], p["step"]
    if screen.package != CHROME or not _on_site(screen, site):
        return chrome_go(screen, site, memo, lambda s: _on_site(s, site))
    if step == "home":
        return None
    if step == "select" and screen.has_text("Add to cart") and memo.get("picked"):
        return None
    act = _site_search(screen, site, query, memo)
    if act is not None or step == "search":
        return act
    items = screen.where(lambda n: n.rid.endswith(":id/product_item"))
    first = next((n for n in items if not is_sponsored(screen, n)), None)
    if first is None and items:
        return Act.scroll(screen)  # only ads in view: the organic results are further down
    if first is None:
        return _back("no results to pick from")
    memo["picked"] = True
    return Act.tap(first, "select the first entry")


SITE_ROUTE_STEPS = 9  # from Chrome: open the site, its banners, a slow load, its own search


def plan_shop_search(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    """The site's own search when the step budget allows it, else (or for a site without
    search) Google results for item and shop, which the family's check also accepts."""
    site, query = p["site"], p["query"]
    if screen.package == CHROME and "route" not in memo:
        # decided once, in Chrome: its first-run dialogs may have used up part of the budget
        short = memo.get("steps_left", SITE_ROUTE_STEPS) < SITE_ROUTE_STEPS
        memo["route"] = "google" if short and not _on_site(screen, site) else "site"
        memo["no_site_search"] = memo.get("no_site_search") or memo["route"] == "google"
    if memo.get("no_site_search"):
        fallback = f"{query} {site.split('.')[0]}"
        return chrome_go(screen, fallback, memo, _serp_for(fallback))
    if screen.package == CHROME and _on_site(screen, site):
        if field_by_rid(screen, ":id/site_search") is None:
            memo["no_site_search"] = True  # a site without search: ask Google about it instead
            return plan_shop_search(screen, p, memo)
        return _site_search(screen, site, query, memo)
    return chrome_go(screen, site, memo, lambda s: _on_site(s, site))


def plan_chrome_new(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    if memo.get("opened"):
        return None
    act = open_app(screen, "Chrome", CHROME, memo)
    if act is not None:
        return act
    incognito = p["incognito"] == "1"
    item_name = {
        (False, "tab"): "New tab",
        (False, "window"): "New window",
        (True, "tab"): "New Incognito tab",
        (True, "window"): "New Incognito tab",
    }[(incognito, p["kind"])]
    item = screen.by_label(item_name) or (
        screen.by_label("New Incognito window") if incognito else None
    )
    if item is not None:
        memo["opened"] = True
        return Act.tap(item, f"choose {item_name}")
    menu = screen.first(
        lambda n: n.clickable and n.desc.lower() in ("more options", "customize and control")
    )
    if menu is not None:
        return Act.tap(menu, "open Chrome's menu")
    return _back("look for Chrome's menu")


# ----- apps ---------------------------------------------------------------------------------------
def plan_open_app(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    act = open_app(screen, p["app"], p["package"], memo)
    if act is not None or p["page"] != "downloads":
        return act
    if screen.package == FILES and screen.first(
        lambda n: n.text == "Downloads" and not n.clickable
    ):
        return None
    row = screen.by_label("Downloads")
    return Act.tap(row, "open Downloads") if row is not None else _back("find Downloads")


def plan_install(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    label = p["app"]
    if memo.get("installed"):
        return None
    act = open_app(screen, SYSTEM_LABELS[PLAY_STORE], PLAY_STORE, memo)
    if act is not None:
        return act
    install = screen.first(lambda n: n.clickable and n.rid.endswith(":id/install"))
    title = screen.by_rid(":id/title")
    if install is not None and title is not None and title.text.lower() == label.lower():
        memo["installed"] = True
        return Act.tap(install, f"install {label}")
    row = screen.first(lambda n: n.clickable and n.desc.lower() == label.lower())
    box = field_by_rid(screen, ":id/search_bar")
    if row is not None and box is not None and same_text(box.text, label):
        return Act.tap(row, f"open the {label} listing")
    if box is None:
        return _back("back to the Play Store search")
    return fill(screen, box, label, memo)


def plan_set_alarm(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    hour, minute = (int(v) for v in p["time"].split(":"))
    if memo.get("confirmed"):
        return None
    act = open_app(screen, SYSTEM_LABELS[CLOCK], CLOCK, memo)
    if act is not None:
        return act
    hour_box = field_by_rid(screen, ":id/input_hour")
    if hour_box is None:
        add = screen.by_label("Add alarm")
        if add is not None:
            return Act.tap(add, "add an alarm")
        tab = screen.by_label("Alarm")
        return Act.tap(tab, "alarms tab") if tab is not None else _back("find the alarms")
    want_h, want_m = str(hour % 12 or 12), f"{minute:02d}"
    if hour_box.text != want_h:
        return fill(screen, hour_box, want_h, memo, submit=False)
    minute_box = field_by_rid(screen, ":id/input_minute")
    if minute and minute_box is not None and minute_box.text != want_m:
        return fill(screen, minute_box, want_m, memo, submit=False)
    half = "PM" if hour >= 12 else "AM"
    toggle = screen.by_label(half)
    if toggle is not None and not toggle.checked:
        return Act.tap(toggle, f"choose {half}")
    ok = screen.by_label("OK")
    if ok is None:
        return _back("picker without OK")
    memo["confirmed"] = True
    return Act.tap(ok, "confirm the alarm")


def plan_calendar(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    act = open_app(screen, SYSTEM_LABELS[CALENDAR], CALENDAR, memo)
    if act is not None:
        return act
    view = screen.by_rid(f":id/{p['view']}_view")
    if view is None:
        return _back("find the view switcher")
    return None if view.checked else Act.tap(view, f"{p['view']} view")


def plan_email(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    act = open_app(screen, SYSTEM_LABELS[GMAIL], GMAIL, memo)
    if act is not None:
        return act
    return None if screen.has_text("Primary") else _back("back to the inbox")


def plan_notifications_shade(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    if screen.by_rid("com.android.systemui:id/notification_panel") is not None:
        return None
    return Act("swipe", screen.width / 2, 10, screen.width / 2, screen.height * 0.5, why="shade")


def plan_youtube(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    query = p["query"]
    if screen.package == YOUTUBE and screen.by_rid(":id/player_view") is not None:
        if memo.get("played"):
            return None
        return _back("not the video we chose")
    act = open_app(screen, SYSTEM_LABELS[YOUTUBE], YOUTUBE, memo)
    if act is not None:
        return act
    box = field_by_rid(screen, ":id/search_edit_text")
    shown = screen.by_rid(":id/search_query")
    if shown is not None and same_text(shown.text, query):
        want = set(p["terms"].split())
        for row in screen.where(lambda n: n.clickable and " - play video" in n.desc):
            channel = row.desc.split(" - ")[-4] if row.desc.count(" - ") >= 4 else row.desc
            if p["mode"] != "channel" or want <= set(stems(channel)):
                memo["played"] = True
                return Act.tap(row, "play the newest matching video")
        return Act.scroll(screen)
    if box is None:
        search = screen.by_label("Search")
        return Act.tap(search, "open search") if search is not None else _back("find search")
    return fill(screen, box, query, memo)


def _maps_search(screen: Screen, query: str, memo: Memo) -> Act | None:
    """In Maps, search ``query``; None once its results are listed."""
    act = open_app(screen, SYSTEM_LABELS[MAPS], MAPS, memo)
    if act is not None:
        return act
    box = field_by_rid(screen, ":id/search_omnibox_text_box")
    if box is None:
        return _back("back to the Maps search")
    cards = screen.where(lambda n: n.clickable and " stars, " in n.desc)
    if cards and same_text(box.text, query) and memo.get("searched_" + query):
        return None
    act = fill(screen, box, query, memo)
    if act is not None and act.kind == "key":
        memo["searched_" + query] = True
    return act


def plan_maps_search(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    return _maps_search(screen, p["query"], memo)


def plan_directions(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    if screen.package == MAPS and screen.by_rid(":id/route_summary") is not None:
        return None
    if p["mode"] == "find" and screen.package == MAPS and memo.get("searched_" + p["query"]):
        if screen.where(lambda n: n.clickable and " stars, " in n.desc):
            return None
    directions = screen.first(lambda n: n.clickable and n.rid.endswith(":id/directions_button"))
    if screen.package == MAPS and directions is not None:
        return Act.tap(directions, "get directions")
    act = _maps_search(screen, p["query"], memo)
    if act is not None or p["mode"] == "find":
        return act
    nearest = screen.first(lambda n: n.clickable and " stars, " in n.desc)
    return Act.tap(nearest, "open the nearest result") if nearest else _back("no results")


def _settings_app_page(screen: Screen, label: str, memo: Memo) -> Act | None:
    """Open Settings > Apps > ``label``. None when that app's info page is shown."""
    act = open_app(screen, SYSTEM_LABELS[SETTINGS], SETTINGS, memo)
    if act is not None:
        return act
    title = screen.first(lambda n: n.rid.endswith(":id/entity_header_title"))
    if title is not None and title.text.lower() == label.lower():
        return None
    row = screen.first(lambda n: n.clickable and n.label.lower() == label.lower())
    if row is not None:
        return Act.tap(row, f"open {label}")
    for name in ("See all apps", "Apps", "Apps & notifications"):
        entry = screen.by_label(name, exact=False)
        if entry is not None:
            return Act.tap(entry, f"open {name}")
    memo["settings_scrolls"] = memo.get("settings_scrolls", 0) + 1
    return Act.scroll(screen) if memo["settings_scrolls"] < 4 else _back("lost in Settings")


def plan_app_settings(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    return _settings_app_page(screen, p["app"], memo)


def plan_app_notifications(screen: Screen, p: Mapping[str, str], memo: Memo) -> Act | None:
    if memo.get("switched"):
        return None
    switch = screen.first(lambda n: n.rid.endswith("switch_widget") and n.clickable)
    if screen.package == SETTINGS and switch is not None and memo.get("on_notifications"):
        want = {"on": True, "off": False}.get(p["mode"])
        if want is not None and switch.checked == want:
            return None
        memo["switched"] = True
        return Act.tap(switch, "flip the notifications switch")
    act = _settings_app_page(screen, p["app"], memo)
    if act is not None:
        return act
    entry = screen.by_label("Notifications", exact=False)
    if entry is None:
        return Act.scroll(screen)
    memo["on_notifications"] = True
    return Act.tap(entry, "open the app's notifications")


PLANS: dict[str, Plan] = {
    "web_search": plan_web_search,
    "website": plan_website,
    "shop_search": plan_shop_search,
    "webshop": plan_webshop,
    "chrome_new": plan_chrome_new,
    "open_app": plan_open_app,
    "install_app": plan_install,
    "set_alarm": plan_set_alarm,
    "calendar_view": plan_calendar,
    "check_email": plan_email,
    "show_notifications": plan_notifications_shade,
    "youtube_video": plan_youtube,
    "maps_search": plan_maps_search,
    "directions": plan_directions,
    "app_settings": plan_app_settings,
    "app_notifications": plan_app_notifications,
}


def plan_for(task: Task) -> Plan:
    """The policy of the task's family (every family has one)."""
    return PLANS[task.family]


__all__ = ["KEY_HOME", "PLANS", "in_app", "plan_for"]
