"""Vocabularies the goal generators draw from, with where the words come from.

The AitW train goals name few entities (a dozen cities, a handful of shops and apps), so a
policy cloned on them alone learns those words, not how to copy a goal. These lists widen every
slot a goal can carry; each list names its source. Words are plain ASCII (the simulator's
keyboard and the byte-fallback tokenizer handle others, but the AitW goals are ASCII).
"""

from __future__ import annotations


def _split(text: str, sep: str | None = "|") -> tuple[str, ...]:
    return tuple(w.strip() for w in text.split(sep) if w.strip())


# GeoNames cities with population > 1M (cities1000 dump, feature class P), plus US cities
# > 300k (US Census 2020) because AitW's questions are US-centred.
CITIES = (
    *_split(
    "Tokyo Delhi Shanghai Dhaka Cairo Mumbai Beijing Osaka Karachi Chongqing Istanbul Kolkata "
    "Manila Lagos Tianjin Kinshasa Guangzhou Lahore Shenzhen Bangalore Moscow Jakarta Lima "
    "Bangkok Chennai Seoul Hyderabad Nagoya Tehran Ahmedabad Wuhan Chengdu Baghdad Hanoi Luanda "
    "Riyadh Santiago Madrid Toronto Nairobi Pune Surat Khartoum Singapore Houston Dallas Miami "
    "Atlanta Philadelphia Barcelona Berlin Rome Sydney Melbourne Montreal Ankara Alexandria "
    "Casablanca Yokohama Kabul Busan Johannesburg Milan Naples Kyiv Athens Lisbon Budapest Vienna "
    "Warsaw Bucharest Hamburg Munich Prague Dublin Brussels Stockholm Copenhagen Oslo Helsinki "
    "Amsterdam Rotterdam Zurich Geneva Manchester Birmingham Glasgow Edinburgh Marseille Lyon "
    "Seville Valencia Porto Havana Caracas Quito Bogota Medellin Cali Guadalajara Monterrey "
    "Tijuana Recife Salvador Fortaleza Curitiba Manaus Brasilia Montevideo Asuncion Auckland "
    "Perth Brisbane Adelaide Vancouver Calgary Edmonton Ottawa Winnipeg Phoenix Austin Seattle "
    "Boston Detroit Nashville Memphis Louisville Baltimore Milwaukee Albuquerque Tucson Fresno "
    "Sacramento Omaha Raleigh Cleveland Tampa Honolulu Anchorage Portland Charlotte Columbus "
    "Indianapolis Jacksonville Denver Pittsburgh Cincinnati Minneapolis Orlando"
    , None),
    "New Delhi", "Sao Paulo", "Mexico City", "Buenos Aires", "Rio de Janeiro", "Ho Chi Minh City",
    "Hong Kong", "Kuala Lumpur", "Cape Town", "Tel Aviv", "Abu Dhabi", "San Diego", "San Jose",
    "San Antonio", "Fort Worth", "El Paso", "Las Vegas", "Oklahoma City", "Kansas City",
    "Long Beach", "Virginia Beach", "Colorado Springs", "New Orleans", "St. Louis",
    "Salt Lake City",
)  # fmt: skip

# ISO 3166-1 English short names (a subset of the 249).
COUNTRIES = (
    *_split(
    "Argentina Australia Austria Bangladesh Belgium Bolivia Brazil Bulgaria Cambodia Cameroon "
    "Canada Chile China Colombia Croatia Cuba Denmark Ecuador Egypt Estonia Ethiopia Finland "
    "France Germany Ghana Greece Guatemala Honduras Hungary Iceland India Indonesia Iran Iraq "
    "Ireland Israel Italy Jamaica Japan Jordan Kenya Latvia Lebanon Lithuania Madagascar Malaysia "
    "Mexico Mongolia Morocco Nepal Netherlands Nigeria Norway Pakistan Panama Paraguay Peru "
    "Philippines Poland Portugal Qatar Romania Russia Rwanda Senegal Serbia Singapore Slovakia "
    "Slovenia Somalia Spain Sweden Switzerland Syria Taiwan Tanzania Thailand Tunisia Turkey "
    "Uganda Ukraine Uruguay Venezuela Vietnam Yemen Zambia Zimbabwe"
    , None),
    "New Zealand", "South Africa", "South Korea", "Sri Lanka", "Costa Rica",
             "Saudi Arabia", "United Kingdom", "Czech Republic", "Dominican Republic")  # fmt: skip

# ISO 4217 currency names.
CURRENCIES = _split(
    "Euro|British Pound|Japanese Yen|Chinese Yuan|Indian Rupee|Canadian Dollar|Australian Dollar|"
    "Swiss Franc|Mexican Peso|Brazilian Real|South Korean Won|Russian Ruble|Turkish Lira|"
    "Swedish Krona|Norwegian Krone|Polish Zloty|Thai Baht|Singapore Dollar|Philippine Peso|"
    "South African Rand|Egyptian Pound|Israeli Shekel|Argentine Peso|Chilean Peso"
)

# Wikipedia "List of best-selling music artists" and "Forbes Celebrity 100" names.
PEOPLE = _split(
    "Taylor Swift|Bruno Mars|Ed Sheeran|Adele|Beyonce|Rihanna|Drake|Eminem|Shakira|Coldplay|"
    "Lady Gaga|Ariana Grande|Justin Bieber|Billie Eilish|Dua Lipa|Post Malone|The Weeknd|"
    "Kendrick Lamar|Selena Gomez|Katy Perry|Harry Styles|Olivia Rodrigo|Bad Bunny|Imagine Dragons|"
    "Maroon 5|Metallica|Madonna|Elton John|Lionel Messi|Serena Williams|LeBron James|"
    "Cristiano Ronaldo|Roger Federer|Tom Hanks|Oprah Winfrey|Keanu Reeves|Emma Watson|"
    "Barack Obama|Elon Musk|Bill Gates|Warren Buffett|Jeff Bezos|Tim Cook|Sundar Pichai|"
    "Stephen King|J. K. Rowling|Neil Armstrong|Marie Curie|Albert Einstein|Isaac Newton"
)

# YouTube channels from Social Blade's top news, tech and gaming channels.
CHANNELS = _split(
    "CNN|BBC News|Fox News|NBC News|ABC News|CBS News|Al Jazeera English|Bloomberg|Reuters|"
    "The New York Times|The Washington Post|Vox|Vice|TED|Marques Brownlee|Linus Tech Tips|"
    "Unbox Therapy|IGN|GameSpot|Polygon|The Verge|Engadget|CNET|Kurzgesagt|Veritasium|"
    "National Geographic|NASA|SpaceX|Tasty|Bon Appetit|Jimmy Fallon|Saturday Night Live|ESPN|NFL|"
    "NBA|Mark Rober|Smarter Every Day|Numberphile|Vsauce|MrBeast|Dude Perfect|Good Mythical Morning"
)

# Product names: AitW WebShop train queries' brands widened with Best Buy / Walmart category
# best sellers (names only, no prices).
PRODUCTS = _split(
    "apple airpods|apple ipad|apple macbook pro|apple watch|asus zenbook|asus rog phone|"
    "acer predator|acer aspire|dell xps 13|dell inspiron|hp spectre|hp envy|lenovo thinkpad|"
    "lenovo legion|microsoft surface|razer blade|razer kraken|logitech g502|logitech g pro|"
    "logitech mx master|corsair k70|corsair void|steelseries arctis|hyperx cloud|bose quietcomfort|"
    "sony wh-1000xm5|sony playstation 5|xbox series x|nintendo switch|samsung galaxy s24|"
    "samsung galaxy tab|samsung odyssey|google pixel 8|oneplus 12|jbl flip|beats studio|"
    "canon eos|nikon z6|gopro hero|dji mini|kindle paperwhite|fitbit charge|garmin forerunner|"
    "lg oled tv|tcl roku tv|vizio soundbar|sonos one|nest thermostat|ring doorbell|dyson v15|"
    "instant pot|ninja air fryer|keurig coffee maker|kitchenaid mixer|roomba vacuum|"
    "western digital hard drive|sandisk ssd|seagate barracuda|intel core i9|amd ryzen 7|"
    "nvidia rtx 4070|msi gaming monitor|benq monitor|anker power bank|belkin charger"
)

# Everyday shopping items (Walmart department names and common goods).
ITEMS = _split(
    "beach hat|running shoes|rain jacket|coffee table|desk lamp|office chair|yoga mat|backpack|"
    "water bottle|sunglasses|winter coat|baby stroller|dog bed|cat tree|garden hose|tool set|"
    "electric toothbrush|hair dryer|bath towels|bed sheets|dinner plates|wine glasses|"
    "board game|jigsaw puzzle|bluetooth speaker|phone case|laptop bag|alarm clock|wall clock|"
    "area rug|floor lamp|bookshelf|gaming chair|sofa|mattress|eyeshadow|lipstick|perfume|"
    "sneakers|wrist watch|tennis racket|bicycle helmet|camping tent|sleeping bag|fishing rod"
)

# Shops of the simulator's web (sim/web/intent.py SITES), named as people write them.
SHOPS = ("eBay", "Amazon", "Walmart", "Target", "Best Buy", "Costco", "Newegg", "Sephora", "IKEA")
WEBSHOP_SITES = ("bestbuy.com", "costco.com", "ebay.com", "newegg.com", "walmart.com")

# Google Play "Top free apps" names (third-party apps open in the generic app screen).
APPS = _split(
    "Spotify|Netflix|Instagram|TikTok|WhatsApp|Facebook|Messenger|Snapchat|Twitter|Pinterest|"
    "LinkedIn|Reddit|Discord|Telegram|Signal|Zoom|Slack|Uber|Lyft|Airbnb|DoorDash|Grubhub|"
    "Pandora|Shazam|Duolingo|Waze|Venmo|PayPal|Cash App|Amazon Shopping|eBay|Etsy|Wish|"
    "Starbucks|McDonald's|Yelp|Tripadvisor|Expedia|Booking.com|Dropbox|Evernote|Todoist|Trello|"
    "Strava|MyFitnessPal|Headspace|Calm|Audible|Kindle|Twitch|Hulu|Disney Plus|HBO Max|"
    "Google Drive|Google Photos|Google Maps|Google Calendar|YouTube|Gmail|Chrome|Play Store|"
    "Clock|Calculator|Camera|Contacts|Messages|Settings|Files"
)

# Places people navigate to: AitW train goals' kinds widened with OpenStreetMap amenity and
# shop tag values, and US chain stores (Wikipedia "List of largest U.S. retailers").
PLACES = _split(
    "grocery store|gas station|pharmacy|hospital|post office|bank|ATM|library|gym|park|"
    "coffee shop|bakery|pizza place|movie theater|museum|zoo|airport|train station|bus station|"
    "hardware store|bookstore|shopping mall|car wash|hotel|police station|fire station|"
    "Walmart|Target|Costco|Home Depot|Lowe's|Best Buy|Starbucks|McDonald's|Walgreens|CVS|"
    "Apple Store|Verizon Store|IKEA|Whole Foods|Trader Joe's|Safeway|Kroger|Chipotle|Subway"
)

# Cuisines (Wikipedia "List of cuisines") and dishes, for restaurants and menus.
CUISINES = _split(
    "Italian|Mexican|Chinese|Japanese|Thai|Indian|French|Greek|Korean|Vietnamese|Spanish|"
    "Lebanese|Turkish|Ethiopian|Brazilian|Peruvian|vegan|vegetarian|seafood|sushi|pizza|"
    "burger|barbecue|ramen|taco|steak|dim sum|noodle|breakfast|brunch"
)

# Restaurant chains (Wikipedia "List of restaurant chains in the United States").
RESTAURANTS = _split(
    "Cheesecake Factory|Olive Garden|Red Lobster|Applebee's|Chili's|Panera Bread|Chipotle|"
    "Shake Shack|In-N-Out|Five Guys|Taco Bell|Wendy's|Burger King|KFC|Domino's|Pizza Hut|"
    "Outback Steakhouse|Texas Roadhouse|IHOP|Denny's|P.F. Chang's|Panda Express|Subway"
)

# News topics: Google News sections and common subjects.
NEWS_TOPICS = _split(
    "technology|science|sports|business|politics|health|entertainment|world|the economy|"
    "climate change|space exploration|artificial intelligence|the stock market|football|"
    "basketball|tennis|the elections|electric cars|cryptocurrency|the Olympics|medicine"
)

# Things to ask facts about (Wikipedia vital articles, level 2).
THINGS = _split(
    "the Eiffel Tower|the Great Wall of China|the Moon|Mars|the Sun|the Pacific Ocean|"
    "Mount Everest|the Amazon river|the Sahara desert|the Roman Empire|the internet|"
    "photosynthesis|gravity|a black hole|a volcano|an earthquake|the human heart|DNA|"
    "the Statue of Liberty|the Golden Gate Bridge|the Taj Mahal|the Colosseum|the pyramids"
)

WALLPAPER_KINDS = _split(
    "nature|space|ocean|mountain|city|anime|abstract|minimalist|car|animal|flower|sunset|forest"
)
DEVICES = ("computer", "phone", "laptop", "tablet", "desktop", "iPhone", "Android phone")
HOURS = tuple(f"{h}{ap}" for ap in ("am", "pm") for h in range(1, 13))
HALF_HOURS = tuple(f"{h}:{m:02d}{ap}" for ap in ("am", "pm") for h in range(1, 13)
                   for m in (15, 30, 45))  # fmt: skip
WEBSITES = _split(
    "Reddit|Wikipedia|IMDb|Quora|Craigslist|Hacker News|bbc.com|cnn.com|espn.com|nytimes.com|"
    "weather.com|github.com|stackoverflow.com|medium.com|nasa.gov|theverge.com"
)
