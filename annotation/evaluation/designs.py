"""The three study designs: their dimensions, scales and measurement levels (plain data)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Dimension:
    key: str
    label: str
    question: str
    minimum: int
    maximum: int
    step: int = 1
    level: str = "ordinal"  # Krippendorff's alpha: ordinal (Likert, comparative) or interval (slider)
    low: str = ""
    high: str = ""
    choices: tuple[tuple[int, str], ...] = ()  # keyboard order: key 1 is the first choice

    def valid(self, value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if value != value or not self.minimum <= value <= self.maximum:  # NaN or out of range
            return False
        return self.step != 1 or float(value).is_integer() or self.level == "interval"


@dataclass(frozen=True)
class Design:
    key: str
    label: str
    dimensions: tuple[Dimension, ...]
    controls: bool = False
    needs_reference: bool = False
    source: str = ""
    average: bool = field(default=False)  # an "Avg." column over the dimensions (Jiang et al. 2020)

    @property
    def keys(self) -> list[str]:
        return [d.key for d in self.dimensions]

    def dimension(self, key: str) -> Dimension:
        for d in self.dimensions:
            if d.key == key:
                return d
        raise KeyError(key)


LIKERT_CHOICES = ((1, "1"), (2, "2"), (3, "3"), (4, "4"), (5, "5"))
LIKERT = Design(
    "likert",
    "Likert fluency / adequacy / simplicity",
    (
        Dimension("fluency", "Fluency", "Is the output grammatical and well formed?", 1, 5, low="not fluent", high="perfectly fluent", choices=LIKERT_CHOICES),
        Dimension("adequacy", "Adequacy", "Does the output keep the meaning of the source?", 1, 5, low="meaning lost", high="all meaning kept", choices=LIKERT_CHOICES),
        Dimension("simplicity", "Simplicity", "Is the output simpler than the source?", 1, 5, low="not simpler", high="much simpler", choices=LIKERT_CHOICES),
    ),
    source="Jiang et al. 2020, Tables 6 and 7: five raters, 100 random sentences, 5-point scales",
    average=True,
)
SLIDER = Design(
    "slider",
    "0-100 slider with control items",
    (Dimension("quality", "Quality", "How good is this simplification of the source?", 0, 100, level="interval", low="Very Low Quality", high="Perfect Quality"),),
    controls=True,
    source="BiSECT (Kim et al. 2021): all outputs of a source on one page, a control output in every page",
)
COMPARATIVE = Design(
    "comparative",
    "Comparative simplicity against the reference",
    (
        Dimension(
            "comparative", "Simpler than the reference?", "Compared with the reference, is the output simpler or harder?", -2, 2,
            low="much harder", high="much simpler",
            choices=((-2, "much harder"), (-1, "somewhat harder"), (0, "equal"), (1, "somewhat simpler"), (2, "much simpler")),
        ),
    ),
    needs_reference=True,
    source="comparative simplicity of the back-translation study: -2 much harder .. +2 much simpler",
)
DESIGNS: dict[str, Design] = {d.key: d for d in (LIKERT, SLIDER, COMPARATIVE)}
AVERAGE = "average"


DEFAULT_INSTRUCTIONS = {
    "likert": """You will see a complex source sentence and several simplified versions of it, made by different methods (in a random order that changes from page to page). Rate every version on three 1-5 scales:

Fluency: is it grammatical and natural English? 5 = perfectly fluent, 1 = unreadable.
Adequacy: does it keep the meaning of the source? 5 = all important meaning kept, 1 = meaning lost or changed.
Simplicity: is it simpler to read than the source? 5 = much simpler, 3 = about as hard, 1 = harder.

Worked example
Source: The council approved the budget after a protracted debate on Tuesday.
Version: The council approved the budget on Tuesday after a long debate.
Fluency 5 (natural), Adequacy 5 (same meaning), Simplicity 4 ("long" replaces "protracted").

Version: The council the budget Tuesday approved.
Fluency 1 (not a sentence), Adequacy 2 (the debate is lost), Simplicity 3.

Keyboard: 1-5 rate the highlighted scale and move to the next one; Tab / Shift+Tab and the arrow keys move between scales; Enter submits the page once every scale has a value.""",
    "slider": """You will see a complex source sentence and several simplified versions of it, shuffled on every page. Move each slider from "Very Low Quality" (0) to "Perfect Quality" (100): a good simplification is fluent, keeps the meaning and is easier to read.

Words a version adds to the source are highlighted; words it deletes are shown struck through in grey.

Some versions have random words substituted into them: they should get a low score (under 20).

Worked example
Source: Scientists discovered a new species of frog in the rainforest of Peru.
Version: Scientists found a new kind of frog in Peru.  ->  about 85: simpler and faithful.
Version: Scientists found a window kind of frog in happily Peru.  ->  about 5: words make no sense.

Keyboard: Tab / Shift+Tab or Up / Down choose a version; Left / Right move its slider by 1 (with Shift by 10); 0-9 jump to 0-90; Enter submits the page once every slider has been moved.""",
    "comparative": """You will see a reference simplification and several other simplified versions of the same sentence. For each version, say whether it is simpler or harder to read than the reference:

+2 much simpler, +1 somewhat simpler, 0 about equal, -1 somewhat harder, -2 much harder.

Worked example
Reference: Rain flooded villages near the river.
Version: Heavy rain caused flooding in several villages near the river.  ->  -1 (longer, a little harder).
Version: It rained. Villages were flooded.  ->  +1 (shorter sentences, same difficulty of words).

Keyboard: keys 1-5 choose -2 .. +2 for the highlighted version and move to the next; Tab / arrows move; Enter submits the page once every version has a value.""",
}
