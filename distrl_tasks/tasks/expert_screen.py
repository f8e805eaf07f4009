"""What the expert sees: a uiautomator XML dump parsed into a flat list of nodes with lookups."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass

_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")


@dataclass(frozen=True)
class UINode:
    """One node of the dump, with the attributes an agent can use."""

    text: str
    desc: str
    rid: str
    cls: str
    bounds: tuple[int, int, int, int]
    clickable: bool
    focused: bool
    checked: bool
    scrollable: bool

    @property
    def editable(self) -> bool:
        return self.cls.endswith("EditText")

    @property
    def center(self) -> tuple[int, int]:
        x1, y1, x2, y2 = self.bounds
        return (x1 + x2) // 2, (y1 + y2) // 2

    @property
    def label(self) -> str:
        """Text, else content-desc: how a person would name the node."""
        return self.text or self.desc

    @property
    def visible(self) -> bool:
        x1, y1, x2, y2 = self.bounds
        return x2 > x1 and y2 > y1


@dataclass(frozen=True)
class Screen:
    """A parsed dump: the foreground package, screen size and nodes in document order."""

    package: str
    width: int
    height: int
    nodes: tuple[UINode, ...]

    @classmethod
    def parse(cls, xml: str) -> Screen:
        """Parse ``uiautomator dump`` XML.

        Raises:
            ValueError: the text is not a hierarchy dump.
        """
        try:
            root = ET.fromstring(xml.encode() if isinstance(xml, str) else xml)
        except ET.ParseError as exc:
            raise ValueError(f"not a uiautomator dump: {exc}") from exc
        nodes: list[UINode] = []
        package = ""
        for el in root.iter("node"):
            m = _BOUNDS.fullmatch(el.get("bounds", ""))
            if m is None:
                continue
            package = package or el.get("package", "")
            nodes.append(
                UINode(
                    text=el.get("text", ""),
                    desc=el.get("content-desc", ""),
                    rid=el.get("resource-id", ""),
                    cls=el.get("class", ""),
                    bounds=tuple(int(v) for v in m.groups()),  # type: ignore[arg-type]
                    clickable=el.get("clickable") == "true",
                    focused=el.get("focused") == "true",
                    checked=el.get("checked") == "true",
                    scrollable=el.get("scrollable") == "true",
                )
            )
        if not nodes:
            raise ValueError("uiautomator dump holds no nodes")
        # the root view spans the display (children may overflow it, e.g. a clipped icon)
        width, height = nodes[0].bounds[2], nodes[0].bounds[3]
        return cls(package, width, height, tuple(nodes))

    # ----- lookups -----------------------------------------------------------------------
    def where(self, pred: Callable[[UINode], bool]) -> list[UINode]:
        return [n for n in self.nodes if n.visible and pred(n)]

    def first(self, pred: Callable[[UINode], bool]) -> UINode | None:
        found = self.where(pred)
        return found[0] if found else None

    def by_rid(self, suffix: str) -> UINode | None:
        """First node whose resource-id ends with ``suffix`` (e.g. ``":id/url_bar"``)."""
        return self.first(lambda n: n.rid.endswith(suffix))

    def by_label(self, label: str, *, exact: bool = True, clickable: bool = True) -> UINode | None:
        """First (clickable) node whose text or content-desc is / contains ``label``."""
        low = label.lower()

        def match(n: UINode) -> bool:
            if clickable and not (n.clickable or n.editable):
                return False
            names = (n.text.lower(), n.desc.lower())
            return low in names if exact else any(low in s for s in names)

        return self.first(match)

    def fields(self) -> list[UINode]:
        return self.where(lambda n: n.editable)

    def focused_field(self) -> UINode | None:
        return self.first(lambda n: n.editable and n.focused)

    def clickables(self) -> list[UINode]:
        return self.where(lambda n: n.clickable)

    def has_text(self, text: str) -> bool:
        low = text.lower()
        return any(low in n.text.lower() or low in n.desc.lower() for n in self.nodes)
