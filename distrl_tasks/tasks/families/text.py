"""Text helpers shared by the task families: goal clean-up, tokens, key terms.

Goal clean-up repairs the kinds of typos found in the AitW goal files by general rules (two
known words glued together, a function word glued to a capitalised word, a letter glued to a
digit), never by listing the broken lines. Key terms are what a success predicate compares: the
content words of a text, lower-cased, stripped of punctuation, stop words and plural ``s``.
"""

from __future__ import annotations

import re


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that give a goal its structure; two of them glued together ("alarmfor", "Searchfor",
# "rateagainst", "Checkthe", "goodrestaurant") are split back apart.
GRAMMAR_WORDS = _wordset(
    """search for set alarm check the settings rate against good restaurant restaurants install
    open play video find show what whats where how much does price news weather hotels flights
    from turn toggle notifications capital menu time speed best latest nearest top post new
    with about like"""
)
# Short function words that are sometimes glued to the next, capitalised word ("inToronto").
_GLUE_PREFIX = re.compile(r"\b(in|the|of|at|to|on|for|from)([A-Z][a-z])")
_LETTER_DIGIT = re.compile(r"\b(a|an)(\d)")  # "a3 bedroom" -> "a 3 bedroom"
_BRAND_TV = re.compile(r"([a-z])(TV)\b")  # "HisenseTV" -> "Hisense TV"
_SENTENCE_JOIN = re.compile(r"([?!.])(?=[A-Z])")  # "bicycle?Search for ..." (two goals glued)

# Words that carry no content for search matching.
STOP_WORDS = _wordset(
    """a an the is are was be it its it's of in on at to for from by with and or me my i you your
    what whats what's who whos where how much many does do did can could would should will which
    some any this that there these those please tell show give find search google look like
    about get go up thats theres hows wheres whens"""
)
# Qualifiers a human judge would not insist on (a search for "sushi restaurants" answers
# "Search for top rated sushi restaurants"); they are dropped from the required terms.
SOFT_WORDS = _wordset(
    """good nice best top rated new latest great cheap popular famous local some really very
    now right today tonight week weekend month morning afternoon evening year rest current
    currently open star product products buy selling place places spot spots"""
)
_RATING = re.compile(r"\b\d(?:\.\d)?[- ]stars?\b", re.I)  # "5 star sushi" -> a qualifier
# Spelling variants that mean the same thing in a search.
SYNONYMS = {"cost": "price", "costs": "price", "prices": "price", "pricing": "price"}


def clean_goal(goal: str) -> str:
    """Repair typos and spacing of a raw goal line; keeps the first sentence of glued goals."""
    text = " ".join(goal.replace("\u2019", "'").split())
    text = _SENTENCE_JOIN.sub(r"\1\n", text).split("\n", 1)[0]
    text = _GLUE_PREFIX.sub(r"\1 \2", text)
    text = _LETTER_DIGIT.sub(r"\1 \2", text)
    text = _BRAND_TV.sub(r"\1 \2", text)
    words = [_split_glued(w) for w in text.split(" ")]
    return " ".join(words).strip()


def _split_glued(word: str) -> str:
    """``"Searchfor"`` -> ``"Search for"`` when both halves are grammar words (each >= 3 chars)."""
    low = word.lower()
    if low in GRAMMAR_WORDS or len(low) < 6 or not low.isalpha():
        return word
    for cut in range(3, len(low) - 2):
        if low[:cut] in GRAMMAR_WORDS and low[cut:] in GRAMMAR_WORDS:
            return f"{word[:cut]} {word[cut:]}"
    return word


def words(text: str) -> list[str]:
    """Lower-case word tokens: apostrophes and '&' vanish, other punctuation splits."""
    low = text.lower().replace("'", "").replace("&", "")
    return re.findall(r"[a-z0-9]+", low)


def stem(word: str) -> str:
    """A tiny, consistent stemmer: synonyms, then a trailing plural 's' (not 'ss')."""
    word = SYNONYMS.get(word, word)
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def stems(text: str) -> list[str]:
    """Stemmed tokens of ``text`` in order (stop words kept: used for the searched side)."""
    return [stem(w) for w in words(text)]


def key_terms(text: str, *, soft: bool = True) -> list[str]:
    """The stemmed content words of ``text``, in order, without duplicates.

    Qualifiers (:data:`SOFT_WORDS`) and star ratings are dropped only where written in lower
    case, so names such as "New York" or "Best Buy" keep all their words. If nothing but
    qualifiers is left, they are kept.

    Args:
        text: any goal fragment or query.
        soft: drop the qualifiers (the default for required terms).
    """
    raw = re.findall(r"[A-Za-z0-9'&]+", _RATING.sub(" ", text))
    out: list[str] = []
    kept_soft: list[str] = []
    for token in raw:
        for w in words(token):
            if w in STOP_WORDS:
                continue
            s = stem(w)
            if soft and w in SOFT_WORDS and token == token.lower():
                if s not in kept_soft:
                    kept_soft.append(s)
                continue
            if s not in out:
                out.append(s)
    return out or kept_soft


def content_phrase(text: str) -> str:
    """``text`` without stop words and lower-case qualifiers, original spelling: a natural query."""
    kept = [
        w
        for w in text.split()
        if _bare(w) not in STOP_WORDS and not (_bare(w) in SOFT_WORDS and w == w.lower())
    ]
    return " ".join(kept).strip(" ?.!,")


def _bare(word: str) -> str:
    return "".join(words(word))


def covers(query: str, terms: list[str] | str) -> bool:
    """Whether every required term occurs among the stemmed tokens of ``query``."""
    required = terms.split() if isinstance(terms, str) else terms
    have = set(stems(query))
    return bool(required) and all(t in have for t in required)


def same_query(a: str, b: str) -> bool:
    """Two search queries are the same up to case, spacing and punctuation."""
    return words(a) == words(b) and bool(words(a))


def strip_article(text: str) -> str:
    """Drop a leading article ("the", "a", "an") and trailing punctuation."""
    return re.sub(r"^(the|a|an)\s+", "", text.strip(" ?.!,"), flags=re.I).strip()
