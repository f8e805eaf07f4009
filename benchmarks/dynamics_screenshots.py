"""Screenshots of live-world perturbations, drawn by the simulator itself (for docs/simulator.md).

Usage: ``.venv/bin/python benchmarks/dynamics_screenshots.py [--out benchmarks/plots]``. Writes
``dynamics_interruptions.png`` (permission dialog, Chrome's sync sheet, a heads-up, an ANR
dialog) and ``dynamics_drift.png`` (a shop's results under static, live and hostile, and live's
grid layout showing a rewritten query's results).
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from PIL import Image

from distrl_tasks.sim.apps import CHROME, MAPS
from distrl_tasks.sim.dynamics import NAMES, Dynamics
from distrl_tasks.sim.phone import Phone
from distrl_tasks.sim.web.sites import site_results_target

SCALE = 0.3


def phone(profile: str, **rates: float) -> Phone:
    forced = {**dict.fromkeys(NAMES, 0.0), **rates} if rates else None
    return Phone(render_scale=SCALE, dynamics=Dynamics(profile, forced))


def shot(p: Phone) -> Image.Image:
    p.compose()
    return Image.open(io.BytesIO(p.screenshot_png())).convert("RGB")


def shop(p: Phone, query: str = "gaming mouse") -> Phone:
    p.launch(CHROME)
    p.compose()
    name, params = site_results_target("bestbuy.com", query)
    p.apps[CHROME].go(name, **params)
    return p


def strip(images: list[Image.Image], gap: int = 12) -> Image.Image:
    w = sum(im.width for im in images) + gap * (len(images) - 1)
    out = Image.new("RGB", (w, max(im.height for im in images)), "#9aa0a6")
    x = 0
    for im in images:
        out.paste(im, (x, 0))
        x += im.width + gap
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/plots")
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    a = phone("live", permission_location=1.0)
    a.launch(MAPS)
    b = phone("hostile", chrome_signin=1.0, fake_close=1.0)
    b.launch(CHROME)
    c = shop(phone("live", heads_up=1.0))
    d = phone("live", anr=1.0)
    d.launch(CHROME)
    strip([shot(p) for p in (a, b, c, d)]).save(out / "dynamics_interruptions.png")
    static = shop(phone("static"))
    live = shop(phone("live", sponsored_results=1.0, layout_variant=1.0))
    hostile = shop(phone("hostile", misleading_sponsored=1.0, cookie_consent=1.0))
    rewrite = shop(phone("live", grid_layout=1.0, did_you_mean=1.0))
    strip([shot(p) for p in (static, live, hostile, rewrite)]).save(out / "dynamics_drift.png")
    print(f"wrote {out / 'dynamics_interruptions.png'} and {out / 'dynamics_drift.png'}")


if __name__ == "__main__":
    main()
