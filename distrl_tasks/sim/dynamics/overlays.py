"""Interruptions drawn over the screen: dialogs, sheets, banners, interstitials, heads-ups.

Each is a :class:`~distrl_tasks.sim.ui.Node` subtree added on top of the composed screen, so the
screenshot, hit-testing and the uiautomator XML show the same thing. Buttons carry ``dyn:``
actions that :class:`~distrl_tasks.sim.dynamics.model.Dynamics` interprets. Resource-ids follow
the real apps' where they are known (permission controller, ``android:id/aerr_*`` of the
app-not-responding dialog); texts are what those dialogs say. An overlay that is a window of its
own on Android (a system dialog, another activity) names that window's package in
:attr:`Overlay.window`: a device's ``uiautomator dump`` shows that window alone.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from distrl_tasks.sim.ui import CONTENT_BOTTOM, SCREEN_H, SCREEN_W, STATUS_BAR_H, Node, Style

PERMISSION = "com.android.permissioncontroller:id"
PERMISSION_PACKAGE = "com.google.android.permissioncontroller"  # AOSP ids, Google's package
SYSTEM_PACKAGE = "android"  # the app-not-responding dialog belongs to the system server
CHROME_PACKAGE = "com.android.chrome"
SYSTEMUI = "com.android.systemui:id"


@dataclass
class Overlay:
    """An interruption on screen.

    Attributes:
        name: the perturbation (see :data:`~distrl_tasks.sim.dynamics.catalog.NAMES`).
        node: its view subtree, in logical pixels.
        modal: a tap outside its card does nothing (dialogs); False for heads-ups.
        back_closes: BACK dismisses it (most); False where only a button does.
        ttl: inputs before it goes away by itself (heads-ups), -1 for never.
        window: the package of the window it is on Android when that is a window of its own
            (permission and app-not-responding dialogs, sign-in and interstitial activities):
            the dump then shows it alone; "" for one drawn in the app's window (a site's
            cookie banner, a promo sheet) or beside it (a heads-up), dumped with the app.
    """

    name: str
    node: Node
    modal: bool = True
    back_closes: bool = True
    ttl: int = -1
    window: str = ""


def _button(bounds: tuple[int, int, int, int], text: str, action: str, rid: str, primary: bool):
    return Node(
        cls="android.widget.Button",
        bounds=bounds,
        text=text,
        content_desc=text,
        resource_id=rid,
        clickable=True,
        action=action,
        style=Style(
            bg="#1a73e8" if primary else None,
            fg="#ffffff" if primary else "#1a73e8",
            size=38,
            bold=True,
            align="center",
            radius=40,
        ),
    )


def _text(bounds: tuple[int, int, int, int], text: str, size: int, **style: object) -> Node:
    return Node(
        cls="android.widget.TextView", bounds=bounds, text=text, style=Style(size=size, **style)
    )


def _card(
    rid: str,
    title: str,
    message: str,
    buttons: list[tuple[str, str, str]],
    *,
    top: int,
    bottom: int,
    x1: int = 60,
    x2: int = SCREEN_W - 60,
) -> Node:
    """A card with a title, a message and stacked buttons ``(text, action, rid)``; the first
    button is the primary one. No scrim: the renderer has no alpha, and the page underneath
    stays visible (and in the XML, unless the overlay is a window of its own), while
    :class:`Overlay.modal` makes taps outside do nothing."""
    root = Node(cls="android.widget.FrameLayout", bounds=(0, 0, SCREEN_W, SCREEN_H))
    card = Node(
        cls="android.widget.LinearLayout",
        bounds=(x1, top, x2, bottom),
        resource_id=rid,
        style=Style(bg="#ffffff", radius=36, border="#dadce0"),
    )
    # the renderer draws one line per node: wrap the title and the message like a dialog does
    chars = (x2 - x1 - 80) // 24
    y = top + 40
    for line in textwrap.wrap(title, chars)[:2]:
        card.add(_text((x1 + 40, y, x2 - 40, y + 66), line, 44, bold=True))
        y += 66
    y += 20
    for line in textwrap.wrap(message, int(chars * 1.3))[:3]:
        card.add(_text((x1 + 40, y, x2 - 40, y + 52), line, 34, fg="#5f6368"))
        y += 52
    y = bottom - 40 - 120 * len(buttons)
    for i, (text, action, brid) in enumerate(buttons):
        card.add(_button((x1 + 40, y, x2 - 40, y + 100), text, action, brid, i == 0))
        y += 120
    return root.add(card)


def permission_dialog(app_label: str, what: str) -> Overlay:
    """A runtime permission request (location or notifications); BACK denies."""
    question = {
        "location": f"Allow {app_label} to access this device's location?",
        "notifications": f"Allow {app_label} to send you notifications?",
    }[what]
    buttons = [
        (
            "While using the app" if what == "location" else "Allow",
            "dyn:dismiss",
            f"{PERMISSION}/permission_allow_button",
        ),
        ("Don't allow", "dyn:dismiss", f"{PERMISSION}/permission_deny_button"),
    ]
    node = _card(f"{PERMISSION}/grant_dialog", question, "", buttons, top=1250, bottom=1800)
    return Overlay(f"permission_{what}", node, window=PERMISSION_PACKAGE)


def chrome_signin(fake_close: bool) -> Overlay:
    """Chrome's first-run "Sign in / Turn on sync" bottom sheet."""
    buttons = [
        ("Continue as Alex", "dyn:dismiss", "com.android.chrome:id/signin_fre_continue_button"),
        (
            "Use without an account",
            "dyn:dismiss",
            "com.android.chrome:id/signin_fre_dismiss_button",
        ),
    ]
    node = _card(
        "com.android.chrome:id/signin_fre_sheet",
        "Turn on sync?",
        "Sign in to get your bookmarks, passwords and more on all your devices.",
        buttons,
        top=1350,
        bottom=CONTENT_BOTTOM,
        x1=0,
        x2=SCREEN_W,
    )
    node = _maybe_fake_close(node, fake_close, 1350)
    return Overlay("chrome_signin", node, window=CHROME_PACKAGE)  # Chrome's first-run activity


def cookie_consent(site: str) -> Overlay:
    """A cookie-consent banner over a web page; only its buttons close it."""
    buttons = [
        ("Accept all", "dyn:dismiss", "com.android.chrome:id/cookie_accept"),
        ("Reject all", "dyn:dismiss", "com.android.chrome:id/cookie_reject"),
    ]
    node = _card(
        "com.android.chrome:id/cookie_banner",
        f"{site} uses cookies",
        "We and our partners use cookies to personalise content and ads.",
        buttons,
        top=1500,
        bottom=CONTENT_BOTTOM,
        x1=0,
        x2=SCREEN_W,
    )
    return Overlay("cookie_consent", node, back_closes=False)


def app_interstitial(shop: str, fake_close: bool) -> Overlay:
    """A "Get our app" interstitial: "Open app" goes to the Play Store, "Continue in browser"
    closes it; BACK does not (the page would go back instead, so it is swallowed)."""
    buttons = [
        ("Open app", "dyn:store", "com.android.chrome:id/interstitial_open_app"),
        ("Continue in browser", "dyn:dismiss", "com.android.chrome:id/interstitial_continue"),
    ]
    node = _card(
        "com.android.chrome:id/app_interstitial",
        f"Get the {shop} app",
        "Faster checkout, exclusive deals and order tracking.",
        buttons,
        top=600,
        bottom=1700,
    )
    node = _maybe_fake_close(node, fake_close, 600)
    # an activity of its own over the page, so the dump shows it alone
    return Overlay("app_interstitial", node, back_closes=False, window=CHROME_PACKAGE)


def rate_app() -> Overlay:
    """The Play Store's "Rate this app" dialog; BACK or "Not now" close it."""
    buttons = [
        ("Rate", "dyn:dismiss", "com.android.vending:id/rate_button"),
        ("Not now", "dyn:dismiss", "com.android.vending:id/not_now_button"),
    ]
    node = _card(
        "com.android.vending:id/rate_dialog",
        "Enjoying Google Play?",
        "Tap a star to rate it on Google Play.",
        buttons,
        top=1150,
        bottom=1800,
    )
    return Overlay("rate_app", node)


def youtube_premium(fake_close: bool) -> Overlay:
    """YouTube's Premium promo sheet; BACK or "No thanks" close it."""
    buttons = [
        ("Try it free", "dyn:ad", "com.google.android.youtube:id/premium_try"),
        ("No thanks", "dyn:dismiss", "com.google.android.youtube:id/premium_dismiss"),
    ]
    node = _card(
        "com.google.android.youtube:id/premium_promo",
        "YouTube Premium",
        "Ad-free videos, background play and downloads. 1 month free.",
        buttons,
        top=1200,
        bottom=CONTENT_BOTTOM,
        x1=0,
        x2=SCREEN_W,
    )
    return Overlay("youtube_premium", _maybe_fake_close(node, fake_close, 1200))


def heads_up(kind: str) -> Overlay:
    """A heads-up notification over the top of the screen: not modal, goes away after a few
    inputs or when swiped; a tap on it opens Settings."""
    title, text = {
        "battery": ("Battery Saver", "Battery at 15%. Turn on Battery Saver?"),
        "update": ("System update", "An update is ready to install. Tap to review."),
    }[kind]
    node = Node(
        cls="android.widget.FrameLayout",
        bounds=(24, STATUS_BAR_H - 40, SCREEN_W - 24, STATUS_BAR_H + 250),
        resource_id=f"{SYSTEMUI}/heads_up",
        content_desc=f"{title} notification",
        clickable=True,
        action="dyn:settings",
        style=Style(bg="#f1f3f4", radius=32, border="#dadce0"),
    )
    node.add(
        Node(
            cls="android.widget.TextView",
            bounds=(64, STATUS_BAR_H, SCREEN_W - 64, STATUS_BAR_H + 90),
            text=title,
            style=Style(size=38, bold=True, icon="@menu", icon_bg="#5f6368"),
        ),
        Node(
            cls="android.widget.TextView",
            bounds=(64, STATUS_BAR_H + 100, SCREEN_W - 64, STATUS_BAR_H + 190),
            text=text,
            style=Style(size=34, fg="#5f6368"),
        ),
    )
    return Overlay("heads_up", node, modal=False, back_closes=False, ttl=3)


def anr_dialog(app_label: str) -> Overlay:
    """Android's app-not-responding dialog: only "Wait" or "Close app" close it."""
    buttons = [
        ("Close app", "dyn:close_app", "android:id/aerr_close"),
        ("Wait", "dyn:dismiss", "android:id/aerr_wait"),
    ]
    node = _card(
        "android:id/aerr_dialog",
        f"{app_label} isn't responding",
        "",
        buttons,
        top=1000,
        bottom=1600,
    )
    return Overlay("anr", node, back_closes=False, window=SYSTEM_PACKAGE)


def _maybe_fake_close(root: Node, fake: bool, top: int) -> Node:
    """Hostile: a big close glyph in the card's corner that opens an ad instead."""
    if fake:
        root.add(
            Node(
                cls="android.widget.ImageView",
                bounds=(SCREEN_W - 200, top - 130, SCREEN_W - 60, top - 10),
                content_desc="Close",
                resource_id="com.android.chrome:id/ad_close",
                clickable=True,
                action="dyn:ad",
                style=Style(bg="#ffffff", radius=60, icon="X", icon_bg="#202124"),
            )
        )
    return root
