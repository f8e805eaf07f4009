"""Draw a view tree into a phone-like screenshot, and cache encoded PNGs per screen state."""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from distrl_tasks.sim.ui import SCREEN_H, SCREEN_W, Node, signature


@lru_cache(maxsize=64)
def _font(px: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    # Pillow ships a scalable font (load_default with a size), so no system fonts are needed.
    return ImageFont.load_default(size=max(6, px))


def _fit(draw: ImageDraw.ImageDraw, text: str, font, width: float) -> str:
    """Shorten ``text`` with an ellipsis until it fits ``width`` pixels."""
    if width <= 0 or draw.textlength(text, font=font) <= width:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if draw.textlength(text[:mid] + "…", font=font) <= width:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + "…"


def _draw_glyph(draw: ImageDraw.ImageDraw, name: str, box: tuple, color: str) -> None:
    """Vector glyphs for system icons (``Style.icon = "@name"``), which no bundled font has."""
    x1, y1, x2, y2 = box
    w, h = x2 - x1, y2 - y1
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    lw = max(1, round(w / 10))
    if name == "back":
        draw.polygon(
            [(x1 + w * 0.25, cy), (x2 - w * 0.3, y1 + h * 0.2), (x2 - w * 0.3, y2 - h * 0.2)],
            outline=color,
            width=lw,
        )
    elif name == "home":
        draw.ellipse(
            (x1 + w * 0.2, y1 + h * 0.2, x2 - w * 0.2, y2 - h * 0.2), outline=color, width=lw
        )
    elif name == "recents":
        draw.rectangle(
            (x1 + w * 0.25, y1 + h * 0.25, x2 - w * 0.25, y2 - h * 0.25), outline=color, width=lw
        )
    elif name == "search":
        r = w * 0.22
        draw.ellipse(
            (cx - r - w * 0.06, cy - r - h * 0.06, cx + r - w * 0.06, cy + r - h * 0.06),
            outline=color,
            width=lw,
        )
        draw.line((cx + r * 0.6, cy + r * 0.6, x2 - w * 0.2, y2 - h * 0.2), fill=color, width=lw)
    elif name == "menu":
        for f in (0.3, 0.5, 0.7):
            r = w * 0.06
            draw.ellipse((cx - r, y1 + h * f - r, cx + r, y1 + h * f + r), fill=color)
    elif name == "plus":
        draw.line((cx, y1 + h * 0.25, cx, y2 - h * 0.25), fill=color, width=lw)
        draw.line((x1 + w * 0.25, cy, x2 - w * 0.25, cy), fill=color, width=lw)
    else:  # unknown glyph name: a filled dot keeps the layout honest
        draw.ellipse((x1 + w * 0.3, y1 + h * 0.3, x2 - w * 0.3, y2 - h * 0.3), fill=color)


def render(root: Node, scale: float) -> Image.Image:
    """Rasterize ``root`` at ``scale`` screenshot pixels per logical pixel."""
    w, h = max(1, round(SCREEN_W * scale)), max(1, round(SCREEN_H * scale))
    img = Image.new("RGB", (w, h), "#ffffff")
    draw = ImageDraw.Draw(img)
    for node in root.walk():
        st = node.style
        x1, y1, x2, y2 = (round(v * scale) for v in node.bounds)
        if x2 <= x1 or y2 <= y1:
            continue
        if st.bg or st.border:
            r = round(st.radius * scale)
            draw.rounded_rectangle(
                (x1, y1, x2 - 1, y2 - 1), radius=r, fill=st.bg, outline=st.border, width=1
            )
        tx = x1 + round(16 * scale)
        if st.icon:
            d = min(y2 - y1, round(st.size * 1.6 * scale))
            cy = (y1 + y2) // 2
            if st.icon.startswith("@"):
                _draw_glyph(draw, st.icon[1:], (tx, cy - d // 2, tx + d, cy + d // 2), st.icon_bg)
            else:
                draw.ellipse((tx, cy - d // 2, tx + d, cy + d // 2), fill=st.icon_bg)
                glyph_font = _font(round(d * 0.6))
                draw.text(
                    (tx + d / 2, cy),
                    st.icon[:1].upper(),
                    font=glyph_font,
                    fill="#ffffff",
                    anchor="mm",
                )
            tx += d + round(20 * scale)
        label = node.text or (node.hint if node.editable else "")
        if not label:
            continue
        color = st.fg if node.text else "#80868b"
        font = _font(round(st.size * scale))
        avail = x2 - tx - round(12 * scale)
        label = _fit(draw, label.replace("\n", " "), font, avail)
        cy = (y1 + y2) / 2
        if st.align == "center":
            pos, anchor = ((x1 + x2) / 2, cy), "mm"
        elif st.align == "right":
            pos, anchor = (x2 - round(16 * scale), cy), "rm"
        else:
            pos, anchor = (tx, cy), "lm"
        draw.text(pos, label, font=font, fill=color, anchor=anchor)
        if st.bold:
            draw.text((pos[0] + 1, pos[1]), label, font=font, fill=color, anchor=anchor)
        if node.focused and node.editable:
            # a caret after the text, as a focused Android field shows
            end = pos[0] + (draw.textlength(label, font=font) if node.text else 0)
            if anchor != "lm":
                end = pos[0]
            draw.line((end + 2, cy - font.size / 2, end + 2, cy + font.size / 2), fill="#1a73e8")
    return img


def encode_png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    # Level 1: PNG stays lossless; the fast setting keeps encoding off the collection hot path.
    img.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


class PngCache:
    """Process-wide LRU of encoded screenshots keyed by (tree signature, scale).

    Screens repeat constantly across devices (home screen, app start pages), so after warm-up most
    screencaps are a dictionary hit. Bounded by total bytes so memory stays flat with many devices.
    """

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[tuple[str, float], bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_render(self, root: Node, scale: float, sig: str | None = None) -> bytes:
        key = (sig or signature(root), scale)
        with self._lock:
            png = self._items.get(key)
            if png is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return png
        png = encode_png(render(root, scale))
        with self._lock:
            self.misses += 1
            if key not in self._items:
                self._items[key] = png
                self._bytes += len(png)
            while self._bytes > self.max_bytes and len(self._items) > 1:
                _, old = self._items.popitem(last=False)
                self._bytes -= len(old)
        return png


PNG_CACHE = PngCache()


def blank_png(scale: float) -> bytes:
    """A white frame, as an emulator shows before a page has painted."""
    return _blank_png(round(SCREEN_W * scale), round(SCREEN_H * scale))


@lru_cache(maxsize=8)
def _blank_png(w: int, h: int) -> bytes:
    return encode_png(Image.new("RGB", (max(1, w), max(1, h)), "#ffffff"))
