"""The Calculator app: a display and a keypad with real, safely evaluated arithmetic.

Expressions are kept in a canonical form (digits, ``.``, ``+ - * /`` and parentheses) and
evaluated by a small recursive-descent parser over exact fractions, so ``0.1+0.2`` is ``0.3`` and
nothing is ever passed to ``eval``. Keys behave like Google's calculator: an operator typed right
after another replaces it, ``=`` closes open parentheses, a digit after a result starts over and
an operator after a result continues from it. The display shows a live preview of the result.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

from distrl_tasks.sim.app import App, Page, Screen
from distrl_tasks.sim.apps.packages import CALCULATOR
from distrl_tasks.sim.ui import CONTENT_BOTTOM, CONTENT_TOP, SCREEN_W, Node, Style
from distrl_tasks.sim.widgets import PAD

DIV_ZERO = "Can't divide by 0"
FORMAT_ERROR = "Format error"
OPERATORS = "+-*/"
# canonical operator -> (text drawn on the key and the display, content-desc); ASCII forms are
# used because the renderer's bundled font has no glyphs for the typographic symbols
OP_LABELS = {"+": ("+", "plus"), "-": ("-", "minus"), "*": ("x", "multiply"), "/": ("/", "divide")}
KEYS = (
    ("C", "clear"),
    ("(", "left parenthesis"),
    (")", "right parenthesis"),
    ("/", "divide"),
    ("7", "7"),
    ("8", "8"),
    ("9", "9"),
    ("*", "multiply"),
    ("4", "4"),
    ("5", "5"),
    ("6", "6"),
    ("-", "minus"),
    ("1", "1"),
    ("2", "2"),
    ("3", "3"),
    ("+", "plus"),
    ("0", "0"),
    (".", "point"),
    ("del", "backspace"),
    ("=", "equals"),
)


class CalcError(ValueError):
    """The expression cannot be evaluated; ``str(err)`` is what the display shows."""


def evaluate(expr: str) -> Fraction:
    """Evaluate a canonical expression exactly.

    Raises:
        CalcError: with :data:`DIV_ZERO` for a division by zero, :data:`FORMAT_ERROR` for a
            malformed expression.
    """
    tokens = _tokenize(expr + ")" * max(0, expr.count("(") - expr.count(")")))
    pos = 0

    def peek() -> str:
        return tokens[pos] if pos < len(tokens) else ""

    def take() -> str:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def parse_sum() -> Fraction:
        value = parse_product()
        while peek() in ("+", "-"):
            value = value + parse_product() if take() == "+" else value - parse_product()
        return value

    def parse_product() -> Fraction:
        value = parse_unary()
        while peek() in ("*", "/"):
            op = take()
            rhs = parse_unary()
            if op == "/" and rhs == 0:
                raise CalcError(DIV_ZERO)
            value = value * rhs if op == "*" else value / rhs
        return value

    def parse_unary() -> Fraction:
        if peek() == "-":
            take()
            return -parse_unary()
        if peek() == "+":
            take()
            return parse_unary()
        if peek() == "(":
            take()
            value = parse_sum()
            if peek() != ")":
                raise CalcError(FORMAT_ERROR)
            take()
            return value
        token = peek()
        if not token or token[0] not in "0123456789.":
            raise CalcError(FORMAT_ERROR)
        take()
        return Fraction(token)

    if not tokens:
        raise CalcError(FORMAT_ERROR)
    result = parse_sum()
    if pos != len(tokens):
        raise CalcError(FORMAT_ERROR)
    return result


def _tokenize(expr: str) -> list[str]:
    tokens: list[str] = []
    number = ""
    for ch in expr:
        if ch.isdigit() or ch == ".":
            number += ch
            continue
        if number:
            tokens.append(number)
            number = ""
        if ch not in OPERATORS + "()":
            raise CalcError(FORMAT_ERROR)
        tokens.append(ch)
    if number:
        tokens.append(number)
    for tok in tokens:
        if tok[0] in "0123456789." and (tok.count(".") > 1 or tok == "."):
            raise CalcError(FORMAT_ERROR)
    return tokens


def format_number(value: Fraction) -> str:
    """Exact integers in full; other values to 10 significant digits, without exponent."""
    if value.denominator == 1:
        return str(value.numerator)
    with localcontext() as ctx:
        ctx.prec = 10
        dec = (Decimal(value.numerator) / Decimal(value.denominator)).normalize()
    text = format(dec, "f")
    return "0" if text in ("-0", "") else text


def display(expr: str) -> str:
    """Canonical expression -> what the display shows (``*`` as ``x``)."""
    return "".join(OP_LABELS[c][0] if c in OP_LABELS else c for c in expr)


class Calculator(App):
    package = CALCULATOR
    label = "Calculator"
    color = "#4285f4"
    home_page = "home"

    def reset(self) -> None:
        super().reset()
        self.expr = ""  # canonical form of what was typed
        self.result = ""  # text of the last "=" (a number or an error), "" before one
        self.evaluated = False  # "=" was the last key and succeeded

    # ----- keys ------------------------------------------------------------------------------
    def on_tap(self, action: str) -> None:
        if action.startswith("key:"):
            self.press(action[len("key:") :])
        else:
            super().on_tap(action)

    def press(self, key: str) -> None:
        """Apply one keypad key (``0-9 . + - * / ( ) C del =``)."""
        if key == "C":
            self.reset_input()
        elif key == "del":
            self.expr = "" if self.evaluated else self.expr[:-1]
            self.result, self.evaluated = "", False
        elif key == "=":
            self._equals()
        elif key in OPERATORS:
            self._operator(key)
        elif key.isdigit() or key == ".":
            self._digit(key)
        elif key == "(":
            self._restart_if_done()
            needs_times = bool(self.expr) and (self.expr[-1].isdigit() or self.expr[-1] in ").")
            self.expr += "*(" if needs_times else "("
        elif key == ")":
            last = self.expr[-1:] or "("
            if self.expr.count("(") > self.expr.count(")") and last not in OPERATORS + "(":
                self.expr += ")"
        else:
            raise ValueError(f"unknown calculator key {key!r}")

    def reset_input(self) -> None:
        self.expr, self.result, self.evaluated = "", "", False

    def _restart_if_done(self) -> None:
        if self.evaluated:
            self.reset_input()
        self.result = ""

    def _digit(self, key: str) -> None:
        self._restart_if_done()
        number = _last_number(self.expr)
        if key == "." and "." in number:
            return
        if key == "." and not number:
            key = "0."
        if number == "0" and key.isdigit():
            self.expr = self.expr[:-1]  # a leading zero is replaced, as "07" makes no sense
        self.expr += key

    def _operator(self, op: str) -> None:
        if self.evaluated:
            # continue from the result (not from an error text)
            self.expr = self.result
            self.evaluated = False
        self.result = ""
        if not self.expr:
            if op == "-":
                self.expr = "-"
            return
        last = self.expr[-1]
        if last in OPERATORS:
            if op == "-" and last in "*/":
                self.expr += op  # "6 x -2" is a negative operand, not a replacement
            elif len(self.expr) > 1 or op == "-":
                stripped = self.expr.rstrip(OPERATORS)
                self.expr = (stripped + op) if stripped else "-"
            return
        if last == "(" and op != "-":
            return
        self.expr += op

    def _equals(self) -> None:
        if not self.expr or self.evaluated:
            return
        try:
            value = evaluate(self.expr)
        except CalcError as err:
            self.result, self.evaluated = str(err), False
            return
        self.expr += ")" * (self.expr.count("(") - self.expr.count(")"))
        self.result, self.evaluated = format_number(value), True

    def preview(self) -> str:
        """The live result under the formula: shown once there is an operation to evaluate."""
        if self.evaluated or self.result:
            return self.result
        if not any(c in OPERATORS for c in self.expr.lstrip("-")):
            return ""
        try:
            return format_number(evaluate(self.expr))
        except CalcError:
            return ""

    def state_params(self) -> dict[str, str]:
        return {"expression": display(self.expr), "result": self.preview()}

    # ----- screen ----------------------------------------------------------------------------
    def build(self, page: Page) -> Screen:
        formula = display(self.expr)
        shown = self.preview()
        error = shown in (DIV_ZERO, FORMAT_ERROR)
        panel = Node(
            cls="android.widget.LinearLayout",
            bounds=(0, CONTENT_TOP, SCREEN_W, CONTENT_TOP + 880),
            resource_id=f"{CALCULATOR}:id/display",
            style=Style(bg="#f1f3f4"),
        )
        panel.add(
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, CONTENT_TOP + 260, SCREEN_W - PAD, CONTENT_TOP + 500),
                text=formula + (" =" if self.evaluated else ""),
                resource_id=f"{CALCULATOR}:id/formula",
                content_desc=formula or "No formula",
                style=Style(
                    size=72 if self.evaluated else 110,
                    fg="#5f6368" if self.evaluated else "#202124",
                    align="right",
                ),
            ),
            Node(
                cls="android.widget.TextView",
                bounds=(PAD, CONTENT_TOP + 520, SCREEN_W - PAD, CONTENT_TOP + 800),
                text=shown,
                resource_id=f"{CALCULATOR}:id/result",
                style=Style(
                    size=130 if self.evaluated else 70,
                    fg="#d93025" if error else ("#202124" if self.evaluated else "#5f6368"),
                    align="right",
                    bold=self.evaluated,
                ),
            ),
        )
        body = [panel]
        gap, top = 24, CONTENT_TOP + 920
        width = (SCREEN_W - 2 * PAD - 3 * gap) // 4
        height = (CONTENT_BOTTOM - 40 - top - 4 * gap) // 5
        for i, (key, desc) in enumerate(KEYS):
            row, col = divmod(i, 4)
            x, y = PAD + col * (width + gap), top + row * (height + gap)
            body.append(_key((x, y, x + width, y + height), key, desc))
        return Screen(header=[], body=body)


def _last_number(expr: str) -> str:
    i = len(expr)
    while i > 0 and (expr[i - 1].isdigit() or expr[i - 1] == "."):
        i -= 1
    return expr[i:]


def _key(bounds: tuple[int, int, int, int], key: str, desc: str) -> Node:
    text = {"del": "DEL", **{k: v[0] for k, v in OP_LABELS.items()}}.get(key, key)
    if key == "=":
        bg, fg = "#1a73e8", "#ffffff"
    elif key == "C":
        bg, fg = "#f9dedc", "#8c1d18"
    elif key in OPERATORS or key in "()" or key == "del":
        bg, fg = "#d3e3fd", "#041e49"
    else:
        bg, fg = "#e8eaed", "#202124"
    return Node(
        cls="android.widget.Button",
        bounds=bounds,
        text=text,
        resource_id=f"{CALCULATOR}:id/{_rid(key)}",
        content_desc=desc,
        clickable=True,
        action=f"key:{key}",
        style=Style(bg=bg, fg=fg, size=72, align="center", radius=(bounds[3] - bounds[1]) // 2),
    )


def _rid(key: str) -> str:
    names = {
        "+": "op_add",
        "-": "op_sub",
        "*": "op_mul",
        "/": "op_div",
        "=": "eq",
        ".": "dec_point",
    }
    names |= {"C": "clr", "del": "del", "(": "lparen", ")": "rparen"}
    return names.get(key, f"digit_{key}")
