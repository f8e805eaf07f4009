"""Simulated web content shown by the simulated Chrome: Google results, web shops, other sites.

Every page is a list of :class:`~distrl_tasks.sim.ui.Node` for the scrollable body of a Chrome
screen. Content is a pure function of the page parameters (query, site, url), so the same query
always shows the same results on every device and in every run.

Modules: :mod:`.intent` (what a query asks for), :mod:`.serp` (the results page), :mod:`.cards`
(its top answer card), :mod:`.facts` (the world knowledge behind the cards), :mod:`.shops` (shop
home, results and product pages), :mod:`.sites` (reddit, Google's home, any other URL),
:mod:`.widgets` (web-page layout and widgets) and :mod:`.text` (display casing of typed text).

Resource-ids of the web views an agent or a test can look for:

- ``com.android.chrome:id/serp_search``: the search box on a Google page (:data:`SERP_SEARCH_ID`)
- ``com.android.chrome:id/site_search``: a shop's search box (:data:`SITE_SEARCH_ID`)
- ``com.android.chrome:id/result_link``: the title of an organic result (:data:`RESULT_ID`)
- ``com.android.chrome:id/product_item``: a product in a shop's results (:data:`PRODUCT_ID`)

Only ASCII plus a handful of Latin-1 glyphs (the degree sign, the middle dot, curly quotes) are
used in texts: the renderer's built-in font draws anything else as a box.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

CHROME_ID = "com.android.chrome:id"  # resource-id prefix of every Chrome view
SERP_SEARCH_ID = f"{CHROME_ID}/serp_search"
SITE_SEARCH_ID = f"{CHROME_ID}/site_search"
RESULT_ID = f"{CHROME_ID}/result_link"
PRODUCT_ID = f"{CHROME_ID}/product_item"


@dataclass(frozen=True)
class Ctx:
    """What a page builder needs from the browser: where the page starts and the text fields."""

    top: int  # page y where web content starts (the bottom of Chrome's toolbar)
    fields: Mapping[str, str] = field(default_factory=dict)
    focus: str | None = None  # resource-id of the focused field
    incognito: bool = False

    def value(self, rid: str) -> str:
        return self.fields.get(rid, "")

    def focused(self, rid: str) -> bool:
        return self.focus == rid
