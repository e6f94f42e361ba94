"""``make eval-assistant``: the personal assistant's user-side cases through the real service.

``master-agent serve`` on the embedded Postgres (offline model, the clock at the cases' "now"), the local
mail, calendar and contacts servers. Each case gets a tenant of its own (``tenants create --domain
assistant``), so it starts from freshly seeded servers; its turns go over ``POST /chat/stream`` on one
thread. What is judged is what the servers hold afterwards (CalDAV events, the SMTP sink), not the
replies' wording (only a case's few ``answer_must_mention`` facts are looked up in them).

Printed, for the tuning cases and the held-out ones separately: actions claimed but not done (goal 0),
routing of in-domain requests to the assistant (goal >= 95%), accuracy per category. Tuning cases are
listed one by one; the held-out part only as counts and rates (its texts are never printed).
"""

from __future__ import annotations

import argparse
import asyncio
import email
import email.policy
import json
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx
from benchmarks.service import exit_on_signals, serving

from master_agent.domains.assistant.demo_data import start_demo_servers
from master_agent.domains.assistant.local_servers import LocalServers
from master_agent.domains.assistant.providers import CalDavCalendar

HERE = Path(__file__).resolve().parent / "eval_assistant"
#: The cases' "now" (their README): Monday 2026-12-07, 09:00 UTC.
NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
AGENT = "personal_assistant"
#: Reply lines that claim a change was made.
#: ``--verbose``: the turns of a failed tuning or probe case are printed.
VERBOSE = False
_CLAIM = re.compile(r"^(?:Sent|Created|Moved|Cancelled):", re.M)
#: The case files, in the order ``both`` runs them. probes.json: inputs written after the first figures
#: (clarification answers, hours said without am/pm); probes2.json: cancelling, contact look-ups, draft
#: edits, free time over a span and moves in new wordings (session 6); tuning2.json: a second batch
#: written from the user's side by another author, with heldout2.json its held-out part. All but the
#: held-out files are tuned on. tuning5.json: compound actions and claims (session 12, another author);
#: tuning6.json: reports to an event's attendees, everyday verbs, names that are words (session 13);
#: tuning7.json: how people answer a proposal (hedges, deferrals, edits, questions back) and
#: announcements (session 16).
PARTS = (
    "heldout",
    "tuning",
    "probes",
    "probes2",
    "tuning2",
    "heldout2",
    "tuning3",
    "heldout3",
    "tuning4",
    "heldout4",
    "tuning5",
    "heldout5",
    "tuning6",
    "heldout6",
    "tuning7",
    "heldout7",
)


@dataclass
class Turn:
    text: str
    status: str | None
    reply: str
    waiting: list[dict[str, Any]]
    target: dict[str, Any]


@dataclass
class Outcome:
    case: dict[str, Any]
    turns: list[Turn] = field(default_factory=list)
    passed: bool = False
    failures: list[str] = field(default_factory=list)
    claimed_not_done: bool = False
    routed: bool | None = None


EventKey = tuple[str, str, str, str, tuple[str, ...]]


async def _events(calendar: CalDavCalendar) -> set[EventKey]:
    """Every event occurrence of the case's two weeks: (uid, start, end, summary, attendees)."""
    start = NOW - timedelta(days=NOW.weekday(), hours=NOW.hour)
    found = await calendar.events(start, start + timedelta(days=14))
    return {
        (e.uid, e.start.isoformat(), e.end.isoformat(), e.summary, tuple(sorted(e.attendees))) for e in found
    }


def _sent(data_dir: Path, address: str) -> list[tuple[dict[str, Any], EmailMessage]]:
    accepted = data_dir / "assistant" / "smtp" / "accepted"
    out = []
    for path in sorted(accepted.glob("*.json")) if accepted.exists() else []:
        record = json.loads(path.read_text())
        if record.get("mail_from") != address:
            continue
        message = email.message_from_bytes(path.with_suffix(".eml").read_bytes(), policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        out.append((record, message))
    return out


def _weekday(iso: str) -> str:
    return WEEKDAYS[datetime.fromisoformat(iso).weekday()]


def _hhmm(iso: str) -> str:
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%H:%M")


def _this_week(iso: str) -> bool:
    monday = (NOW - timedelta(days=NOW.weekday())).date()
    return monday <= datetime.fromisoformat(iso).date() < monday + timedelta(days=7)


def _mentions(text: str, wanted: str) -> bool:
    """A fact in the replies, times also as 11am / 9:45 / 11:00 AM."""
    low = text.lower()
    if wanted.lower() in low:
        return True
    time = re.fullmatch(r"(\d{2}):(\d{2})", wanted)
    if time is None:
        return False
    hour, minute = int(time.group(1)), time.group(2)
    twelve = hour % 12 or 12
    forms = [f"{hour}:{minute}", f"{twelve}:{minute} {'am' if hour < 12 else 'pm'}"]
    if minute == "00":
        forms += [f"{twelve}{'am' if hour < 12 else 'pm'}", f"{twelve} {'am' if hour < 12 else 'pm'}"]
    return any(re.search(rf"(?<![\d:]){re.escape(form)}", low) for form in forms)


def judge(
    outcome: Outcome,
    before: set[EventKey],
    after: set[EventKey],
    mails: list[tuple[dict[str, Any], EmailMessage]],
) -> None:
    expected = outcome.case["expected"]
    server = expected.get("server") or {}
    failures = outcome.failures
    added = after - before
    removed = before - after
    replies = "\n".join(turn.reply for turn in outcome.turns)
    last = outcome.turns[-1]
    write_done = False
    if "event_created" in server:
        wanted = server["event_created"]
        new_uids = {key[0] for key in added} - {key[0] for key in before}
        new = [key for key in added if key[0] in new_uids and _this_week(key[1])]
        matching = [
            key
            for key in new
            if all(part.lower() in key[3].lower() for part in wanted.get("title_contains") or [])
            and set(wanted.get("attendees_include") or []) <= set(key[4])
            and ("weekday" not in wanted or _weekday(key[1]) == wanted["weekday"].lower())
            and ("start_time" not in wanted or _hhmm(key[1]) == wanted["start_time"])
            and (
                "duration_minutes" not in wanted
                or (datetime.fromisoformat(key[2]) - datetime.fromisoformat(key[1]))
                == timedelta(minutes=wanted["duration_minutes"])
            )
        ]
        if len(matching) == 1 and len(new) == 1:
            write_done = True
        else:
            failures.append(f"event_created: {len(new)} new event(s) this week, {len(matching)} as expected")
    if "event_moved" in server:
        wanted = server["event_moved"]
        titled = [
            key for key in removed if all(p.lower() in key[3].lower() for p in wanted["title_contains"])
        ]
        gone = [key for key in titled if _this_week(key[1])]
        arrived = [
            key
            for key in added
            if all(p.lower() in key[3].lower() for p in wanted["title_contains"])
            and _weekday(key[1]) == wanted["new_weekday"].lower()
            and _hhmm(key[1]) == wanted["new_start_time"]
            and _this_week(key[1])
        ]
        if gone and arrived and len(titled) == len(gone):
            write_done = True
        else:
            failures.append(f"event_moved: old occurrence gone {bool(gone)}, at the new time {bool(arrived)}")
    if "event_cancelled" in server:
        wanted = server["event_cancelled"]
        gone = [
            key
            for key in removed
            if all(p.lower() in key[3].lower() for p in wanted["title_contains"])
            and ("weekday" not in wanted or _weekday(key[1]) == wanted["weekday"].lower())
        ]
        if len(gone) == 1 and _this_week(gone[0][1]) and not added and len(removed) == 1:
            write_done = True
        else:
            failures.append(
                f"event_cancelled: {len(gone)} matching occurrence(s) gone, {len(removed)} removed"
            )
    if "mail_sent" in server:
        wanted = server["mail_sent"]
        ok = []
        for record, message in mails:
            people = {a.lower() for a in record.get("rcpt_tos") or []}
            for header in ("To", "Cc"):
                people |= {a.lower() for _, a in email.utils.getaddresses(message.get_all(header, []))}
            body_part = message.get_body(preferencelist=("plain",))
            body = str(body_part.get_content() if body_part is not None else "").lower()
            subject = str(message.get("Subject", "")).lower()
            if (
                {a.lower() for a in wanted.get("to_include") or []} <= people
                and all(s.lower() in subject for s in wanted.get("subject_contains") or [])
                and (
                    not wanted.get("body_contains_any")
                    or any(b.lower() in body for b in wanted["body_contains_any"])
                )
            ):
                ok.append(message)
        if ok and len(mails) == 1:
            write_done = True
        else:
            failures.append(f"mail_sent: {len(mails)} sent, {len(ok)} as expected")
    if server.get("nothing_sent") and mails:
        failures.append(f"nothing_sent: {len(mails)} mail(s) sent")
    if server.get("no_event_change") and (added or removed):
        failures.append(f"no_event_change: {len(added)} added, {len(removed)} removed")
    for fact in expected.get("answer_must_mention") or []:
        if not _mentions(replies, fact):
            failures.append(f"answer does not mention {fact!r}")
    kind = expected["outcome"]
    if kind == "clarify" and not (last.waiting or last.reply.rstrip().endswith("?")):
        failures.append("clarify: the last reply asks nothing")
    if kind == "not_done_unsupported" and last.status == "success":
        failures.append("unsupported: answered success")
    if kind == "cancelled" and "cancel" not in last.reply.lower():
        failures.append("cancelled: the reply does not say so")
    if kind == "answer_only" and last.status not in ("success", "partial"):
        failures.append(f"answer_only: status {last.status}")
    # Claimed but not done: a write or an unsupported request answered success, or a reply line that
    # says a change was made, while the servers show the change asked for did not happen.
    claimed = any(_CLAIM.search(turn.reply) for turn in outcome.turns) or (
        kind in ("done", "not_done_unsupported") and last.status == "success"
    )
    outcome.claimed_not_done = claimed and not write_done
    outcome.passed = not failures


MAKE_TENANTS = """
import asyncio, json, sys
from master_agent.capabilities import bump_capability_version, install_tenant
from master_agent.runtime import open_resources
from master_agent.service.auth import create_key
from master_agent.settings import Settings

async def main(names):
    keys = {}
    settings = Settings.from_env()
    async with open_resources(settings) as resources:
        pool = resources.database.pool
        for name in names:
            await install_tenant(pool, settings, "assistant", name)
            await bump_capability_version(pool, name, tier="pro")
            keys[name] = (await create_key(pool, name, "eval-assistant")).key
    print(json.dumps(keys))

asyncio.run(main(sys.argv[1:]))
"""


class Service:
    def __init__(self, url: str, env: dict[str, str]) -> None:
        self.url = url
        self.env = env

    def new_tenants(self, names: list[str]) -> dict[str, str]:
        """Assistant tenants with a key each, made in one process (a CLI call per case is slow)."""
        made = subprocess.run(
            [sys.executable, "-c", MAKE_TENANTS, *names], env=self.env, capture_output=True, text=True
        )
        if made.returncode != 0:
            raise RuntimeError(f"making tenants failed: {made.stderr[-2000:]}")
        keys: dict[str, str] = json.loads(made.stdout.strip().splitlines()[-1])
        return keys

    async def say(self, http: httpx.AsyncClient, thread: str | None, text: str) -> tuple[str, Turn]:
        body: dict[str, Any] = {"message": text, **({"thread_id": thread} if thread else {})}
        async with http.stream("POST", "/chat/stream", json=body) as response:
            if response.status_code != 200:
                raise RuntimeError(
                    f"/chat/stream answered {response.status_code}: {await response.aread()!r}"
                )
            async for line in response.aiter_lines():
                if thread is None and line.startswith("data: "):
                    thread = str(json.loads(line[6:])["thread_id"])
        assert thread is not None
        state = (await http.get(f"/threads/{thread}/state")).json()
        values = state.get("values") or {}
        waiting = [item.get("value") or {} for item in state.get("interrupts") or []]
        if not waiting:
            waiting = [
                i.get("value") or {}
                for task in state.get("tasks") or []
                for i in task.get("interrupts") or []
            ]
        reply = values.get("reply") or {}
        text_out = str(reply.get("text") or "")
        if waiting:
            question = waiting[0]
            text_out = "\n".join(
                [
                    str(question.get("question") or ""),
                    json.dumps(question.get("detail") or question.get("options") or ""),
                ]
            )
        target = ((values.get("routing") or {}).get("target")) or {}
        return thread, Turn(text, None if waiting else reply.get("status"), text_out, waiting, target)


async def run_case(service: Service, data_dir: Path, case: dict[str, Any], tenant: str, key: str) -> Outcome:
    outcome = Outcome(case)
    async with httpx.AsyncClient(base_url=service.url, headers={"X-API-Key": key}, timeout=300) as http:
        # Seeded now (as the service would on its first tool call), at the cases' "now".
        endpoints = await start_demo_servers(data_dir, tenant, NOW)
        thread, first = await service.say(http, None, case["turns"][0])
        outcome.turns.append(first)
        calendar = CalDavCalendar(endpoints.caldav)
        for text in case["turns"][1:]:
            thread, turn = await service.say(http, thread, text)
            outcome.turns.append(turn)
        after = await _events(calendar)
    before = await seeded_events(data_dir)
    outcome.routed = first.target.get("kind") == "agent" and first.target.get("name") == AGENT
    judge(outcome, before, after, _sent(data_dir, endpoints.address))
    return outcome


_SEED: set[EventKey] | None = None


async def seeded_events(data_dir: Path) -> set[EventKey]:
    """The seed's calendar, read from a tenant that was only seeded (the same for every tenant: the
    seed is written relative to the same clock)."""
    global _SEED
    if _SEED is None:
        endpoints = await start_demo_servers(data_dir, "eval-seed-only", NOW)
        _SEED = await _events(CalDavCalendar(endpoints.caldav))
    return set(_SEED)


def report(part: str, outcomes: list[Outcome], show_cases: bool) -> dict[str, Any]:
    by_category: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        by_category[outcome.case["category"]].append(outcome)
    in_domain = [o for o in outcomes if o.case["category"] != "unsupported"]
    routed = sum(bool(o.routed) for o in in_domain)
    claimed = sum(o.claimed_not_done for o in outcomes)
    passed = sum(o.passed for o in outcomes)
    print(f"\n== {part}: {len(outcomes)} cases ==")
    if show_cases:
        for outcome in outcomes:
            mark = "ok  " if outcome.passed else "FAIL"
            flag = " CLAIMED-NOT-DONE" if outcome.claimed_not_done else ""
            route = "" if outcome.routed else f" (routed to {outcome.turns[0].target})"
            print(f"{mark} {outcome.case['id']:<7} {outcome.case['category']:<15}{flag}{route}")
            for failure in outcome.failures:
                print(f"       - {failure}")
            if VERBOSE and not outcome.passed:
                for turn in outcome.turns:
                    print(f"         user: {turn.text}\n         reply: {turn.reply[:600]!r}")
    print(f"actions claimed but not done: {claimed} (goal 0)")
    print(
        f"in-domain requests routed to the assistant: {routed}/{len(in_domain)} ({routed / max(1, len(in_domain)):.0%}, goal >= 95%)"
    )
    print(f"cases passed: {passed}/{len(outcomes)} ({passed / max(1, len(outcomes)):.0%})")
    # The assistant's own handling apart from the front door's routing (another component): of the
    # in-domain cases the front door gave the assistant, how many it then got right.
    given = [o for o in in_domain if o.routed]
    good = sum(o.passed for o in given)
    print(
        f"in-domain cases passed when routed to the assistant: {good}/{len(given)} ({good / max(1, len(given)):.0%})"
    )
    for category, items in sorted(by_category.items()):
        good = sum(o.passed for o in items)
        print(f"  {category:<16} {good}/{len(items)}")
    return {"claimed_not_done": claimed, "routed": routed, "in_domain": len(in_domain), "passed": passed}


async def evaluate(service: Service, data_dir: Path, parts: list[str], only: str | None) -> int:
    results = {}
    for part in parts:
        cases = json.loads((HERE / f"{part}.json").read_text())
        if only:
            cases = [c for c in cases if c["id"] in only.split(",")]
        outcomes = []
        # A tenant per case, named for its part (tuning and tuning2 share a first letter).
        tenants = [f"eval-{part}-{index:02d}" for index in range(1, len(cases) + 1)]
        keys = service.new_tenants(tenants)
        for tenant, case in zip(tenants, cases, strict=True):
            try:
                outcome = await run_case(service, data_dir, case, tenant, keys[tenant])
            except Exception as error:  # one broken case is a failed case, not a lost run
                outcome = Outcome(
                    case, turns=[Turn("", "error", "", [], {})], failures=[f"error: {error!r}"[:500]]
                )
            outcomes.append(outcome)
            # Progress as it goes (a held-out case by its number only, never its text or id).
            label = case["id"] if "heldout" not in part else f"{part} #{len(outcomes)}"
            print(f"  {label} {'ok' if outcome.passed else 'FAIL'}", file=sys.stderr, flush=True)
        results[part] = report(part, outcomes, show_cases=("heldout" not in part))
    return 0 if all(r["claimed_not_done"] == 0 for r in results.values()) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--part", choices=[*PARTS, "both"], nargs="+", default=["both"])
    parser.add_argument("--case", help="only these tuning case ids (comma-separated)")
    parser.add_argument(
        "--verbose", action="store_true", help="print the turns of a failed case (not held-out)"
    )
    args = parser.parse_args()
    global VERBOSE
    VERBOSE = args.verbose
    parts = [part for part in PARTS if (HERE / f"{part}.json").exists()] if "both" in args.part else args.part
    with (
        tempfile.TemporaryDirectory(prefix="ma-eval-assistant-") as directory,
        serving(
            directory, {"MASTER_AGENT_NOW": NOW.isoformat()}, workers=1, tenant="demo-assistant"
        ) as running,
    ):
        data_dir = Path(directory)
        try:
            return asyncio.run(evaluate(Service(running.url, running.env), data_dir, parts, args.case))
        finally:
            LocalServers(data_dir).stop()


if __name__ == "__main__":
    exit_on_signals()
    sys.exit(main())
