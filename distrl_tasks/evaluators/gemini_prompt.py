"""The Gemini judging prompt and the parser of its answer.

Structure (after DigiRL's evaluator, reworded): an instruction line, ``=====Examples=====``,
few-shot pairs (screenshot, then Task / Q / A / Status), ``=====Your Turn=====``, the
trajectory's last screenshot(s) and a template that ends with the Status line. Any change to
the wording or the examples must bump :data:`PROMPT_VERSION`, which keys the response cache.

The prompt is SDK-neutral: a list of strings and :class:`InlineImage` parts.
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from PIL import Image, UnidentifiedImageError

from distrl_tasks.evaluators.gemini_examples import FewShot, examples_for, render_example

PROMPT_VERSION = "digirl-judge-v1"

INTRO = (
    "You're an expert judge of whether a phone Screenshot shows that a Task has been "
    "completed successfully. For each task, first describe what the screen should show once "
    "the task is done, then compare it with the screenshot, and finish with a Status line: "
    "'Status: success' or 'Status: failure'."
)
EXAMPLES_HEADER = "=====Examples====="
YOUR_TURN_HEADER = "=====Your Turn====="
STATUS_TEMPLATE = "Status: success or failure (write nothing else on this line)"
_RENDER_LOCK = threading.Lock()


@dataclass(frozen=True)
class InlineImage:
    """Image bytes sent inline with the request."""

    mime_type: str
    data: bytes

    def __repr__(self) -> str:  # bytes would flood logs and test output
        return f"InlineImage({self.mime_type}, {len(self.data)} bytes)"


Part = str | InlineImage


def sniff_mime(data: bytes) -> str:
    """``image/png`` or ``image/jpeg`` from the file signature.

    Raises:
        ValueError: the bytes are neither PNG nor JPEG.
    """
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    raise ValueError(f"not a PNG or JPEG image (starts with {data[:8]!r})")


def downscale_image(data: bytes, factor: int) -> InlineImage:
    """Shrink a screenshot to ``width // factor x height // factor`` (at least 1 px), as PNG.

    ``factor == 1`` sends the original bytes untouched.

    Raises:
        ValueError: ``factor < 1`` or the bytes are not a decodable PNG/JPEG.
    """
    if factor < 1:
        raise ValueError(f"downscale factor must be >= 1, got {factor}")
    mime = sniff_mime(data)
    if factor == 1:
        return InlineImage(mime, data)
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            size = (max(1, img.width // factor), max(1, img.height // factor))
            small = img.convert("RGB").resize(size, Image.Resampling.BOX)
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError(f"cannot decode {mime} image: {exc}") from exc
    out = io.BytesIO()
    small.save(out, format="PNG", optimize=True)
    return InlineImage("image/png", out.getvalue())


def _question(goal: str) -> str:
    return f'Q: What should the screen show if I have completed the task "{goal}"?'


@lru_cache(maxsize=128)
def _example_image(example: FewShot, downscale: int) -> InlineImage:
    png, _ = render_example(example)
    return downscale_image(png, downscale)


def example_parts(example: FewShot, downscale: int) -> list[Part]:
    """One worked example: its screenshot, then the Task / Q / A / Status text."""
    with _RENDER_LOCK:  # judges build prompts in worker threads; render each example once
        image = _example_image(example, downscale)
    text = (
        f"Task: {example.goal}\n{_question(example.goal)}\n"
        f"A: I should see {example.expect} {example.observe}\n"
        f"Status: {example.status}"
    )
    return [image, text]


def build_prompt(
    goal: str, screenshots: Sequence[bytes], *, task_set: str = "general", downscale: int = 4
) -> list[Part]:
    """The full prompt for judging ``goal`` on ``screenshots`` (oldest first, last = current).

    Raises:
        ValueError: empty goal, no screenshots, unknown task set, or an undecodable image
            (the message names which screenshot).
    """
    if not goal.strip():
        raise ValueError("goal must not be empty")
    if not screenshots:
        raise ValueError("at least one screenshot is needed to judge a trajectory")
    shots: list[InlineImage] = []
    for i, shot in enumerate(screenshots):
        try:
            shots.append(downscale_image(shot, downscale))
        except ValueError as exc:
            raise ValueError(f"screenshot {i + 1} of {len(screenshots)}: {exc}") from exc
    parts: list[Part] = [INTRO, EXAMPLES_HEADER]
    for example in examples_for(task_set):
        parts.extend(example_parts(example, downscale))
    parts.append(YOUR_TURN_HEADER)
    if len(shots) == 1:
        parts += ["Screenshot:", shots[0]]
    else:
        parts.append(
            f"{len(shots)} screenshots follow, oldest first; the last is the current screen."
        )
        for i, img in enumerate(shots):
            parts += [f"Screenshot {i + 1} of {len(shots)}:", img]
    parts.append(
        f"Task: {goal}\nAnswer in this format:\n{_question(goal)}\n"
        "A: I should see <what a finished task looks like>. <what the screenshot shows>\n"
        f'{STATUS_TEMPLATE}\nStart your answer with "Q:".'
    )
    return parts


# "Status:" then a word, ignoring markdown decoration such as **Status:** _Success_.
_MARKDOWN = re.compile(r"[*_`#>~]")
_STATUS = re.compile(r"\bstatus\s*:\s*([a-z]+)(\s+or\s+[a-z]+)?", re.IGNORECASE)
_WORDS = {"success": "success", "successful": "success", "failure": "failure", "failed": "failure"}


def parse_status(text: str | None) -> tuple[str, str]:
    """Read the verdict from a model answer.

    The last ``Status:`` line decides. Anything that is not clearly success or failure (no
    status, an unknown word, or the template echoed back as "success or failure") is
    ``unlabeled``, so it is retried rather than counted as a failure.

    Returns:
        ``(status, reason)``: the reason is the answer's "A:" explanation when labeled, or what
        was wrong with the answer when unlabeled.
    """
    if not text or not text.strip():
        return "unlabeled", "empty answer"
    clean = _MARKDOWN.sub("", text)
    matches = list(_STATUS.finditer(clean))
    if not matches:
        return "unlabeled", "no 'Status:' line in the answer"
    last = matches[-1]
    if last.group(2):
        return "unlabeled", f"ambiguous status {last.group(0)!r}"
    status = _WORDS.get(last.group(1).lower())
    if status is None:
        return "unlabeled", f"unknown status {last.group(1)!r}"
    explanation = re.search(r"^\s*A\s*:\s*(.+)$", clean, re.MULTILINE)
    return status, (explanation.group(1).strip() if explanation else clean.strip())[:500]
