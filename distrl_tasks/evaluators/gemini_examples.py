"""Few-shot examples for the Gemini evaluator, rendered from our own simulator.

Each example is a goal, how far the scripted expert gets (all the way, or a fixed number of
steps), the verdict that state deserves, and a short worked answer. Screens are rendered on
demand and memoised, so the prompt always shows what the current simulator draws; a unit test
checks every example's declared status against the simulator's own success check.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from distrl_tasks.sim.phone import Phone
from distrl_tasks.tasks.expert import Expert
from distrl_tasks.tasks.parse import parse_goal

EXAMPLE_SEED = 0  # simulator content seed of every example screen
EXAMPLE_RENDER_SCALE = 0.25  # the simulator's default screenshot scale (270x600)


@dataclass(frozen=True)
class FewShot:
    """One worked example.

    Attributes:
        goal: the task instruction.
        steps: expert actions to perform before the screenshot; ``None`` = until it is done.
        status: ``success`` or ``failure`` for the resulting screen.
        expect: what a finished task would look like.
        observe: what this screenshot actually shows.
    """

    goal: str
    steps: int | None
    status: str
    expect: str
    observe: str


GENERAL: tuple[FewShot, ...] = (
    FewShot(
        "Set an alarm for 6pm",
        None,
        "success",
        "an alarm for 6:00 PM in the Clock app's alarm list, switched on.",
        "The alarm list contains 6:00 PM and its switch is on.",
    ),
    FewShot(
        "Set an alarm for 6pm",
        5,
        "failure",
        "an alarm for 6:00 PM in the Clock app's alarm list, switched on.",
        "The time dialog is still open with 6 typed as the hour; it was never confirmed, so no "
        "6:00 PM alarm exists yet.",
    ),
    FewShot(
        "What's the news in India?",
        None,
        "success",
        "search results or articles about current news in India.",
        "A Google results page for a news-in-India query is shown.",
    ),
    FewShot(
        "Search for hotels in Washington DC",
        2,
        "failure",
        "search results for hotels in Washington DC.",
        "Chrome's start page is open with an empty address bar; nothing has been searched.",
    ),
    FewShot(
        "Play the new Bruno Mars video on YouTube",
        None,
        "success",
        "a Bruno Mars video open in the YouTube player.",
        "A Bruno Mars music video is playing, its title right under the player.",
    ),
    FewShot(
        "Play the new Bruno Mars video on YouTube",
        4,
        "failure",
        "a Bruno Mars video open in the YouTube player.",
        "YouTube lists search results for Bruno Mars, but no video has been opened.",
    ),
    FewShot(
        "Check the settings for the YouTube app",
        None,
        "success",
        "the settings (App info) page of the YouTube app.",
        "YouTube's App info page with notifications, permissions and storage is open.",
    ),
    FewShot(
        "Check the settings for the YouTube app",
        4,
        "failure",
        "the settings (App info) page of the YouTube app.",
        "Settings shows the list of all apps; YouTube's own page has not been opened.",
    ),
    FewShot(
        "Open a new tab in Chrome",
        None,
        "success",
        "Chrome showing a fresh tab, with the tab counter one higher than before.",
        "Chrome shows a blank start page and the tab counter reads 2.",
    ),
    FewShot(
        "Open a new tab in Chrome",
        2,
        "failure",
        "Chrome showing a fresh tab, with the tab counter one higher than before.",
        "Chrome's menu is open with 'New tab' in it, but the counter still reads 1.",
    ),
)

WEBSHOP: tuple[FewShot, ...] = (
    FewShot(
        "Go to bestbuy.com",
        None,
        "success",
        "the Best Buy website loaded in the browser.",
        "Chrome shows the bestbuy.com home page.",
    ),
    FewShot(
        "Go to bestbuy.com",
        3,
        "failure",
        "the Best Buy website loaded in the browser.",
        "bestbuy.com is typed in Chrome's address bar, but the page has not been opened.",
    ),
    FewShot(
        'Go to walmart.com, search for "logitech g910"',
        None,
        "success",
        "walmart.com showing search results for logitech g910.",
        "walmart.com lists results for logitech g910.",
    ),
    FewShot(
        'Go to walmart.com, search for "logitech g910", and select the first entry',
        7,
        "failure",
        "the product page of the first logitech g910 result on walmart.com.",
        "The walmart.com results list is shown, but no product has been selected.",
    ),
    FewShot(
        'Go to walmart.com, search for "logitech g910", and select the first entry',
        None,
        "success",
        "the product page of the first logitech g910 result on walmart.com.",
        "The product page of the first result, Logitech G910 - Open Box, is open.",
    ),
    FewShot(
        'Go to ebay.com, search for "razer blade"',
        5,
        "failure",
        "ebay.com showing search results for razer blade.",
        "The ebay.com home page is open, but its search box is empty and nothing was searched.",
    ),
)

EXAMPLES: dict[str, tuple[FewShot, ...]] = {"general": GENERAL, "webshop": WEBSHOP}


def examples_for(task_set: str) -> tuple[FewShot, ...]:
    """The few-shot examples of a task set (``general`` or ``webshop``)."""
    try:
        return EXAMPLES[task_set]
    except KeyError:
        raise ValueError(
            f"unknown task set {task_set!r}; expected one of {sorted(EXAMPLES)}"
        ) from None


@lru_cache(maxsize=64)
def render_example(example: FewShot) -> tuple[bytes, bool]:
    """Drive a fresh simulated phone into the example's state.

    Returns:
        ``(png, sim_success)``: the screenshot, and whether the simulator's own check says the
        goal is met there (tests compare it with ``example.status``).
    """
    # Imported here: the simulator is only needed when a prompt is actually built.

    task = parse_goal(example.goal)
    phone = Phone(seed=EXAMPLE_SEED, render_scale=EXAMPLE_RENDER_SCALE)
    phone.set_task(task)
    Expert(phone, task, max_steps=example.steps).run()
    return phone.screenshot_png(), bool(phone.check_task()["success"])
