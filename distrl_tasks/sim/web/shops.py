"""The five web shops of the AitW WebShop tasks: bestbuy, costco, ebay, newegg and walmart.

Each shop has its own colors and logo and three pages (Chrome page names, see
:mod:`distrl_tasks.sim.state`):

- ``site_home`` (params ``site``): logo, search box, category chips, today's deals
- ``site_results`` (``site``, ``query``): products whose titles contain the query, first row on top
- ``site_product`` (``site``, ``query``, ``item``, ``title``): the product page; ``item`` is the
  row index in the results ("0" = the first entry)

The search box of every shop is the editable node ``com.android.chrome:id/site_search`` (ENTER
searches); product rows are clickable nodes ``com.android.chrome:id/product_item`` whose
content-desc is the product title. The catalog is generated from the query with stable hashes,
so any query gets the same products on every run.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, quote_plus

from distrl_tasks.sim.app import make_action, pick, stable_int
from distrl_tasks.sim.ui import SCREEN_W, Node, Style
from distrl_tasks.sim.web import PRODUCT_ID, SITE_SEARCH_ID, Ctx
from distrl_tasks.sim.web.text import money, rating_text, smart_title
from distrl_tasks.sim.web.widgets import Column, input_box, text_at, text_width


@dataclass(frozen=True)
class Shop:
    """Looks and URL scheme of one shop."""

    domain: str  # canonical host without "www."
    name: str
    header_bg: str
    logo: tuple[tuple[str, str], ...]  # (text, color) runs drawn side by side
    accent: str  # buttons and prices
    search_path: str  # path of the search page
    search_param: str  # query-string key holding the search terms
    item_path: str  # product URL prefix
    notes: tuple[str, ...]  # delivery / condition lines shown under prices
    categories: tuple[str, ...]
    deals: tuple[str, ...]  # product names featured on the home page


SHOPS: dict[str, Shop] = {
    s.domain: s
    for s in (
        Shop(
            "bestbuy.com",
            "Best Buy",
            "#0046be",
            (("BEST BUY", "#1d252c"),),
            "#0046be",
            "/site/searchpage.jsp",
            "st",
            "/site/",
            ("Get it by tomorrow", "Pickup today", "Free shipping"),
            ("Laptops", "TVs", "Headphones", "Gaming"),
            ("apple airpods pro", "samsung 65 inch 4k tv", "nintendo switch"),
        ),
        Shop(
            "costco.com",
            "Costco",
            "#005dab",
            (("COSTCO", "#e31837"), (" WHOLESALE", "#ffffff")),
            "#005dab",
            "/CatalogSearch",
            "keyword",
            "/product.",
            ("Delivery included", "Member only item", "Online only"),
            ("Electronics", "Computers", "Appliances", "Grocery"),
            ("kirkland signature coffee", "bose soundlink mini", "hp laptop"),
        ),
        Shop(
            "ebay.com",
            "eBay",
            "#ffffff",
            (("e", "#e53238"), ("b", "#0064d2"), ("a", "#f5af02"), ("y", "#86b817")),
            "#3665f3",
            "/sch/i.html",
            "_nkw",
            "/itm/",
            ("Brand New · Buy It Now", "Pre-Owned · Free shipping", "Open box · or Best Offer"),
            ("Electronics", "Motors", "Collectibles", "Fashion"),
            ("apple iphone 11", "sony wh-1000xm4", "lego star wars"),
        ),
        Shop(
            "newegg.com",
            "Newegg",
            "#172133",
            (("newegg", "#f7a42c"),),
            "#f7a42c",
            "/p/pl",
            "d",
            "/p/",
            ("Free shipping", "Ships from United States", "Sold by Newegg"),
            ("Components", "Laptops", "Monitors", "Networking"),
            ("amd ryzen 7 5800x", "samsung 970 evo ssd", "corsair k70"),
        ),
        Shop(
            "walmart.com",
            "Walmart",
            "#0071dc",
            (("Walmart", "#ffffff"), (" *", "#ffc220")),
            "#0071dc",
            "/search",
            "q",
            "/ip/",
            ("Free shipping, arrives in 2 days", "Pickup today", "Sold and shipped by Walmart"),
            ("Electronics", "Home", "Grocery", "Toys"),
            ("onn 50 inch tv", "instant pot duo", "apple watch se"),
        ),
    )
}

RESULTS_PER_PAGE = 12
ROW_H = 360

_SUFFIXES = (
    "- Black",
    "(Latest Model)",
    "- Silver",
    "Bundle with Carrying Case",
    "(Renewed)",
    "2-Pack",
    "- White",
    "with 2-Year Protection Plan",
    "Special Edition",
    "- Open Box",
    "International Version",
    "Starter Kit",
)


@dataclass(frozen=True)
class Product:
    """One catalog entry."""

    title: str
    price: float
    rating: float
    reviews: int
    note: str
    sku: str


def shop_for(site: str) -> Shop:
    """The shop for a canonical domain (``"ebay.com"``); a clear error for anything else."""
    shop = SHOPS.get(site)
    if shop is None:
        raise ValueError(f"unknown shop site {site!r}; expected one of {sorted(SHOPS)}")
    return shop


def normalize_query(query: str) -> str:
    return " ".join(query.split())


def catalog(site: str, query: str, n: int = RESULTS_PER_PAGE) -> list[Product]:
    """The first ``n`` search results of ``site`` for ``query``; every title contains the query.

    Prices share a base derived from the query alone, so one product costs about the same in
    every shop, and vary per shop and row.
    """
    shop = shop_for(site)
    q = normalize_query(query)
    if not q:
        return []
    base_name = smart_title(q)
    base_price = 15 + stable_int("price", q.lower()) % 1400
    items = []
    for i in range(n):
        key = (site, q.lower(), str(i))
        suffix = pick(_SUFFIXES, "suffix", *key)
        title = f"{base_name} {suffix}" if i % 3 != 2 else f"New {base_name} {suffix}"
        factor = 0.8 + (stable_int("factor", *key) % 45) / 100
        items.append(
            Product(
                title=title,
                price=round(base_price * factor) - 0.01,
                rating=3.5 + (stable_int("rating", *key) % 16) / 10,
                reviews=12 + stable_int("reviews", *key) % 4800,
                note=pick(shop.notes, "note", *key),
                sku=str(1_000_000 + stable_int("sku", *key) % 8_999_999),
            )
        )
    return items


def product_at(site: str, query: str, item: int) -> Product:
    """Row ``item`` of the results for ``query`` (as shown on the results page)."""
    products = catalog(site, query, max(RESULTS_PER_PAGE, item + 1))
    if not 0 <= item < len(products):
        raise ValueError(f"no product #{item} for query {query!r} on {site}")
    return products[item]


def search_url(site: str, query: str) -> str:
    shop = shop_for(site)
    return f"https://www.{site}{shop.search_path}?{shop.search_param}={quote_plus(query)}"


def product_url(site: str, query: str, item: int) -> str:
    shop = shop_for(site)
    return f"https://www.{site}{shop.item_path}{product_at(site, query, item).sku}"


def parse_shop_url(site: str, path: str, query_string: str) -> tuple[str, dict[str, str]]:
    """Map a URL on a shop to a Chrome page: its search page with terms, else its home page."""
    shop = shop_for(site)
    terms = parse_qs(query_string).get(shop.search_param, [""])[0].strip()
    if path.rstrip("/") == shop.search_path and terms:
        return "site_results", {"site": site, "query": normalize_query(terms)}
    return "site_home", {"site": site}


def product_action(site: str, query: str, item: int) -> str:
    title = product_at(site, query, item).title
    return "open:" + make_action(
        "site_product", site=site, query=query, item=str(item), title=title
    )


# ----- pages ------------------------------------------------------------------------------
def _header(shop: Shop, ctx: Ctx) -> Column:
    """Shop bar with the logo, then the search box; returns the column to continue below."""
    y = ctx.top
    dark_text = shop.header_bg == "#ffffff"
    col = Column(y)
    bar = col.add(
        Node(
            cls="android.view.View",
            bounds=(0, y, SCREEN_W, y + 290),
            content_desc=f"{shop.name} home",
            style=Style(bg=shop.header_bg),
        )
    )
    x = 48
    for text, color in shop.logo:
        w = text_width(text, 60) + 50  # padded: the renderer insets text from the edges
        bg = "#fff200" if shop.domain == "bestbuy.com" else None
        bar.add(
            Node(
                cls="android.widget.TextView",
                bounds=(x, y + 20, x + w, y + 120),
                text=text,
                style=Style(fg=color, bg=bg, size=60, bold=True, radius=8, align="center"),
            )
        )
        x += w
    bar.add(
        Node(
            cls="android.widget.TextView",
            bounds=(SCREEN_W - 360, y + 20, SCREEN_W - 40, y + 120),
            text="Sign in",
            style=Style(fg="#202124" if dark_text else "#ffffff", size=36, align="right"),
        )
    )
    for node in input_box(
        ctx.value(SITE_SEARCH_ID),
        ctx.focused(SITE_SEARCH_ID),
        SITE_SEARCH_ID,
        f"Search {shop.name}",
        (40, y + 145, SCREEN_W - 40, y + 265),
        border="#767676" if dark_text else None,
    ):
        bar.add(node)
    col.gap(30)
    return col


def home_body(ctx: Ctx, site: str) -> list[Node]:
    shop = shop_for(site)
    col = _header(shop, ctx)
    x = 40
    chips = Node(cls="android.view.View", bounds=(0, col.y, SCREEN_W, col.y + 110))
    for cat in shop.categories:
        w = 60 + len(cat) * 22
        chips.add(
            Node(
                cls="android.widget.Button",
                bounds=(x, col.y + 10, x + w, col.y + 100),
                text=cat,
                content_desc=cat,
                clickable=True,
                action="open:" + make_action("site_results", site=site, query=cat.lower()),
                style=Style(bg="#f1f3f4", size=34, radius=45, align="center"),
            )
        )
        x += w + 20
    col.add(chips)
    col.gap(30)
    col.text("Today's deals", size=50, bold=True, height=100)
    for name in shop.deals:
        _product_row(col, site, name, 0)
    return col.nodes


def results_body(ctx: Ctx, site: str, query: str) -> list[Node]:
    shop = shop_for(site)
    col = _header(shop, ctx)
    products = catalog(site, query)
    col.text(f'{len(products)} results for "{normalize_query(query)}"', size=36, fg="#5f6368")
    for i in range(len(products)):
        _product_row(col, site, query, i)
    return col.nodes


def _product_row(col: Column, site: str, query: str, item: int) -> None:
    shop = shop_for(site)
    p = product_at(site, query, item)
    y = col.y + 10
    row = Node(
        cls="android.view.ViewGroup",
        bounds=(0, y, SCREEN_W, y + ROW_H),
        resource_id=PRODUCT_ID,
        content_desc=p.title,
        clickable=True,
        action=product_action(site, query, item),
        style=Style(border="#e8eaed"),
    )
    tx = 330
    row.add(
        Node(
            cls="android.widget.ImageView",
            bounds=(40, y + 30, 290, y + ROW_H - 30),
            content_desc="Product image",
            style=Style(bg="#f1f3f4", radius=16, icon=p.title, icon_bg=shop.accent, size=90),
        ),
        _line(tx, y + 25, p.title, 38, "#1a0dab" if site == "ebay.com" else "#202124", True),
        _line(tx, y + 90, rating_text(p.rating, p.reviews), 32, "#e37400"),
        _line(tx, y + 150, money(p.price), 52, "#202124", True),
        _line(tx, y + 230, p.note, 32, "#188038"),
    )
    col.add(row)


def product_body(ctx: Ctx, site: str, query: str, item: int, in_cart: bool) -> list[Node]:
    shop = shop_for(site)
    p = product_at(site, query, item)
    col = _header(shop, ctx)
    col.paragraph(p.title, size=46, fg="#202124", lines=3)
    col.text(rating_text(p.rating, p.reviews) + " reviews", size=36, fg="#e37400")
    col.gap(20)
    col.add(
        Node(
            cls="android.widget.ImageView",
            bounds=(140, col.y, SCREEN_W - 140, col.y + 700),
            content_desc=f"Image of {p.title}",
            style=Style(bg="#f1f3f4", radius=24, icon=p.title, icon_bg=shop.accent, size=200),
        )
    )
    col.gap(30)
    col.text(money(p.price), size=64, bold=True, height=110)
    col.text(p.note, size=38, fg="#188038")
    col.text(f"SKU {p.sku} · Sold by {shop.name}", size=34, fg="#5f6368")
    col.gap(30)
    label = "Added to cart" if in_cart else "Add to cart"
    col.add(
        Node(
            cls="android.widget.Button",
            bounds=(40, col.y, SCREEN_W - 40, col.y + 140),
            text=label,
            content_desc=label,
            clickable=True,
            action=f"cart:add:{site}:{p.sku}",
            style=Style(
                bg=shop.accent, fg="#ffffff", size=44, bold=True, radius=70, align="center"
            ),
        )
    )
    col.gap(40)
    col.text("About this item", size=44, bold=True, height=90)
    col.paragraph(
        f"The {p.title} from {shop.name}. Compare with similar items for "
        f'"{normalize_query(query)}", read reviews from verified buyers and check delivery '
        "options for your area before you check out.",
        lines=5,
    )
    return col.nodes


def _line(x: int, y: int, text: str, size: int, fg: str, bold: bool = False) -> Node:
    return text_at(x, y, text, size, fg, bold, x2=SCREEN_W - 40, spacing=1.6)
