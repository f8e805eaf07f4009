"""One device's live world: seeded draws, the interruption on screen, and page drift.

Every draw is a hash of (farm seed, serial, episode, screen, perturbation), so devices are
independent, a device repeats exactly for the same inputs, and one perturbation's rate never
shifts another's draws. An *episode* starts at every reset (``simctl task set`` / ``reset``); a
*screen* starts whenever the phone navigates (new page, app switch, BACK, HOME) and the new screen
is first composed. The phone calls :meth:`Dynamics.settle` before composing, so triggers fire
where the agent can see them, and routes input through :meth:`on_tap`, :meth:`on_back`,
:meth:`on_swipe` and :meth:`on_input` first, which is what makes overlays modal.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from distrl_tasks.sim.app import Page, PhoneHost, Screen, make_action
from distrl_tasks.sim.apps import CHROME, LAUNCHER, MAPS, PLAY_STORE, SETTINGS, YOUTUBE
from distrl_tasks.sim.dynamics import drift, overlays
from distrl_tasks.sim.dynamics.catalog import BY_NAME, NAMES, parse_profile, profile_rates
from distrl_tasks.sim.dynamics.overlays import Overlay
from distrl_tasks.sim.screen_tree import header_bottom
from distrl_tasks.sim.ui import hit_test
from distrl_tasks.sim.web.shops import SHOPS

NEWS_HOSTS = ("cnn.com", "bbc.com", "reuters.com", "apnews.com", "nytimes.com", "npr.org")
LOAD_FRAMES = 2  # observations (screencap or uiautomator dump) a slow page shows its spinner


def _uniform(*parts: object) -> float:
    digest = hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


class Dynamics:
    """Live-world perturbations of one device.

    Args:
        profile: ``static``, ``live`` or ``hostile``.
        overrides: per-perturbation rates replacing the profile's (None: keep it).
        seed: the farm seed.
        serial: the device serial (with ``seed``, names this device's random stream).
    """

    def __init__(
        self,
        profile: str = "static",
        overrides: Mapping[str, float | None] | None = None,
        *,
        seed: int = 0,
        serial: str = "emulator-5554",
    ) -> None:
        self.base = f"{seed}/{serial}"
        self.episode = -1
        self.overrides: dict[str, float | None] = {}
        # [opportunities, appearances] per perturbation, over the device's lifetime
        self.stats: dict[str, list[int]] = {n: [0, 0] for n in NAMES}
        self.set_profile(profile, overrides)

    # ----- configuration ---------------------------------------------------------------------
    def set_profile(
        self, profile: str, overrides: Mapping[str, float | None] | None = None
    ) -> None:
        """Switch profile (the device's rate overrides stay unless new ones are given); clears
        what is on screen and re-draws the current episode."""
        self.profile = parse_profile(profile)
        if overrides is not None:
            self.overrides = dict(overrides)
        self.rates = profile_rates(self.profile, self.overrides)
        self.episode = max(self.episode, 0) - 1
        self.new_episode()

    @property
    def enabled(self) -> bool:
        return any(r > 0 for r in self.rates.values())

    def new_episode(self) -> None:
        """Reset: a fresh episode with its own episode-scoped draws."""
        self.episode += 1
        self.overlay: Overlay | None = None
        self.queue: list[Overlay] = []
        self.screen = 0
        self.seen_nav = -1
        self.last_package = LAUNCHER
        self.opened: set[str] = set()
        self.fired: set[str] = set()  # episode-scoped perturbations already triggered
        self.interstitial_back = 0  # 1: dismissed once and due to come back once
        self.loading = 0
        self.applied: set[str] = set()  # drift applied to the current screen
        self.armed = {
            p.name: _uniform(self.base, self.episode, p.name) < self.rates[p.name]
            for p in BY_NAME.values()
            if p.scope == "episode"
        }

    def _roll(self, name: str) -> bool:
        """A per-screen draw for ``name`` on the current screen (counted as an opportunity)."""
        hit = _uniform(self.base, self.episode, self.screen, name) < self.rates[name]
        self._count(name, hit)
        return hit

    def _count(self, name: str, hit: bool) -> None:
        self.stats[name][0] += 1
        self.stats[name][1] += int(hit)

    def _fire_once(self, name: str) -> bool:
        """An episode-scoped trigger: the first opportunity counts; True if armed."""
        if name in self.fired:
            return False
        self.fired.add(name)
        self._count(name, self.armed[name])
        return self.armed[name]

    # ----- triggers --------------------------------------------------------------------------
    def settle(self, phone: PhoneHost) -> None:
        """Fire the triggers of a screen the phone navigated to since the last call."""
        if phone.nav == self.seen_nav or not self.enabled:
            self.seen_nav = phone.nav
            return
        self.seen_nav = phone.nav
        self.screen += 1
        self.applied = set()
        self.loading = 0
        app, shown = phone.front, len(self.queue) + (self.overlay is not None)
        package = app.package
        if package != self.last_package and package != LAUNCHER:
            self._on_app_open(package, app.display_label)
        self.last_package = package
        if package == CHROME:
            self._on_web_page(app.page)
            self._note_drift_opportunity(app.page)
        if package != LAUNCHER:
            if self._roll("anr"):
                self.queue.append(overlays.anr_dialog(app.display_label))
            loads = self.rates["slow_load"] > 0 and app.build(app.page).loads
            if loads and self._roll("slow_load"):
                self.loading = LOAD_FRAMES
        if self.overlay is None or self.overlay.name != "heads_up":
            if self._roll("heads_up"):
                kind = (
                    "battery"
                    if _uniform(self.base, self.episode, self.screen, "hu") < 0.5
                    else "update"
                )
                self.queue.insert(0, overlays.heads_up(kind))
        self._promote()
        if len(self.queue) + (self.overlay is not None) != shown or self.loading:
            phone._touch()

    def _fake(self) -> bool:
        """Whether a promo shown now gets a fake close button (drawn once per episode)."""
        return self._fire_once("fake_close") or self.armed["fake_close"]

    def _on_app_open(self, package: str, label: str) -> None:
        first = package not in self.opened
        self.opened.add(package)
        if package == PLAY_STORE and self._fire_once("rate_app"):
            self.queue.append(overlays.rate_app())
        if package == YOUTUBE and self._fire_once("youtube_premium"):
            self.queue.append(overlays.youtube_premium(self._fake()))
        if not first:
            return
        if package in (MAPS, CHROME) and self._fire_once("permission_location"):
            self.queue.append(overlays.permission_dialog(label, "location"))
        if package == CHROME and self._fire_once("chrome_signin"):
            self.queue.append(overlays.chrome_signin(self._fake()))
        if package not in (SETTINGS,) and self._fire_once("permission_notifications"):
            self.queue.append(overlays.permission_dialog(label, "notifications"))

    def _on_web_page(self, page: Any) -> None:
        site = page.get("site")
        host = page.get("url").split("://", 1)[-1].removeprefix("www.").split("/", 1)[0]
        if site in SHOPS or host in NEWS_HOSTS:
            if self._fire_once("cookie_consent"):
                self.queue.append(overlays.cookie_consent(SHOPS[site].name if site else host))
        if site in SHOPS:
            if self._fire_once("app_interstitial"):
                self.queue.append(overlays.app_interstitial(SHOPS[site].name, self._fake()))
            elif self.interstitial_back == 1:
                self.interstitial_back = 2  # it comes back once, then never again
                self.queue.append(overlays.app_interstitial(SHOPS[site].name, self._fake()))

    # ----- drift -----------------------------------------------------------------------------
    def transform(self, phone: PhoneHost, screen: Screen) -> Screen:
        """The screen as this episode shows it (spinner while loading, drifted pages)."""
        if not self.enabled:
            return screen
        if self.loading and screen.loads:
            top = header_bottom(screen)
            self.applied.add("slow_load")
            return Screen(screen.header, drift.loading_body(top), True, screen.background)
        app = phone.front
        if app.package != CHROME:
            return screen
        page, body = app.page, screen.body
        if page.name == "serp":
            body = self._serp(self._rewrite(app, page, body), page.get("query"))
        elif page.name.startswith("site_") and page.get("site") in _shops():
            body = self._shop(self._rewrite(app, page, body), page)
        if body is screen.body:
            return screen
        return Screen(screen.header, body, screen.loads, screen.background)

    def _once(self, name: str) -> bool:
        """A per-screen draw, counted once per screen however often the screen is composed."""
        key = f"{name}@{self.screen}"
        if key not in self.applied:
            self.applied.add(key)
            if self._roll(name):
                self.applied.add(name)
        return name in self.applied

    def _serp(self, body: list, query: str) -> list:
        if self.armed["result_order"]:
            self.applied.add("result_order")
            body = drift.reorder_results(body)
        if self._once("misleading_sponsored"):
            body = drift.serp_sponsored(body, query, misleading=True)
        if self._once("sponsored_results"):
            body = drift.serp_sponsored(body, query, misleading=False)
        return body

    def _rewrite(self, app: Any, page: Any, body: list) -> list:
        """Did you mean: a result page shows the results of a near-miss query instead, with a
        "Search instead for <original>" link. The page (and so the state) keeps the original
        query; a product opened from these results is the rewrite's, so the agent must take
        the link (it opens the original with ``nfpr=1``: no rewrite, as on Google)."""
        query = page.get("query")
        results = page.name in ("serp", "site_results")
        if not results or not query or page.get("nfpr") == "1" or not self._once("did_you_mean"):
            return body
        rewrite = drift.rewritten_query(query)
        shown = app.build(Page(page.name, {**page.params, "query": rewrite})).body
        back = "open:" + make_action(page.name, **{**page.params, "nfpr": "1"})
        return drift.showing_results_for(shown, rewrite, back)

    def _shop(self, body: list, page: Any) -> list:
        site, shop = page.get("site"), _shops()[page.get("site")].name
        if self.armed["layout_variant"]:
            self.applied.add("layout_variant")
            variant = int(_uniform(self.base, self.episode, "variant") * 3)
            if variant in (0, 2):
                body = drift.promo_banner(body, shop)
            if variant in (1, 2):
                body = drift.compact_cards(body)
        if self.armed["search_box_position"]:
            self.applied.add("search_box_position")
            body = drift.search_box_on_top(body)
        if page.name == "site_results" and self.armed["grid_layout"]:
            self.applied.add("grid_layout")
            body = drift.grid_cards(body)
        if page.name == "site_results":
            query = page.get("query")
            if self._once("misleading_sponsored"):
                body = drift.shop_sponsored(body, site, query, misleading=True)
            if self._once("sponsored_results"):
                body = drift.shop_sponsored(body, site, query, misleading=False)
        return body

    def _note_drift_opportunity(self, page: Any) -> None:
        """Episode-scoped drift is drawn on its first eligible page (painted or not yet)."""
        if page.name == "serp":
            self._fire_once("result_order")
        if page.name.startswith("site_") and page.get("site") in _shops():
            self._fire_once("layout_variant")
            self._fire_once("search_box_position")
        if page.name == "site_results" and page.get("site") in _shops():
            self._fire_once("grid_layout")

    # ----- input (True: the dynamics consumed it) --------------------------------------------
    def observed(self, phone: PhoneHost) -> None:
        """A screencap or hierarchy dump happened: a slow page gets closer to painting."""
        if self.loading:
            self.loading -= 1
            if not self.loading:
                self.applied.discard("slow_load")
                phone._touch()

    def on_input(self, phone: PhoneHost) -> None:
        """Any input: heads-ups time out (one waiting behind a dialog too: it times out there)."""
        for waiting in self.queue:
            if waiting.ttl > 0:
                waiting.ttl -= 1
        self.queue = [o for o in self.queue if o.ttl != 0]
        ov = self.overlay
        if ov is not None and ov.ttl > 0:
            ov.ttl -= 1
            if ov.ttl == 0:
                self._close(phone)

    def on_tap(self, phone: PhoneHost, x: float, y: float) -> bool:
        ov = self.overlay
        if ov is None:
            return False
        node = hit_test(ov.node, x, y)
        if node is not None and node.action and node.action.startswith("dyn:"):
            self._act(phone, node.action)
            return True
        return ov.modal

    def on_back(self, phone: PhoneHost) -> bool:
        ov = self.overlay
        if ov is None or not ov.modal:
            return False
        if ov.back_closes:
            self._close(phone)
        return True

    def on_swipe(self, phone: PhoneHost, x: float, y: float) -> bool:
        ov = self.overlay
        if ov is None:
            return False
        if not ov.modal:
            x1, y1, x2, y2 = ov.node.bounds
            if x1 <= x < x2 and y1 <= y < y2:
                self._close(phone)  # a heads-up is swiped away
                return True
            return False
        return True

    def blocks_typing(self) -> bool:
        return self.overlay is not None and self.overlay.modal

    def on_home(self, phone: PhoneHost) -> None:
        """HOME leaves the app: its dialogs go with it (a heads-up stays)."""
        if self.overlay is not None and self.overlay.modal:
            self.overlay = None
        self.queue = [o for o in self.queue if not o.modal]
        self._promote()

    def _close(self, phone: PhoneHost) -> None:
        closed = self.overlay
        if closed is not None and closed.name == "app_interstitial" and self.interstitial_back == 0:
            self.interstitial_back = 1
        self.overlay = None
        self._promote()
        phone._touch()

    def _promote(self) -> None:
        """Put the next queued overlay on screen, a waiting dialog before a heads-up (which steps
        back behind it): a heads-up never hides a modal dialog, so one timing out on an input
        never uncovers a dialog that swallows that input before the agent could see it."""
        if self.overlay is not None and self.overlay.modal:
            return
        i = next((k for k, o in enumerate(self.queue) if o.modal), None)
        if i is not None:
            dialog = self.queue.pop(i)
            if self.overlay is not None:
                self.queue.insert(0, self.overlay)
            self.overlay = dialog
        elif self.overlay is None and self.queue:
            self.overlay = self.queue.pop(0)

    def _act(self, phone: PhoneHost, action: str) -> None:
        self._close(phone)
        if action == "dyn:ad":
            chrome = phone.apps[CHROME]
            if phone.front is not chrome:
                phone.launch(CHROME)
            chrome.go("web", url=f"{drift.AD_URL}?ad=promo", title="Advertisement")
        elif action == "dyn:store":
            phone.launch(PLAY_STORE)
        elif action == "dyn:close_app":
            app = phone.front
            phone.go_home()
            app.reset()
        elif action == "dyn:settings":
            phone.launch(SETTINGS)

    # ----- reporting -------------------------------------------------------------------------
    def on_screen(self) -> list[str]:
        """Names of the perturbations visible now."""
        names = sorted(n for n in self.applied if "@" not in n)
        if self.overlay is not None:
            names.insert(0, self.overlay.name)
        return names

    def describe(self) -> dict[str, Any]:
        """What ``simctl state`` reports."""
        return {"profile": self.profile, "on_screen": self.on_screen(), "episode": self.episode}


def _shops() -> Mapping[str, Any]:
    return SHOPS
