"""A little world knowledge for Google's answer cards, as of the simulated date (Sat, Nov 21, 2020).

Capitals, short facts, UTC offsets of cities and exchange rates, each kept as a compact table.
"""

from __future__ import annotations

import re

from distrl_tasks.sim.app import stable_int


def table_spec(spec: str) -> dict[str, str]:
    """``"a:1;b:2"`` -> ``{"a": "1", "b": "2"}`` (keeps long data tables compact)."""
    return dict(item.strip().split(":", 1) for item in spec.split(";") if item.strip())


_CAPITALS = table_spec(
    "argentina:Buenos Aires;bolivia:Sucre (constitutional), La Paz (seat of government);"
    "brazil:Brasília;canada:Ottawa;chile:Santiago;colombia:Bogotá;ecuador:Quito;"
    "mexico:Mexico City;panama:Panama City;paraguay:Asunción;peru:Lima;uruguay:Montevideo;"
    "venezuela:Caracas;united states:Washington, D.C.;usa:Washington, D.C.;china:Beijing;"
    "england:London;france:Paris;germany:Berlin;india:New Delhi;italy:Rome;japan:Tokyo;"
    "norway:Oslo;spain:Madrid;sweden:Stockholm;switzerland:Bern;united kingdom:London;"
    "uk:London;australia:Canberra;russia:Moscow;egypt:Cairo;south korea:Seoul;"
    "portugal:Lisbon;ireland:Dublin;netherlands:Amsterdam;greece:Athens;turkey:Ankara;"
    "kenya:Nairobi;nigeria:Abuja;south africa:Pretoria (executive);poland:Warsaw;"
    "austria:Vienna;belgium:Brussels;denmark:Copenhagen;finland:Helsinki;thailand:Bangkok;"
    "vietnam:Hanoi;indonesia:Jakarta;philippines:Manila;pakistan:Islamabad;cuba:Havana"
)
_FACTS = {
    "speed of light": ("299,792,458 m/s", "Speed of light in vacuum"),
    "speed of sound": ("343 m/s (767 mph)", "In dry air at 20 °C"),
    "cheetah": ("80 - 130 km/h (50 - 80 mph)", "Cheetah, top speed"),
    "blue whale": ("24 - 30 m (79 - 98 ft) long", "Blue whale, length"),
    "giraffe": ("4.3 - 5.7 m (14 - 19 ft) tall", "Giraffe, height"),
    "earth": ("12,742 km (7,918 mi) in diameter; 4.54 billion years old", "Earth"),
    "how far is the moon": ("384,400 km (238,855 mi)", "Average distance from Earth"),
    "moon": ("3,474 km (2,159 mi) in diameter", "Moon, diameter"),
    "sun": ("1.39 million km (864,000 mi) in diameter", "Sun, diameter"),
    "president of the united states": ("Donald Trump", "45th President of the United States"),
    "president of france": ("Emmanuel Macron", "President of France since 2017"),
    "prime minister of canada": ("Justin Trudeau", "Prime Minister of Canada since 2015"),
    "prime minister of the united kingdom": ("Boris Johnson", "Prime Minister since 2019"),
}
_UTC = {
    city: float(off)
    for city, off in table_spec(
        "beijing:8;berlin:1;london:0;los angeles:-8;moscow:3;new york:-5;nyc:-5;paris:1;"
        "san francisco:-8;sydney:11;tokyo:9;seoul:9;chicago:-6;denver:-7;mumbai:5.5;"
        "delhi:5.5;new delhi:5.5;hong kong:8;singapore:8;dubai:4;toronto:-5;mexico city:-6;"
        "sao paulo:-3;rio de janeiro:-3;buenos aires:-3;madrid:1;rome:1;zurich:1;"
        "johannesburg:2;cairo:2;istanbul:3;seattle:-8;boston:-5;miami:-5;honolulu:-10"
    ).items()
}
# code:units per US dollar:names; longest names are matched first
_CURRENCIES = {
    name: (code, float(rate))
    for code, spec in table_spec(
        "USD:1.0 usd|us dollar|dollar;EUR:0.843 eur|euro;GBP:0.753 gbp|british pound|pound;"
        "JPY:103.86 jpy|yen;CNY:6.567 cny|yuan|renminbi;INR:74.12 inr|rupee;"
        "KRW:1115.2 krw|won;MXN:20.07 mxn|peso;CAD:1.309 cad|canadian dollar;"
        "AUD:1.370 aud|australian dollar;BRL:5.33 brl|real;CHF:0.912 chf|franc;"
        "RUB:76.1 rub|ruble;HKD:7.753 hkd|hong kong dollar;SGD:1.340 sgd|singapore dollar"
    ).items()
    for rate, names in [spec.split(" ", 1)]
    for name in names.split("|")
}


def capital_of(text: str) -> str:
    """The capital for "capital of <country>" phrasings, or ``""`` if unknown."""
    m = re.search(r"capital (?:city )?of (?:the )?(.+?)$", text.lower().strip(" ?!."))
    country = m.group(1).strip() if m else ""
    return _CAPITALS.get(country, _CAPITALS.get(f"the {country}", ""))


def fact_answer(text: str) -> tuple[str, str] | None:
    """A known short answer whose key phrase occurs in ``text`` (longest key wins)."""
    low = text.lower()
    for key in sorted(_FACTS, key=len, reverse=True):
        if key in low:
            return _FACTS[key]
    return None


def utc_offset(city: str) -> float:
    """Hours from UTC for a city; unknown cities get a stable made-up offset (-10 .. +12)."""
    key = re.sub(r"[^a-z ]", "", city.lower()).strip()
    if key in _UTC:
        return _UTC[key]
    return float(stable_int("tz", key) % 23 - 10)


def currency_pair(text: str) -> tuple[str, str, float] | None:
    """``(from_code, to_code, rate)`` for text naming one or two currencies, else None.

    With one non-dollar currency the pair is USD -> it ("dollar to yen", "euro rate").
    """
    low = text.lower()
    found: list[tuple[int, str, float]] = []
    taken: list[tuple[int, int]] = []
    for name in sorted(_CURRENCIES, key=len, reverse=True):
        for m in re.finditer(rf"\b{re.escape(name)}s?\b", low):
            if any(a <= m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            found.append((m.start(), *_CURRENCIES[name]))
    codes: list[tuple[str, float]] = []
    for _, code, per_usd in sorted(found):
        if (code, per_usd) not in codes:
            codes.append((code, per_usd))
    if not codes or codes == [("USD", 1.0)]:
        return None
    if len(codes) == 1:
        codes.insert(0, ("USD", 1.0))
    (src, src_rate), (dst, dst_rate) = codes[0], codes[1]
    return src, dst, dst_rate / src_rate
