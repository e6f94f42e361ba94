"""Who a request names, read against the tenant's own contacts rather than guessed from capital letters.

A person is named by a full name ("Maria Lopez"), a first or last name ("maria", "Okafor"), possibly
misspelt by a letter ("Mraia", "Priay"), or by a role ("the CFO", "our head of marketing", "the
recruiter"). Each mention is matched against every contact of the address book:

- one contact fits: that person;
- several fit ("David", "the engineer"): the user is asked which, never one picked;
- none fits a word in a person's place ("email Sarah", "with Zed"): the user is told no such contact
  exists and asked whom they mean.

A misspelling counts only in words of five letters or more whose first letter is right (a four-letter
word one letter off is too often another word: "late" is not Kate)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from master_agent.capabilities.tools.lexicon import WordNetMissing, names_a_person, wordnet
from master_agent.domains.assistant.providers import Contact

_TOKEN = re.compile(r"[^\W\d_][\w'’.-]*", re.UNICODE)
#: Words before a role ("the CFO", "our recruiter", "my designer").
_DETERMINERS = frozenset({"the", "our", "my", "your", "their"})
#: Titles written out ("chief financial officer" is the CFO).
_ACRONYMS = {
    "ceo": "chief executive officer",
    "cfo": "chief financial officer",
    "cto": "chief technology officer",
    "coo": "chief operating officer",
    "cmo": "chief marketing officer",
}
#: Words that say a title leads its field ("Marketing Lead" is the head of marketing).
_LEADS = frozenset({"lead", "head", "director", "manager", "chief"})
#: Shortest misspelt word read as a name.
FUZZY_MIN_LETTERS = 5


@dataclass(frozen=True)
class Named:
    """One mention of a person in a request and the contacts it may mean."""

    said: str
    """The request's words ("maria", "the CFO")."""
    contacts: tuple[Contact, ...]
    """Everyone it may mean: one is a match, several a question."""
    start: int
    end: int


def _plain(word: str) -> str:
    word = word.lower().replace("’", "'")
    for suffix in ("'s", "'"):
        if word.endswith(suffix):
            word = word[: -len(suffix)]
    return word.strip(".-")


def _one_edit(left: str, right: str) -> bool:
    """At most one insertion, deletion, substitution or swap of neighbours between the two."""
    if abs(len(left) - len(right)) > 1:
        return False
    if len(left) == len(right):
        diff = [i for i, (a, b) in enumerate(zip(left, right, strict=True)) if a != b]
        if len(diff) <= 1:
            return True
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and left[diff[0]] == right[diff[1]]
            and left[diff[1]] == right[diff[0]]
        )
    short, long_ = sorted((left, right), key=len)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def same_name(word: str, name: str) -> bool:
    """``word`` (as written in a request) is ``name``, or ``name`` misspelt by one letter."""
    word, name = _plain(word), name.lower()
    if word == name:
        return True
    return (
        len(word) >= FUZZY_MIN_LETTERS
        and len(name) >= FUZZY_MIN_LETTERS
        and word[0] == name[0]
        and _one_edit(word, name)
    )


def _name_parts(contact: Contact) -> list[str]:
    return [part for part in re.split(r"\s+", contact.name.strip()) if part]


def _role_words(title: str) -> list[list[str]]:
    """The ways a title may be said: as written, written out ("chief financial officer"), and for a
    title that leads a field, "head of <field>"."""
    words = [_plain(w) for w in title.split()]
    forms = [words]
    if len(words) == 1 and words[0] in _ACRONYMS:
        forms.append(_ACRONYMS[words[0]].split())
    if len(words) >= 2 and words[-1] in _LEADS:
        forms.append(["head", "of", *words[:-1]])
    return forms


def people_named(text: str, contacts: Sequence[Contact]) -> list[Named]:
    """Every mention in ``text`` of a person in ``contacts``, in the order written."""
    tokens = [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]
    plain = [_plain(word) for word, _, _ in tokens]
    found: list[Named] = []
    taken: set[int] = set()

    def add(first: int, last: int, people: Sequence[Contact]) -> None:
        unique = tuple({c.uid: c for c in people}.values())
        found.append(
            Named(
                said=text[tokens[first][1] : tokens[last][2]],
                contacts=unique,
                start=tokens[first][1],
                end=tokens[last][2],
            )
        )
        taken.update(range(first, last + 1))

    # Roles: "the CFO", "our head of marketing" (a determiner before the title's words).
    for index, word in enumerate(plain):
        if word not in _DETERMINERS or index + 1 in taken:
            continue
        best: tuple[int, list[Contact]] = (0, [])
        for contact in contacts:
            for form in _role_words(contact.title or ""):
                size = len(form)
                if size and plain[index + 1 : index + 1 + size] == form:
                    if size > best[0]:
                        best = (size, [contact])
                    elif size == best[0]:
                        best[1].append(contact)
        if best[0]:
            add(index, index + best[0], best[1])
    # Names: a full name first ("David Okafor"), else a first name, else a last name.
    index = 0
    while index < len(tokens):
        if index in taken:
            index += 1
            continue
        word = tokens[index][0]
        following = tokens[index + 1][0] if index + 1 < len(tokens) and index + 1 not in taken else None
        full = [
            c
            for c in contacts
            if following is not None
            and len(parts := _name_parts(c)) >= 2
            and same_name(word, parts[0])
            and same_name(following, parts[-1])
        ]
        if full:
            add(index, index + 1, full)
            index += 2
            continue
        first = [c for c in contacts if (parts := _name_parts(c)) and same_name(word, parts[0])]
        if first:
            add(index, index, first)
        elif word[:1].isupper() or (index and plain[index - 1] in _PERSONS_PLACE):
            # A last name alone counts where it is written as a name ("Okafor", not "silva" in a sentence),
            # or, as written exactly, where the grammar puts a person ("email miller and sato").
            last = [
                c
                for c in contacts
                if len(parts := _name_parts(c)) >= 2
                and (same_name(word, parts[-1]) if word[:1].isupper() else plain[index] == parts[-1].lower())
            ]
            if last:
                add(index, index, last)
        index += 1
    return sorted(found, key=lambda named: named.start)


#: Words after which a request names a person: "email miller", "with sato", "miller and sato", "cc kim".
_PERSONS_PLACE = frozenset(
    {
        "email",
        "mail",
        "message",
        "text",
        "ping",
        "tell",
        "invite",
        "ask",
        "cc",
        "bcc",
        "with",
        "and",
        "&",
        "to",
    }
    | {"include", "add", "loop", "remind", "notify", "inform", "call", "meet", "plus", "or"}
)


#: English's closed classes, which WordNet (open classes only) has no word for: never a surname.
_CONJUNCTIONS = {"and", "or", "but", "nor", "yet", "than", "then", "also", "too", "both", "either", "neither"}
_PREPOSITIONS = {"for", "to", "of", "in", "on", "at", "by", "with", "from", "about", "as", "into", "onto"}
_PREPOSITIONS |= {"over", "under", "after", "before", "until", "till", "via", "per", "plus"}
_DETERMINERS_ALL = {"the", "a", "an", "this", "that", "these", "those", "my", "your", "his", "her", "its"}
_DETERMINERS_ALL |= {"our", "their", "each", "every", "any", "some", "all"}
_PRONOUNS = {"me", "him", "them", "us", "you", "we", "they", "he", "she", "it", "who", "whom", "whose"}
_AUXILIARIES = {"is", "are", "was", "were", "be", "been", "am", "do", "does", "did", "will", "would", "can"}
_AUXILIARIES |= {"could", "should", "shall", "may", "might", "must", "not"}
_QUESTION_WORDS = {"which", "what", "when", "where", "why", "how", "there", "here", "yes", "please", "pls"}
_CLOSED_CLASS = frozenset(
    _CONJUNCTIONS | _PREPOSITIONS | _DETERMINERS_ALL | _PRONOUNS | _AUXILIARIES | _QUESTION_WORDS | {"thanks"}
)


def _surname_like(word: str) -> bool:
    """Whether a word after a first name is a surname: one WordNet has no word for ("sato", "novak") or
    knows only as particular people ("Kelly", "Jones"); not a word of the language ("tom about",
    "priya tomorrow", "ben friday")."""
    plain = _plain(word)
    if len(plain) < 3 or not plain.isalpha() or plain in _CLOSED_CLASS:
        return False
    if word[:1].islower() and (len(plain) < 4 or not re.search(r"[aeiou]", plain)):
        # Chat shorthand is short and often vowelless ("fyi", "eod", "smth"): a surname in lower case
        # is told from it by both.
        return False
    try:
        senses = wordnet().synsets(plain)
    except WordNetMissing:
        return word[:1].isupper()
    return all(sense.instance_hypernyms() for sense in senses)


def strangers(text: str, contacts: Sequence[Contact]) -> list[Named]:
    """People named by a first name the contacts hold and a surname none of those contacts has ("tom
    kelly", "Priya Anand"): someone else, who must be asked about, never taken for the contact who
    shares the first name."""
    tokens = [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]
    found: list[Named] = []
    for (word, start, _), (following, _, end) in pairwise(tokens):
        firsts = [c for c in contacts if (parts := _name_parts(c)) and same_name(word, parts[0])]
        if not firsts or not _surname_like(following):
            continue
        if any(len(parts := _name_parts(c)) >= 2 and same_name(following, parts[-1]) for c in firsts):
            continue
        if any(same_name(following, part) for c in contacts for part in _name_parts(c)):
            continue  # "ben adler", "priya and omar": a name the contacts hold
        found.append(Named(said=text[start:end], contacts=(), start=start, end=end))
    return found


def covers(named: Sequence[Named], words: str) -> bool:
    """Some mention fits ``words`` (a name the request's grammar puts in a person's place)."""
    wanted = {_plain(w) for w in _TOKEN.findall(words)}
    return any(wanted & {_plain(w) for w in _TOKEN.findall(n.said)} for n in named)


#: People said by the event they are in: "everyone who's in it", "the people on the Northwind call",
#: "all the attendees of the retro", "everyone invited to the planning", "whoever is on the invite".
_IN_EVENT = re.compile(
    r"\b(?:everyone|everybody|whoever|all|(?:the|those|all\s+the)\s+(?P<who>[a-z]+))"
    r"(?:\s+(?:who|that)(?:'s|'re|\s+(?:is|are|was|were))|\s+(?:is|are|was|were))?"
    r"\s+(?:(?:invited|going|coming)\s+to|in|on|at|of|attending)\s+(?P<event>.+?)"
    r"(?=\s+(?:that|saying|to\s+say|know|about|a\s+(?:quick\s+)?(?:note|line|heads-up|message|mail|email))\b"
    # What is told starts a clause of its own: "tell everyone on the Northwind call I'm running late".
    r"|\s+(?:I(?:['’](?:m|ll|ve|d))?|we(?:['’](?:re|ll|ve))?|they(?:['’](?:re|ll))?|he|she)\b(?!['’])"
    r"|[:,.?!;]|$)",
    re.I,
)
#: People said as an event's: "the retro's attendees", "Monday's planning's invitees".
_EVENTS_PEOPLE = re.compile(
    r"\b(?P<event>(?:the|my|our|\w+'s)\s+(?:[\w:-]+\s+){0,3}?[\w:-]+)'s\s+(?P<who>[a-z]+)\b", re.I
)
#: Groups of the address book, not events ("everyone on the team").
_TEAM = re.compile(r"^(?:the\s+|my\s+|our\s+)?(?:whole\s+)?team$", re.I)


def event_people(text: str) -> str | None:
    """The words naming the event whose people ``text`` sends to, or None: "everyone who's in it" ->
    "it" (the event of the request's change), "the people on the Northwind call" -> "the Northwind
    call", "the retro's attendees" -> "the retro". Whoever is said must be people: "everyone", "all", or
    a noun WordNet's first sense reads as a person ("attendees", "guests") or as people."""
    for pattern in (_IN_EVENT, _EVENTS_PEOPLE):
        for found in pattern.finditer(text):
            who, event = found.group("who"), found.group("event").strip()
            if who is not None and who.lower() not in ("people", "folks") and not names_a_person(who):
                continue
            if event and not _TEAM.match(event):
                return event
    return None


#: A question opening: "who", "which/what people", or asked for ("tell me who", "can you check who").
_ASKS_WHO = re.compile(
    r"(?:^|[.!?;]\s+)(?:(?:can|could|would)\s+(?:you|u)\s+)?(?:(?:please\s+)?(?:tell|show|remind)\s+me\s+|"
    r"(?:check|see|find\s+out|look\s+up)\s+)?(?P<who>who(?:m|\s+all|\s+else)?|which\s+\w+|what\s+\w+)"
    r"(?P<rest>(?:['’]|\s).+)",
    re.I,
)
#: What follows the question word up to the event: "'s on", " is invited to", " will be at", " are the
#: attendees of", " is coming to".
_ON_EVENT = re.compile(
    r"^(?:['’]s|['’]re|['’]ll\s+be|\s+(?:is|are|was|were|will\s+be|has\s+been|have\s+been)|"
    r"\s+(?:did|do|have|has)\s+(?:i|we|you)(?:\s+(?:already|just))?\s+(?=invit))?\s*(?:all\s+|else\s+)?"
    r"(?:(?:the\s+)?(?P<noun>[a-z]+)\s+(?:of|for|on|in|at)\s+|"
    r"(?:(?:invited?|going|coming|joining|attending|booked|asked)(?:\s+(?:to|on|for|into))?|in|on|at|attending|"
    r"joining)\s+)(?P<event>.+?)\s*(?:[?.!;]|$)",
    re.I,
)
#: The words that call an event by its invitation: "the Northwind call invite" is the Northwind call.
_INVITE_WORDS = re.compile(
    r"\s+(?:calendar\s+|meeting\s+)?(?:invite|invitation|invite\s+list|guest\s+list)$", re.I
)


def attendees_asked(text: str) -> str | None:
    """The words naming the event whose people a question asks for, or None: "who's on the Northwind
    call invite?" -> "the Northwind call", "which people are invited to the budget sync?", "who is coming
    to the design review on wednesday", "who are the attendees of friday's retro". A question only
    (opened by "who", "which people", "tell me who"): "email everyone who's on the retro invite that ..."
    sends to them (``event_people``). Whoever is asked for must be people: "which room is the retro in"
    asks no one (WordNet's first sense of the noun, as ``event_people`` reads it)."""
    asked = _ASKS_WHO.search(text)
    if asked is None:
        return None
    who = asked.group("who").lower().split()
    if len(who) == 2 and who[0] in ("which", "what") and not _people_word(who[1]):
        return None
    found = _ON_EVENT.match(asked.group("rest"))
    if found is None:
        return None
    noun = found.group("noun")
    if noun is not None and not _people_word(noun):
        return None
    event = _INVITE_WORDS.sub("", found.group("event").strip())
    return event if event and not _TEAM.match(event) else None


def _people_word(word: str) -> bool:
    """ "people", "folks", or a noun WordNet's first sense reads as a person ("attendees", "guests")."""
    return word.lower() in ("people", "folks") or names_a_person(word)
